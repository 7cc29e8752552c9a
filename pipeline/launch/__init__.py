"""`tfx-transformers launch`: a compiled Vertex AI / Kubeflow Pipelines job run on this
machine, task by task, through TFX's own container entrypoints (launcher.py)."""
