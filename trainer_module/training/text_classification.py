"""Trains the from-scratch Transformer classifier on Transform's output and exports it."""
import json
import math
import os

import keras
import tensorflow as tf
import tensorflow_transform as tft
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx_bsl.public import tfxio

from trainer_module import features
from trainer_module.models.presets import TextEncoderConfig, get_preset
from trainer_module.models.text_classifier import TransformerClassifier
from trainer_module.preprocessing.text import embedding_rows
from trainer_module.serving.text_classifier import export_text_classifier
from trainer_module.training.schedules import WarmupInverseSqrt

HISTORY_FILE = "history.json"  # per-evaluation metrics, beside the TensorBoard logs


def make_dataset(fn_args: FnArgs, file_pattern, tf_transform_output: tft.TFTransformOutput,
                 config: TextEncoderConfig, shuffle: bool) -> tf.data.Dataset:
    """Batches of (token_ids (B, T), one-hot labels (B, C)), repeated forever."""
    dataset = fn_args.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(batch_size=config.batch_size,
                                       label_key=features.TRANSFORMED_LABEL,
                                       shuffle=shuffle, shuffle_seed=0 if shuffle else None),
        tf_transform_output.transformed_metadata.schema,
    )
    return dataset.map(
        lambda x, y: (x[features.TOKEN_IDS],
                      tf.one_hot(tf.reshape(y, [-1]), config.num_classes)),
        num_parallel_calls=tf.data.AUTOTUNE,
    ).prefetch(tf.data.AUTOTUNE)


class LogEvaluations(keras.callbacks.Callback):
    """Logs each evaluation's metrics (to the run log, not to the CLI's stdout)."""

    def __init__(self, evaluations: int):
        super().__init__()
        self.evaluations = evaluations

    def on_epoch_end(self, epoch, logs=None):
        metrics = ", ".join(f"{k} {v:.4f}" for k, v in sorted((logs or {}).items())
                            if k != "learning_rate")
        logging.info("Evaluation %d/%d: %s", epoch + 1, self.evaluations, metrics)


def build_model(config: TextEncoderConfig, vocab_rows: int, train_steps: int) -> keras.Model:
    model = TransformerClassifier.from_preset_config(config, vocab_rows)
    # Short runs (tests, the embedded corpus) still reach the peak rate: warm up for at most a
    # quarter of the steps.
    warmup = min(config.warmup_steps, max(1, train_steps // 4))
    optimizer = keras.optimizers.AdamW(
        learning_rate=WarmupInverseSqrt(config.peak_learning_rate, warmup),
        weight_decay=config.weight_decay, clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(from_logits=True,
                                                  label_smoothing=config.label_smoothing),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    model(keras.ops.zeros((1, config.max_length), dtype="int32"))  # build the weights
    return model


def train_and_export(fn_args: FnArgs) -> None:
    custom = fn_args.custom_config
    config = get_preset(custom.get("preset", "small"), custom.get("overrides"))
    keras.utils.set_random_seed(int(custom.get("seed", 0)))
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
    vocab_rows = embedding_rows(tf_transform_output)
    logging.info("Text classifier config %s, %d embedding rows", config, vocab_rows)

    train = make_dataset(fn_args, fn_args.train_files, tf_transform_output, config, shuffle=True)
    evaluation = make_dataset(fn_args, fn_args.eval_files, tf_transform_output, config,
                              shuffle=False)
    model = build_model(config, vocab_rows, fn_args.train_steps)
    evaluations = max(1, min(config.evaluations, fn_args.train_steps))
    history = model.fit(
        train,
        steps_per_epoch=math.ceil(fn_args.train_steps / evaluations),
        epochs=evaluations,
        validation_data=evaluation,
        validation_steps=max(1, fn_args.eval_steps or 1),
        callbacks=[keras.callbacks.TensorBoard(log_dir=fn_args.model_run_dir),
                   LogEvaluations(evaluations)],
        verbose=0,
    )
    tf.io.gfile.makedirs(fn_args.model_run_dir)
    with tf.io.gfile.GFile(os.path.join(fn_args.model_run_dir, HISTORY_FILE), "w") as f:
        json.dump({"config": config.to_dict(), "vocab_rows": vocab_rows,
                   "history": {k: [float(v) for v in vs] for k, vs in history.history.items()}},
                  f, indent=1)
    export_text_classifier(model, tf_transform_output, fn_args.serving_model_dir)
