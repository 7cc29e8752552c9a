"""Masked-language pretraining of a text encoder on the task's own training text, before its
supervised phase: BERT's objective (Devlin et al., 2019, 3.1: 15% of the tokens chosen, 80% of
those replaced by a mask id, 10% by a random id, 10% kept, each predicted from the rest) on the
fine-tuning set itself (Krishna et al., ACL 2023, "Downstream Datasets Make Surprisingly Good
Pretraining Corpora"; Gururangan et al., ACL 2020: task-adaptive pretraining).

Only the training split's files are read (the Trainer's train_files): validation reviews never
enter it. Labels are not read. The encoder's weights are trained in place, so the supervised
phase starts from them.
"""

import dataclasses
import math
import time
from typing import Callable, Sequence

import keras
import tensorflow as tf
from absl import logging
from keras import ops

from trainer_module.training.optimizers import adamw
from trainer_module.training.progress import Progress
from trainer_module.training.schedules import WarmupLinearDecay, warmup_steps

TOKEN_IDS = "token_ids"
POSITIONS = "positions"
OBJECTIVES = ("masked", "replaced")
WHAT = {"masked": "masked-token prediction", "replaced": "replaced-token detection"}


@dataclasses.dataclass(frozen=True)
class Masking:
    """Which tokens may be masked and what replaces them.

    mask_id: the id that stands for a masked token (a row of the embedding no word uses).
    random_ids: [low, high): the ids a token chosen for a random replacement may become.
    special_ids: ids never chosen (padding; a [CLS] or [SEP] where the vocabulary has them).
    rate: the share of each sequence's other tokens chosen.
    predictions: the most positions predicted per sequence (BERT's max_predictions_per_seq):
        the output layer runs on these only, not on every position.
    objective: "masked" (masked-token prediction, `mask_tokens`) or "replaced" (replaced-token
        detection, `replace_tokens`: every position is classified, none predicted).
    """

    mask_id: int
    random_ids: tuple
    special_ids: Sequence[int]
    rate: float = 0.15
    predictions: int = 40
    objective: str = "masked"

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, not {self.objective!r}")
        if not 0 < self.rate < 1:
            raise ValueError(f"the masking rate must be between 0 and 1, not {self.rate}")
        low, high = self.random_ids
        if not 0 <= low < high:
            raise ValueError(f"random_ids must be a range [low, high), not {self.random_ids}")


def mask_tokens(token_ids: tf.Tensor, masking: Masking) -> tuple:
    """(B, T) ids -> (masked ids (B, T), positions (B, P), labels (B, P), weights (B, P)).

    In each sequence, round(rate x its eligible tokens) positions (at least one when it has any,
    at most P = min(masking.predictions, T)) are chosen uniformly among the tokens that are not
    special; `labels` are their original ids and `weights` 1.0 (0.0 on the unused slots, whose
    positions and labels mean nothing). Of the chosen, 80% become mask_id, 10% a random id,
    10% stay as they were."""
    ids = tf.convert_to_tensor(token_ids)
    shape = tf.shape(ids)
    slots = min(masking.predictions, int(ids.shape[1]))
    eligible = tf.ones_like(ids, dtype=tf.bool)
    for special in masking.special_ids:
        eligible = tf.logical_and(eligible, tf.not_equal(ids, special))
    scores = tf.where(eligible, tf.random.uniform(shape), -1.0)
    chosen_scores, positions = tf.math.top_k(scores, k=slots)  # distinct positions per row
    counts = tf.reduce_sum(tf.cast(eligible, tf.float32), axis=1)
    wanted = tf.minimum(tf.maximum(tf.round(counts * masking.rate), 1.0), float(slots))
    used = tf.logical_and(
        tf.range(slots, dtype=tf.float32)[None, :] < wanted[:, None], chosen_scores >= 0.0
    )
    labels = tf.gather(ids, positions, batch_dims=1)
    draw = tf.random.uniform(tf.shape(positions))
    random_ids = tf.random.uniform(
        tf.shape(positions), masking.random_ids[0], masking.random_ids[1], dtype=ids.dtype
    )
    replaced = tf.where(
        draw < 0.8,
        tf.cast(masking.mask_id, ids.dtype),
        tf.where(draw < 0.9, random_ids, labels),
    )
    replaced = tf.where(used, replaced, labels)  # unused slots write back what was there
    rows = tf.broadcast_to(tf.range(shape[0])[:, None], tf.shape(positions))
    masked = tf.tensor_scatter_nd_update(ids, tf.stack([rows, positions], axis=-1), replaced)
    weights = tf.cast(used, tf.float32)
    return masked, positions, labels * tf.cast(used, labels.dtype), weights


def replace_tokens(token_ids: tf.Tensor, masking: Masking) -> tuple:
    """(B, T) ids -> (ids with some replaced (B, T), labels (B, T), weights (B, T)): ELECTRA's
    replaced-token detection (Clark et al., 2020) with a fixed sampler in place of its
    generator network. Each token that is not special is replaced with probability
    masking.rate by a word drawn from a Zipf law over the vocabulary's frequency ranks (the
    ids from random_ids[0] up are the most frequent words first, as Transform's vocabulary
    orders them): frequent words are drawn most, so that a replacement is not told by its
    rarity alone. Labels are 1.0 where the id differs from the original (a word drawn as
    itself is no replacement); weights 1.0 on every token that is not special."""
    ids = tf.convert_to_tensor(token_ids)
    eligible = tf.ones_like(ids, dtype=tf.bool)
    for special in masking.special_ids:
        eligible = tf.logical_and(eligible, tf.not_equal(ids, special))
    chosen = tf.logical_and(eligible, tf.random.uniform(tf.shape(ids)) < masking.rate)
    low, high = masking.random_ids
    words = high - low
    # Log-uniform ranks: P(rank r) ~ 1 / (r + 1), r in [0, words).
    ranks = tf.math.floor(tf.exp(tf.random.uniform(tf.shape(ids)) * math.log(words + 1.0))) - 1
    sampled = low + tf.clip_by_value(tf.cast(ranks, ids.dtype), 0, words - 1)
    replaced = tf.where(chosen, sampled, ids)
    return (
        replaced,
        tf.cast(tf.not_equal(replaced, ids), tf.float32),
        tf.cast(eligible, tf.float32),
    )


class ReplacedTokenModel(keras.Model):
    """An encoder's replaced-token detection: each position's hidden state -> one logit (is
    this token a replacement?). Arguments as MaskedLanguageModel's, without the embedding."""

    def __init__(self, encode: Callable, layers: list, offset: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.encode = encode
        self.encoder_layers = list(layers)
        self.offset = offset
        self.detector = keras.layers.Dense(1, dtype="float32", name="rtd_logit")

    def call(self, inputs, training=None):
        hidden = self.encode(inputs[TOKEN_IDS], training=training)[:, self.offset :]  # (B, T, D)
        return self.detector(hidden)  # (B, T, 1) float32 logits: Keras' binary losses reduce
        # the last axis, so that each token keeps its own loss and weight


class MaskedLanguageModel(keras.Model):
    """An encoder's masked-token predictions: the hidden state at each chosen position ->
    dense + GELU + LayerNorm (BERT's transform) -> logits over the embedding's ids, the output
    layer tied to the input embedding (Press and Wolf, 2017) with a bias of its own.

    Args:
        encode: (token ids (B, T), training) -> hidden states (B, T + offset, D), the
            encoder the supervised model uses (its weights are trained in place).
        layers: the layers `encode` runs (what this model trains).
        embeddings: the (ids, D) embedding matrix the output layer is tied to.
        offset: positions `encode` puts before the tokens (1 with a [CLS] vector).
    """

    def __init__(self, encode: Callable, layers: list, embeddings, offset: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.encode = encode
        self.encoder_layers = list(layers)
        self.embeddings = embeddings
        self.offset = offset
        width = int(embeddings.shape[1])
        self.transform = keras.layers.Dense(width, activation="gelu", name="mlm_transform")
        self.norm = keras.layers.LayerNormalization(epsilon=1e-6, name="mlm_norm")
        self.output_bias = self.add_weight(
            name="mlm_output_bias", shape=(int(embeddings.shape[0]),), initializer="zeros"
        )

    def call(self, inputs, training=None):
        hidden = self.encode(inputs[TOKEN_IDS], training=training)  # (B, T', D)
        positions = ops.cast(inputs[POSITIONS], "int32") + self.offset  # (B, P)
        chosen = ops.take_along_axis(hidden, positions[..., None], axis=1)  # (B, P, D)
        chosen = ops.cast(self.norm(self.transform(chosen)), "float32")
        return ops.matmul(chosen, ops.transpose(ops.cast(self.embeddings, "float32"))) + (
            self.output_bias
        )  # (B, P, ids), float32 logits


def masked_batches(batches: tf.data.Dataset, masking: Masking) -> tf.data.Dataset:
    """Batches of (B, T) token ids -> ({token_ids, positions}, labels, weights) for Keras
    (mask_tokens), or for the "replaced" objective ({token_ids}, labels (B, T, 1), weights)
    (replace_tokens)."""

    def masked(ids):
        if masking.objective == "replaced":
            ids, labels, weights = replace_tokens(ids, masking)
            weights *= tf.cast(tf.size(weights), tf.float32) / tf.maximum(
                tf.reduce_sum(weights), 1.0
            )
            return {TOKEN_IDS: ids}, labels[..., None], weights
        ids, positions, labels, weights = mask_tokens(ids, masking)
        # Keras averages the loss over every slot: weights that sum to the slots' number make
        # it the mean over the chosen tokens.
        weights *= tf.cast(tf.size(weights), tf.float32) / tf.maximum(tf.reduce_sum(weights), 1.0)
        return {TOKEN_IDS: ids, POSITIONS: positions}, labels, weights

    return batches.map(masked, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass(frozen=True)
class Pretraining:
    """What a family's pretraining needs: the encoder (`MaskedLanguageModel`'s arguments), the
    masking, and endless batches of the training split's (B, T) token ids."""

    encode: Callable
    layers: list
    embeddings: object
    masking: Masking
    token_batches: Callable[[], tf.data.Dataset]
    offset: int = 0


def steps_for(epochs: float, examples: int, batch_size: int) -> int:
    """Pretraining steps for `epochs` passes over `examples` training texts (0: none)."""
    return math.ceil(epochs * examples / batch_size) if epochs > 0 else 0


def compiled(
    pretraining: Pretraining,
    steps: int,
    learning_rate: float,
    weight_decay: float,
    warmup_fraction: float = 0.1,
) -> keras.Model:
    """The MaskedLanguageModel (or for the "replaced" objective the ReplacedTokenModel) over
    the encoder, compiled to train `steps` batches: AdamW, a linear warmup over
    `warmup_fraction` of the steps, then linear decay to zero, and the masked tokens'
    cross-entropy (the unused slots weigh nothing), or each token's binary cross-entropy."""
    optimizer = adamw(
        WarmupLinearDecay(learning_rate, warmup_steps(warmup_fraction, steps), steps), weight_decay
    )
    model: keras.Model
    if pretraining.masking.objective == "replaced":
        model = ReplacedTokenModel(pretraining.encode, pretraining.layers, pretraining.offset)
        model.compile(
            optimizer=optimizer,
            loss=keras.losses.BinaryCrossentropy(from_logits=True),
            weighted_metrics=[keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)],
        )
        return model
    model = MaskedLanguageModel(
        pretraining.encode, pretraining.layers, pretraining.embeddings, pretraining.offset
    )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    return model


def pretrain(
    pretraining: Pretraining,
    steps: int,
    batch_size: int,
    learning_rate: float,
    weight_decay: float,
) -> dict:
    """Trains the encoder in place for `steps` batches on its objective's loss (`compiled`),
    with its own progress line. Returns what history.json records: steps, seconds, and the
    loss and accuracy over the first and the last tenth of the steps."""
    model = compiled(pretraining, steps, learning_rate, weight_decay)
    losses = LossTrace()
    logging.info("Pretraining: %d steps of %s", steps, WHAT[pretraining.masking.objective])
    started = time.perf_counter()
    model.fit(
        masked_batches(pretraining.token_batches(), pretraining.masking),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[losses, Progress("pretraining", steps, batch_size)],
    )
    seconds = time.perf_counter() - started
    record = {"steps": steps, "seconds": round(seconds, 1), **losses.summary()}
    logging.info("Pretraining done: %s", record)
    return record


class LossTrace(keras.callbacks.Callback):
    """Keeps each step's masked-token loss and accuracy (Keras' running means over the epoch
    are turned back into per-step values) for the first and last tenth of the steps."""

    def __init__(self):
        super().__init__()
        self.loss, self.accuracy = [], []

    def on_train_batch_end(self, batch, logs=None):
        if logs and "loss" in logs:
            self.loss.append(float(logs["loss"]))
            self.accuracy.append(float(logs.get("accuracy", float("nan"))))

    def summary(self) -> dict:
        """Mean loss and accuracy over the first and the last tenth of the steps."""
        steps = len(self.loss)
        if not steps:
            return {}
        tenth = max(1, steps // 10)

        def last(means):  # from the running means at the end and a tenth before it
            before = means[steps - tenth - 1] * (steps - tenth) if steps > tenth else 0.0
            return round((means[-1] * steps - before) / tenth, 4)

        return {
            "first_loss": round(self.loss[tenth - 1], 4),
            "last_loss": last(self.loss),
            "first_accuracy": round(self.accuracy[tenth - 1], 4),
            "last_accuracy": last(self.accuracy),
        }
