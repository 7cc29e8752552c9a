"""One replica of the two-worker training test: runs TFX's Trainer executor as each replica of
a Vertex AI training job does, with its role in TF_CONFIG (also called in-process).

Usage: python -m tests.training.two_worker_trainer WORK_DIR TRAIN_STEPS [EVALUATIONS]

The outputs are laid out as TFX lays out a Trainer's (WORK_DIR/Trainer/model/1, .../model_run/1),
so that the training's backup lands in WORK_DIR/Trainer/backup/ (trainer_module/training/
backup.py).
"""

import json
import os
import sys

from absl import logging
from tfx.components.trainer.executor import GenericExecutor
from tfx.proto import trainer_pb2
from tfx.types import artifact_utils, standard_artifacts
from tfx.utils import proto_utils

from trainer_module.text_encoder import FAMILY


def artifact(kind, uri, **properties):
    result = kind()
    result.uri = uri
    for name, value in properties.items():
        setattr(result, name, value)
    return result


MODEL_DIR = os.path.join("Trainer", "model", "1")
MODEL_RUN_DIR = os.path.join("Trainer", "model_run", "1")
BACKUP_DIR = os.path.join("Trainer", "backup")


OVERRIDES_FILE = "overrides.json"  # in WORK_DIR: the config overrides the transform was made for


def main(
    work_dir: str, train_steps: int, evaluations: int = 1, mixed_precision: str = "auto"
) -> None:
    with open(os.path.join(work_dir, OVERRIDES_FILE)) as f:
        overrides = json.load(f)
    logging.use_absl_handler()
    logging.set_verbosity(logging.INFO)
    inputs = {
        "examples": [
            artifact(
                standard_artifacts.Examples,
                os.path.join(work_dir, "examples"),
                split_names=artifact_utils.encode_split_names(["train", "eval"]),
            )
        ],
        "transform_graph": [
            artifact(standard_artifacts.TransformGraph, os.path.join(work_dir, "transform"))
        ],
    }
    # Every replica is handed the same outputs, as on Vertex AI.
    outputs = {
        "model": [artifact(standard_artifacts.Model, os.path.join(work_dir, MODEL_DIR))],
        "model_run": [artifact(standard_artifacts.ModelRun, os.path.join(work_dir, MODEL_RUN_DIR))],
    }
    exec_properties = {
        "run_fn": FAMILY.run_fn,
        "train_args": proto_utils.proto_to_json(trainer_pb2.TrainArgs(num_steps=train_steps)),
        "eval_args": proto_utils.proto_to_json(trainer_pb2.EvalArgs(num_steps=1)),
        "custom_config": json.dumps(
            {
                "task": "imdb",
                "model": "text_encoder",
                "preset": "tiny",
                "seed": 0,
                "mixed_precision": mixed_precision,
                "overrides": {**overrides, "evaluations": evaluations},
                "epochs": None,
                "time_budget_minutes": None,
            }
        ),
    }
    GenericExecutor().Do(inputs, outputs, exec_properties)


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:]))
