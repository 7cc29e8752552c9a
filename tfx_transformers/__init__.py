"""The import names of the project's artifact types (components/artifact_types.py).

A compiled Kubeflow v2 / Vertex AI job carries a custom artifact type as its schema title,
`tfx_transformers.RegisteredModel`, and TFX's container entrypoint imports that title to
rebuild the artifact. This package is what it imports: it ships in the project's wheel and in
the pipeline image.
"""

from components.artifact_types import CostEstimate, Predictions, RegisteredModel, RunReport

__all__ = ["CostEstimate", "Predictions", "RegisteredModel", "RunReport"]
