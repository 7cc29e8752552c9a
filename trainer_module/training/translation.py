"""Trains the encoder-decoder Transformer on Transform's output and exports the translator."""
import time

import keras
import tensorflow as tf
import tensorflow_transform as tft
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx_bsl.public import tfxio

from trainer_module import features
from trainer_module.models.translator import TransformerTranslator
from trainer_module.models.translator_presets import TranslatorConfig, get_preset
from trainer_module.preprocessing.translation import (SOURCE_VOCABULARY, TARGET_VOCABULARY,
                                                      vocabulary_tokens)
from trainer_module.serving.translator import export_translator
from trainer_module.training.history import fit_with_evaluations, write_history
from trainer_module.training.inputs import Prepared, start_run
from trainer_module.training.optimizers import adamw
from trainer_module.training.schedules import WarmupInverseSqrt
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy, MaskedTokenAccuracy

LENGTH_MULTIPLE = 4  # batches are trimmed to their longest sentence, rounded up to this
# Training batches group sentences of similar length (tokens, the longer side), so a batch pads
# to about its own length instead of the longest sentence among 128 random ones.
BATCH_LENGTH_BOUNDARIES = (8, 12, 16, 20, 24, 32)


def trim_to_longest(ids: tf.Tensor, *more: tf.Tensor):
    """Drops the all-padding columns at the end of a batch (rounded up to LENGTH_MULTIPLE), so
    short sentences do not pay for the fixed padded length. The tensors share one length."""
    tensors = (ids, *more)
    used = tf.reduce_max([tf.reduce_max(tf.reduce_sum(tf.cast(t != 0, tf.int32), axis=-1))
                          for t in tensors])
    rounded = (used + LENGTH_MULTIPLE - 1) // LENGTH_MULTIPLE * LENGTH_MULTIPLE
    return tuple(t[:, :tf.minimum(tf.shape(t)[1], rounded)] for t in tensors)


def make_dataset(fn_args: FnArgs, file_pattern, tf_transform_output: tft.TFTransformOutput,
                 batch_size: int, shuffle: bool) -> tf.data.Dataset:
    """Batches of ({source_ids, decoder_input_ids}, target_ids), trimmed, repeated; training
    batches (`shuffle`) are also bucketed by length."""
    dataset = fn_args.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(batch_size=batch_size, label_key=features.TARGET_IDS,
                                       shuffle=shuffle, shuffle_seed=0 if shuffle else None),
        tf_transform_output.transformed_metadata.schema,
    )
    if shuffle:
        dataset = dataset.unbatch().bucket_by_sequence_length(
            element_length_func=lambda x, targets: tf.maximum(
                tf.math.count_nonzero(x[features.SOURCE_IDS], dtype=tf.int32),
                tf.math.count_nonzero(targets, dtype=tf.int32)),
            bucket_boundaries=list(BATCH_LENGTH_BOUNDARIES),
            bucket_batch_sizes=[batch_size] * (len(BATCH_LENGTH_BOUNDARIES) + 1))

    def to_model_inputs(x, targets):
        # One length for both sides: few distinct shapes, so few XLA compilations.
        source, decoder_inputs, targets = trim_to_longest(
            x[features.SOURCE_IDS], x[features.DECODER_INPUT_IDS], targets)
        return {features.SOURCE_IDS: source, features.DECODER_INPUT_IDS: decoder_inputs}, targets

    return dataset.map(to_model_inputs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)


def build_model(config: TranslatorConfig, source_rows: int, target_rows: int,
                train_steps: int) -> keras.Model:
    model = TransformerTranslator.from_preset_config(config, source_rows, target_rows)
    warmup = min(config.warmup_steps, max(1, train_steps // 4))
    model.compile(
        optimizer=adamw(WarmupInverseSqrt(config.peak_learning_rate, warmup), config.weight_decay),
        loss=MaskedSequenceCrossEntropy(config.label_smoothing),
        metrics=[MaskedTokenAccuracy()],
    )
    ids = keras.ops.ones((1, 2), dtype="int32")
    model({features.SOURCE_IDS: ids, features.DECODER_INPUT_IDS: ids})  # build the weights
    return model


def prepare(fn_args: FnArgs) -> Prepared:
    config, tf_transform_output = start_run(fn_args, get_preset, "small")
    source_rows = len(vocabulary_tokens(tf_transform_output, SOURCE_VOCABULARY))
    target_rows = len(vocabulary_tokens(tf_transform_output, TARGET_VOCABULARY))
    logging.info("Translator config %s; %d source and %d target ids", config, source_rows,
                 target_rows)
    train = make_dataset(fn_args, fn_args.train_files, tf_transform_output, config.batch_size, True)
    evaluation = make_dataset(fn_args, fn_args.eval_files, tf_transform_output,
                              config.batch_size, False)
    return Prepared(config, tf_transform_output, train, evaluation,
                    build=lambda c: build_model(c, source_rows, target_rows, fn_args.train_steps),
                    objective="val_token_accuracy")


def train_and_export(fn_args: FnArgs) -> keras.Model:
    run = prepare(fn_args)
    config, tf_transform_output = run.config, run.tf_transform_output
    model = run.build(config)
    started = time.time()
    history = fit_with_evaluations(model, run.train, run.evaluation, fn_args, config.evaluations)
    write_history(fn_args.model_run_dir, config.to_dict(), history.history,
                  source_vocab_rows=len(vocabulary_tokens(tf_transform_output, SOURCE_VOCABULARY)),
                  target_vocab_rows=len(vocabulary_tokens(tf_transform_output, TARGET_VOCABULARY)),
                  train_steps=fn_args.train_steps, fit_seconds=round(time.time() - started, 1))
    export_translator(model, tf_transform_output, fn_args.serving_model_dir,
                      max_decode_length=config.max_decode_length, beam_width=config.beam_width)
    return model
