"""Compiles the translation pipeline for Vertex AI Pipelines / Kubeflow Pipelines
(KubeflowV2DagRunner).

    python kubeflow/translation_runner.py        # writes kubeflow/build/<pipeline>.json
    tfx pipeline create --engine vertex --pipeline_path kubeflow/translation_runner.py

Settings come from the environment: see docs/kubeflow.md.
"""

from pipeline.kubeflow_runner import compile_task

if __name__ == "__main__":
    print(compile_task("translation"))
