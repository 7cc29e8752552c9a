"""The encoder-decoder translator's run over Transform's output (prepare), and the Trainer's
and the Tuner's entry points: training/run_fn.py fits and exports what prepare returns."""

import dataclasses

import tensorflow as tf
import tensorflow_transform as tft
from absl import logging
from tfx_bsl.public import tfxio

from trainer_module.training.inputs import Prepared, TrainerRun, start_run, without_autotuning
from trainer_module.training.run_fn import trainer_entry_point, tuner_entry_point
from trainer_module.translator import FAMILY
from trainer_module.translator.config import (
    BATCH_LENGTH_BOUNDARIES,
    DECODER_INPUT_IDS,
    LENGTH_MULTIPLE,
    SOURCE_IDS,
    TARGET_IDS,
)
from trainer_module.translator.model import build_model
from trainer_module.translator.preprocessing import vocabulary_sizes
from trainer_module.translator.serving import export


def trim_to_longest(ids: tf.Tensor, *more: tf.Tensor):
    """Drops the all-padding columns at the end of a batch (rounded up to LENGTH_MULTIPLE), so
    short sentences do not pay for the fixed padded length. The tensors share one length."""
    tensors = (ids, *more)
    used = tf.reduce_max(
        [tf.reduce_max(tf.reduce_sum(tf.cast(t != 0, tf.int32), axis=-1)) for t in tensors]
    )
    rounded = (used + LENGTH_MULTIPLE - 1) // LENGTH_MULTIPLE * LENGTH_MULTIPLE
    return tuple(t[:, : tf.minimum(tf.shape(t)[1], rounded)] for t in tensors)


def make_dataset(
    run: TrainerRun,
    file_pattern,
    tf_transform_output: tft.TFTransformOutput,
    batch_size: int,
    shuffle: bool,
) -> tf.data.Dataset:
    """Batches of ({source_ids, decoder_input_ids}, target_ids), trimmed, repeated; training
    batches (`shuffle`) are also bucketed by length, validation ones not autotuned."""
    dataset = run.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(
            batch_size=batch_size,
            label_key=TARGET_IDS,
            shuffle=shuffle,
            shuffle_seed=0 if shuffle else None,
        ),
        tf_transform_output.transformed_metadata.schema,
    )
    if shuffle:
        dataset = dataset.unbatch().bucket_by_sequence_length(
            element_length_func=lambda x, targets: tf.maximum(
                tf.math.count_nonzero(x[SOURCE_IDS], dtype=tf.int32),
                tf.math.count_nonzero(targets, dtype=tf.int32),
            ),
            bucket_boundaries=list(BATCH_LENGTH_BOUNDARIES),
            bucket_batch_sizes=[batch_size] * (len(BATCH_LENGTH_BOUNDARIES) + 1),
        )

    def to_model_inputs(x, targets):
        # One length for both sides: few distinct shapes, so few XLA compilations.
        source, decoder_inputs, targets = trim_to_longest(
            x[SOURCE_IDS], x[DECODER_INPUT_IDS], targets
        )
        return {SOURCE_IDS: source, DECODER_INPUT_IDS: decoder_inputs}, targets

    dataset = dataset.map(to_model_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE
    )
    return dataset if shuffle else without_autotuning(dataset)


@dataclasses.dataclass(frozen=True)
class TranslatorPrepared(Prepared):
    objective = "val_token_accuracy"

    def build(self, config, train_steps):
        return build_model(config, train_steps)

    @property
    def average_last(self) -> int:
        return self.config.average_last

    def export(self, model, serving_model_dir):
        export(model, self.tf_transform_output, serving_model_dir)


def prepare(run: TrainerRun) -> TranslatorPrepared:
    config, tf_transform_output, run = start_run(run, FAMILY)
    config = config.replace(**vocabulary_sizes(tf_transform_output))
    logging.info("Translator config %s", config)
    return TranslatorPrepared(
        run=run,
        config=config,
        tf_transform_output=tf_transform_output,
        train=make_dataset(run, run.train_files, tf_transform_output, config.batch_size, True),
        evaluation=make_dataset(run, run.eval_files, tf_transform_output, config.batch_size, False),
    )


# The TFX Trainer's and Tuner's entry points (FAMILY.run_fn, FAMILY.tuner_fn).
run_fn = trainer_entry_point(prepare)
tuner_fn = tuner_entry_point(prepare, FAMILY.search_space)
