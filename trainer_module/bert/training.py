"""The BERT classifier's run over Transform's output (prepare) and its fine-tuning in two phases
(fit_phases); the Trainer's entry point: training/run_fn.py fits and exports what prepare
returns (a pretrained backbone has no search space: no Tuner)."""

import collections
import dataclasses
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from trainer_module.bert import FAMILY
from trainer_module.bert.config import BertConfig
from trainer_module.bert.model import build_classifier, pretraining
from trainer_module.bert.preprocessing import TOKEN_IDS, VOCABULARY_NAME
from trainer_module.bert.serving import bert_inputs, export, trim_padding
from trainer_module.layers.ngram import classifier_of, training_model
from trainer_module.training import backup
from trainer_module.training.history import Fitted, LogEvaluations, ema_callbacks
from trainer_module.training.inputs import TrainerRun, start_run
from trainer_module.training.optimizers import adamw
from trainer_module.training.progress import Progress
from trainer_module.training.run_fn import trainer_entry_point
from trainer_module.training.schedules import WarmupLinearDecay, warmup_steps
from trainer_module.training.wide_path import TextClassifierPrepared


def phases(config: BertConfig, train_steps: int) -> list:
    """(name, steps, learning rate or schedule, validation passes) of the phases that train:
    "head" (config.head_fraction of the steps, no validation), then "full"."""
    head_steps = int(train_steps * config.head_fraction)
    full_steps = train_steps - head_steps
    schedule = WarmupLinearDecay(
        config.peak_learning_rate, warmup_steps(config.warmup_fraction, full_steps), full_steps
    )
    return [
        (name, steps, rate, evaluations)
        for name, steps, rate, evaluations in (
            ("head", head_steps, config.head_learning_rate, 0),
            ("full", full_steps, schedule, max(1, min(config.evaluations, full_steps))),
        )
        if steps > 0
    ]


def compile_phase(model, config: BertConfig, name: str, learning_rate) -> None:
    """The model set to train phase `name` (BertClassifier.train_phase), compiled for it; phase
    "full" keeps the average of its weights with config.ema_momentum and decays the learning
    rate down the blocks with config.layer_decay."""
    classifier = classifier_of(model)
    classifier.train_phase(name)
    full = name == "full"
    model.compile(
        optimizer=adamw(
            learning_rate,
            config.weight_decay,
            config.ema_momentum if full else 0.0,
            scales=classifier.learning_rate_scales(config.layer_decay) if full else None,
        ),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
        jit_compile=config.jit_compile,
    )


@dataclasses.dataclass(frozen=True)
class BertPrepared(TextClassifierPrepared):
    """BERT's: length-grouped training batches (config.length_multiple), a model compiled per
    phase (fit_phases)."""

    token_ids = TOKEN_IDS

    def build(self, config: BertConfig, train_steps: int) -> keras.Model:
        """The classifier's training model (with the wide path: BERT on its own loss, each
        path reported), compiled per phase (fit_phases)."""
        classifier = build_classifier(config, self.ngram_ratios)
        vocabulary = self.tf_transform_output.vocabulary_size_by_name(VOCABULARY_NAME)
        if vocabulary > classifier.backbone.vocabulary_size:
            raise ValueError(
                f"the tokenizer's vocabulary has {vocabulary} pieces, more than the "
                f"backbone's {classifier.backbone.vocabulary_size} embeddings: "
                f"{config.backbone_preset} pairs a vocabulary with another model"
            )
        return training_model(classifier)

    def ready_to_train(self, model) -> None:
        # Most steps are the full phase's.
        compile_phase(model, self.config, "full", self.config.peak_learning_rate)

    def pretraining(self, model):
        path = self.tf_transform_output.vocabulary_file_by_name(VOCABULARY_NAME)
        with tf.io.gfile.GFile(path) as f:
            vocabulary = [line.rstrip("\n") for line in f]
        return pretraining(self.served(model), vocabulary, self.pretraining_batches)

    def fit(self, model, run, before_training=None) -> Fitted:
        """The phases (fit_phases), after `before_training` (task-adaptive pretraining) unless
        a phase resumes a backup, whose weights win over it."""
        pretrained = None
        if before_training is not None:
            resumed = [
                name
                for name, *_ in phases(self.config, run.train_steps)
                if (restore := backup.callback(run, phase=name)) and restore.finished_intervals()
            ]
            if resumed:
                pretrained = {"skipped": f"resumed from the backup of phase {resumed[-1]}"}
                logging.info("Not pretraining: %s", pretrained["skipped"])
            else:
                pretrained = before_training()
        fitted = fit_phases(model, self.config, self.train, self.evaluation, run)
        return dataclasses.replace(fitted, pretraining=pretrained)

    def describe(self, model) -> dict:
        return {
            **super().describe(model),
            "padded_lengths": padded_lengths(self.datasets(False, 1), self.config),
        }

    def export(self, model, serving_model_dir) -> None:
        export(
            model,
            self.tf_transform_output,
            serving_model_dir,
            self.config.length_multiple,
            self.class_names,
        )


def prepare(run: TrainerRun) -> BertPrepared:
    config, tf_transform_output, run = start_run(run, FAMILY)
    logging.info("BERT classifier config %s", config)
    prepared = BertPrepared.create(run, config, tf_transform_output, bert_inputs)
    if not config.length_multiple:
        return prepared
    return dataclasses.replace(
        prepared,
        train=grouped_by_length(prepared.train, config),
        evaluation=prepared.evaluation.map(
            lambda x, y: (trim_padding(x, config.length_multiple), y)
        ),
    )


def review_pieces(inputs) -> tf.Tensor:
    """The model's inputs -> (...) each review's pieces, [CLS] and [SEP] included."""
    return tf.reduce_sum(inputs["padding_mask"], axis=-1)


def grouped_by_length(batches: tf.data.Dataset, config: BertConfig) -> tf.data.Dataset:
    """Batches of (inputs, labels) -> batches of config.batch_size reviews from one bucket of
    config.length_multiple pieces (1-64, 65-128, ...: tf.data's bucket_by_sequence_length, in
    the order they come), each cut to its bucket's end (trim_padding). A review waits in its
    bucket until the batch is full, so the last batches of a finite dataset may be smaller."""
    boundaries = list(
        range(config.length_multiple + 1, config.sequence_length + 1, config.length_multiple)
    )
    return (
        batches.unbatch()
        .bucket_by_sequence_length(
            element_length_func=lambda x, y: review_pieces(x),
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[config.batch_size] * (len(boundaries) + 1),
        )
        .map(
            lambda x, y: (trim_padding(x, config.length_multiple), y),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .prefetch(tf.data.AUTOTUNE)
    )


def padded_lengths(batches, config: BertConfig) -> dict:
    """{padded length: share of the training batches}: the lengths that group_by_length pads
    the training reviews to (config.sequence_length for each without length_multiple), counted
    over one pass of `batches`, for the benchmarks' FLOP count."""
    multiple = config.length_multiple or config.sequence_length
    counts: collections.Counter = collections.Counter()
    for inputs, _ in batches:
        pieces = review_pieces(inputs).numpy()
        counts.update(np.minimum(-(-pieces // multiple) * multiple, config.sequence_length))
    total = sum(counts.values()) or 1
    return {int(length): round(n / total, 4) for length, n in sorted(counts.items())}


def fit_phases(model, config: BertConfig, train, evaluation, run: TrainerRun) -> Fitted:
    """The phases (`phases`), each compiled with its own optimizer, backed up after each
    validation pass (a finished phase restores as done: training/backup.py)."""
    history: dict[str, list] = {}
    started, resumed_from_step = time.perf_counter(), 0
    for name, steps, learning_rate, evaluations in phases(config, run.train_steps):
        compile_phase(model, config, name, learning_rate)
        intervals = max(1, evaluations)  # Keras "epochs": a backup after each
        steps_per_interval = math.ceil(steps / intervals)
        logging.info(
            "Phase %s: %d steps, %d trainable weights", name, steps, len(model.trainable_weights)
        )
        restore = backup.callback(run, phase=name)
        done = restore.finished_intervals() * steps_per_interval if restore else 0
        callbacks = [
            keras.callbacks.TensorBoard(log_dir=os.path.join(run.model_run_dir, name)),
            LogEvaluations(intervals),
            Progress(
                f"BERT phase {name}",
                steps_per_interval * intervals,
                config.batch_size,
                first_step=done,
            ),
        ]
        if restore is not None:
            callbacks.insert(0, restore)
        validation_steps = max(1, run.eval_steps or 1)
        callbacks[:0] = ema_callbacks(model, evaluation, validation_steps)  # phase "full"'s
        result = model.fit(
            backup.continued(train, restore, steps_per_interval),
            steps_per_epoch=steps_per_interval,
            epochs=intervals,
            validation_data=evaluation if evaluations else None,
            validation_steps=validation_steps,
            callbacks=callbacks,
            verbose=0,
        )
        resumed_from_step += restore.resumed_from_step if restore else 0
        for key, values in result.history.items():
            history.setdefault(key, []).extend(float(v) for v in values)
    return Fitted(history, time.perf_counter() - started, resumed_from_step)


# The TFX Trainer's entry point (FAMILY.run_fn).
run_fn = trainer_entry_point(prepare)
