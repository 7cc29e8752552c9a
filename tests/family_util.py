"""Runs a model family's real Trainer entry point (its run_fn: strategy, precision, training,
export) on rows held in memory, as the Trainer component would run it after Transform: the
rows go through the family's preprocessing_fn with tf.Transform's Beam implementation, are
written as TFRecords, and read back through TFXIO. Seconds per family on the tiny presets."""

import dataclasses
import importlib
import os
from typing import Any, List, Mapping, Optional, Sequence

import keras
import tensorflow as tf
import tensorflow_transform as tft
from tfx.components.trainer.fn_args_utils import DataAccessor, FnArgs
from tfx_bsl.public import tfxio

from lab.local_transform import analyze_and_transform
from trainer_module.families import get_family
from trainer_module.layers.ngram import classifier_of


def import_path(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def _dataset_factory(file_pattern, options, schema):
    return tfxio.TFExampleRecord(file_pattern=file_pattern, schema=schema).TensorFlowDataset(
        options
    )


def write_examples(rows: Sequence[Mapping], output: tft.TFTransformOutput, path: str) -> str:
    coder = tft.coders.ExampleProtoCoder(output.transformed_metadata.schema)
    with tf.io.TFRecordWriter(path) as writer:
        for row in rows:
            writer.write(coder.encode(row))
    return path


def split_file(workdir: str, split: str) -> str:
    """A file in the folder TFX gives a split of an Examples artifact: `Split-<split>/`."""
    folder = os.path.join(workdir, f"Split-{split}")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "data.tfrecord")


@dataclasses.dataclass
class FamilyRun:
    """What a run left: the model that trained (`trained`, with its optimizer) and the one
    exported (`model`), the transform output, the export and the logs."""

    trained: keras.Model
    output: tft.TFTransformOutput
    transformed: List[dict]
    fn_args: FnArgs
    transform_config: dict

    @property
    def model(self) -> keras.Model:
        return classifier_of(self.trained)

    @property
    def export_dir(self) -> str:
        return self.fn_args.serving_model_dir


def run_family(
    name: str,
    rows: Sequence[Mapping],
    feature_spec: Mapping,
    workdir: str,
    *,
    preset: str = "tiny",
    overrides: Optional[Mapping[str, Any]] = None,
    train_steps: Optional[int] = 4,
    epochs: Optional[float] = None,
    eval_steps: int = 1,
    eval_rows=None,
    mixed_precision: str = "off",
    hyperparameters=None,
    transform_of: Optional[FamilyRun] = None,
    unlabeled_rows: Sequence[Mapping] = (),
) -> FamilyRun:
    """`transform_of`: a run of the same rows whose Transform output to reuse (its transform
    config must be this one's) instead of running tf.Transform again. `unlabeled_rows`:
    transformed rows written as Transform writes the unlabelled split (`Split-unlabeled/`),
    after the training split in train_files, as the Trainer gets them when a run pretrains."""
    family = get_family(name)
    config = family.config(preset, overrides)
    transform_config = family.transform_config(config)
    if transform_of is None:
        transform_dir = os.path.join(workdir, "transform")
        transformed, output = analyze_and_transform(
            list(rows) + list(eval_rows or []),
            import_path(family.preprocessing_fn),
            transform_config,
            transform_dir,
            feature_spec,
        )
    else:
        if transform_of.transform_config != transform_config:
            raise ValueError(
                f"{transform_of.transform_config} was transformed; this run needs "
                f"{transform_config}"
            )
        transform_dir = transform_of.fn_args.transform_output
        transformed, output = transform_of.transformed, transform_of.output
        os.makedirs(workdir, exist_ok=True)
    train_rows = transformed[: len(rows)]
    evaluation = transformed[len(rows) :] or train_rows
    fn_args = FnArgs(
        working_dir=os.path.join(workdir, "working"),
        train_files=[
            write_examples(train_rows, output, os.path.join(workdir, "train.tfrecord")),
            *(
                [write_examples(unlabeled_rows, output, split_file(workdir, "unlabeled"))]
                if unlabeled_rows
                else []
            ),
        ],
        eval_files=[write_examples(evaluation, output, os.path.join(workdir, "eval.tfrecord"))],
        train_steps=None if epochs else train_steps,
        eval_steps=eval_steps,
        transform_graph_path=transform_dir,
        transform_output=transform_dir,
        serving_model_dir=os.path.join(workdir, "serving_model"),
        model_run_dir=os.path.join(workdir, "model_run"),
        data_accessor=DataAccessor(
            tf_dataset_factory=_dataset_factory, record_batch_factory=None, data_view_decode_fn=None
        ),
        hyperparameters=hyperparameters,
        custom_config={
            "task": "test",
            "model": name,
            "preset": preset,
            "overrides": dict(overrides or {}),
            "seed": 0,
            "mixed_precision": mixed_precision,
            "epochs": epochs,
            "time_budget_minutes": None,
        },
    )
    model = import_path(family.run_fn)(fn_args)
    return FamilyRun(model, output, transformed, fn_args, transform_config)
