"""The project's own artifact types, in one light module (it imports nothing but TFX's types).

Each TYPE_NAME is also an import path: a Kubeflow v2 job names a custom type by the title of
its `instanceSchema`, and TFX's container entrypoint imports that title as `module.Class`
before any executor runs (kubeflow_v2_entrypoint_utils._parse_raw_artifact). The package
`tfx_transformers` re-exports these classes under those names.
"""

from tfx import types


class RegisteredModel(types.Artifact):
    """Where the model was registered: custom properties registry, name, version, uri, alias
    (`registered` = 0 when nothing was: the model was not pushed)."""

    TYPE_NAME = "tfx_transformers.RegisteredModel"


class RunReport(types.Artifact):
    """A folder holding the report page (index.html); `report_path` names it."""

    TYPE_NAME = "tfx_transformers.RunReport"


class Predictions(types.Artifact):
    """JSON lines files (predictions-*.jsonl), one answer per scored input."""

    TYPE_NAME = "tfx_transformers.Predictions"


class CostEstimate(types.Artifact):
    """A run's projected cost before Transform: custom property `estimate` (JSON: examples,
    steps, projected minutes and their basis; components/cost_estimate)."""

    TYPE_NAME = "tfx_transformers.CostEstimate"


ALL = (RegisteredModel, RunReport, Predictions, CostEstimate)
