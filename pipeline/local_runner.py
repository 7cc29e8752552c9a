"""The pipeline as a DSL file for the TFX CLI (LocalDagRunner).

    tfx pipeline create --engine local --pipeline_path pipeline/local_runner.py
    tfx run create --engine local --pipeline_name imdb-text-encoder

The CLI runs this file as a script, so its settings come from TFXT_* environment variables,
the same options as `tfx-transformers run` (pipeline/options.py): TFXT_TASK, TFXT_MODEL,
TFXT_DATA, TFXT_PRESET, TFXT_SET, TFXT_TRAIN_STEPS, TFXT_BLESSING_THRESHOLD, TFXT_TUNE,
TFXT_REGISTRY, TFXT_OUTPUT, TFXT_SOURCE_LANG, TFXT_BERT_PRESET, ... The pipeline name is
`<task>-<model family>`, e.g. imdb-text-encoder.
"""

from tfx.orchestration.local.local_dag_runner import LocalDagRunner

from pipeline.options import PipelineOptions
from pipeline.runner import build_local_pipeline


def pipeline_from_environment():
    pipeline, _ = build_local_pipeline(PipelineOptions.from_environment())
    return pipeline


if __name__ == "__main__":
    from trainer_module import quiet_shutdown

    quiet_shutdown.install()  # TensorFlow's finalizers stay quiet when the run exits
    LocalDagRunner().run(pipeline_from_environment())
