"""The pipeline as a DSL file for the TFX CLI (LocalDagRunner).

    tfx pipeline create --engine local --pipeline_path pipeline/local_runner.py
    tfx run create --engine local --pipeline_name imdb-transformer

The CLI runs this file as a script, so its settings come from the environment (all optional):
TFXT_TASK (imdb), TFXT_MODEL, TFXT_DATA, TFXT_OUTPUT (outputs), TFXT_PRESET,
TFXT_TRAIN_STEPS, TFXT_EVAL_STEPS, TFXT_BEAM_MODE (in_memory), TFXT_SCHEMA (a curated
schema), TFXT_SOURCE_LANG / TFXT_TARGET_LANG (translation), TFXT_IMAGE_SIZE (cifar10). The pipeline name is `<task>-<model>`, e.g. imdb-transformer.
"""
import os

from tfx.orchestration.local.local_dag_runner import LocalDagRunner

from pipeline import configs
from pipeline.runner import build_local_pipeline


def _int(name: str):
    value = os.environ.get(name)
    return int(value) if value else None


def pipeline_from_environment():
    pipeline, _ = build_local_pipeline(
        task=os.environ.get("TFXT_TASK", "imdb"),
        model=os.environ.get("TFXT_MODEL") or None,
        data_dir=os.environ.get("TFXT_DATA") or None,
        data_options={"source_lang": os.environ.get("TFXT_SOURCE_LANG") or None,
                      "target_lang": os.environ.get("TFXT_TARGET_LANG") or None,
                      "image_size": os.environ.get("TFXT_IMAGE_SIZE") or None},
        output_dir=os.environ.get("TFXT_OUTPUT", configs.DEFAULT_OUTPUT_DIR),
        preset=os.environ.get("TFXT_PRESET") or None,
        train_steps=_int("TFXT_TRAIN_STEPS"),
        eval_steps=_int("TFXT_EVAL_STEPS"),
        beam_mode=os.environ.get("TFXT_BEAM_MODE", configs.DEFAULT_BEAM_MODE),
        schema_path=os.environ.get("TFXT_SCHEMA") or None,
    )
    return pipeline


if __name__ == "__main__":
    LocalDagRunner().run(pipeline_from_environment())
