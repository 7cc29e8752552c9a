"""A from-scratch Transformer encoder classifier (token ids in, class logits out), with an
optional wide path over hashed word n-grams (NBSVM) whose logit is combined with the encoder's."""

import math
from typing import TYPE_CHECKING, Optional

import keras
import numpy as np
from keras import ops

from trainer_module.layers import (
    Dropout,
    EncoderStack,
    TokenDropout,
    TokenEmbedding,
    masked_mean,
    position_layer,
)
from trainer_module.layers.configured import ConfiguredModel
from trainer_module.layers.ngram import WideAndDeep, training_model
from trainer_module.text_encoder.config import PAD_ID, TextEncoderConfig
from trainer_module.training.optimizers import adamw
from trainer_module.training.schedules import warmup_steps, warmup_then

if TYPE_CHECKING:
    from trainer_module.training.pretraining import Pretraining


class TextEncoderClassifier(WideAndDeep, ConfiguredModel):
    """Embedding -> positions -> N encoder blocks -> pooling -> classification head; with the
    wide path, its logit and the head's combined (layers/ngram.py: WideAndDeep).

    Args:
        config: TextEncoderConfig. The vocabulary (`embedding_rows` ids), the encoder's shape
            and regularisation, the pooling ("mean" over real tokens, or a learned [CLS]
            vector prepended to the sequence) and the number of classes.

    Call arguments:
        inputs: int token ids (B, T), T <= config.max_length, 0 pads; with
            config.ngram_buckets, a dict of those (`token_ids`) and `ngram_ids` (B, M), each
            review's distinct hashed uni- and bigrams, 0 pads (preprocessing.py).

    Returns:
        Logits (B, num_classes): the head's, or with the wide path the combination's
        (`path_logits`: each path's, WideAndDeep).

    Example:
    >>> from trainer_module.text_encoder.config import PRESETS
    >>> model = TextEncoderClassifier(PRESETS["tiny"].replace(vocab_size=10, ngram_buckets=0))
    >>> tuple(model(ops.convert_to_tensor([[3, 4, 0, 0, 0]])).shape)
    (1, 2)
    """

    config_class = TextEncoderConfig

    def __init__(self, config: TextEncoderConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.token_embedding = TokenEmbedding(
            config.embedding_rows, config.d_model, name="token_embedding"
        )
        self.token_dropout = TokenDropout(config.token_dropout)
        positions = config.max_length + (1 if config.pooling == "cls" else 0)
        self.position_encoding = position_layer(
            config.positional, positions, name="position_encoding"
        )
        self.embedding_dropout = Dropout(config.dropout)
        self.encoder = EncoderStack(
            config.num_layers,
            config.num_heads,
            config.ff_dim,
            config.dropout,
            config.norm_first,
            attention_dropout=config.attention_dropout,
            name="encoder",
        )
        self.head_dropout = Dropout(config.dropout)
        # Logits in float32 whatever the compute dtype (the Keras mixed-precision guide's advice).
        self.head = keras.layers.Dense(config.num_classes, dtype="float32", name="head")
        self.init_wide_path(config.ngram_buckets, config.num_classes)

    def build(self, input_shape):
        if self.config.pooling == "cls":
            self.cls_embedding = self.add_weight(
                name="cls_embedding",
                shape=(1, 1, self.config.d_model),
                initializer=keras.initializers.RandomNormal(stddev=0.02),
            )
        super().build(input_shape)

    def encode(self, token_ids, training=None):
        """(B, T) ids -> (hidden (B, T', D), padding mask (B, T'), per-layer attention weights).

        T' = T + 1 with [CLS] pooling (position 0 is the [CLS] vector).
        """
        padding_mask = ops.not_equal(token_ids, PAD_ID)  # (B, T)
        x = self.token_dropout(self.token_embedding(token_ids), training=training)  # (B, T, D)
        if self.config.pooling == "cls":
            batch = ops.shape(x)[0]
            cls = ops.broadcast_to(
                ops.cast(self.cls_embedding, x.dtype), (batch, 1, self.config.d_model)
            )
            x = ops.concatenate([cls, x], axis=1)  # (B, T+1, D)
            padding_mask = ops.concatenate(
                [ops.ones((batch, 1), dtype="bool"), padding_mask], axis=1
            )
        x = self.embedding_dropout(self.position_encoding(x), training=training)
        x, attention = self.encoder(x, padding_mask=padding_mask, training=training)
        return x, padding_mask, attention

    def deep_logits(self, inputs, training=None):
        token_ids = inputs["token_ids"] if isinstance(inputs, dict) else inputs
        hidden, padding_mask, _ = self.encode(token_ids, training=training)
        if self.config.pooling == "cls":
            pooled = ops.cast(hidden[:, 0, :], "float32")  # (B, D)
        else:
            pooled = masked_mean(hidden, padding_mask)
        return self.head(self.head_dropout(pooled, training=training))  # (B, C)


def build_model(
    config: TextEncoderConfig, train_steps: int, ngram_ratios: Optional[np.ndarray] = None
) -> keras.Model:
    """The classifier's training model (layers/ngram.py: training_model; with the wide path
    its PathTraining, which trains the encoder on its own loss and reports each path), built
    and compiled with its training recipe: AdamW after a linear warmup with config.decay over
    train_steps, cross-entropy on one-hot labels. With config.ngram_buckets, `ngram_ratios`
    (Transform's, preprocessing.ngrams.ngram_ratios) set the wide path's ratios; the wide path
    itself is trained apart (training/wide_path.py)."""
    classifier = TextEncoderClassifier(config)
    if config.ngram_buckets and ngram_ratios is None:
        raise ValueError("ngram_buckets needs Transform's n-gram ratios")
    if classifier.ngram_logit is not None:
        classifier.ngram_logit.trainable = False
    model = training_model(classifier)
    warmup = warmup_steps(config.warmup_fraction, train_steps)
    schedule = warmup_then(config.decay, config.peak_learning_rate, warmup, train_steps)
    model.compile(
        optimizer=adamw(schedule, config.weight_decay, config.ema_momentum),
        loss=keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=config.label_smoothing
        ),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    model(example_inputs(config))  # build the weights
    if classifier.ngram_logit is not None and ngram_ratios is not None:
        classifier.ngram_logit.set_ratios(ngram_ratios)
    return model


def pretraining(model: TextEncoderClassifier, token_batches) -> "Pretraining":
    """What masked-token pretraining of `model`'s encoder needs (training/pretraining.py):
    its embedding, positions and encoder blocks, the mask id after the vocabulary (padding is
    never masked; a random replacement is a word or the out-of-vocabulary id), and
    `token_batches()`, endless batches of (B, T) token ids."""
    # Pretraining's input pipeline is TensorFlow's; the model above is any backend's.
    from trainer_module.training.pretraining import Masking, Pretraining

    config = model.config
    return Pretraining(
        encode=lambda ids, training=None: model.encode(ids, training=training)[0],
        layers=[
            model.token_embedding,
            model.token_dropout,
            model.position_encoding,
            model.embedding_dropout,
            model.encoder,
        ],
        embeddings=model.token_embedding.embedding.embeddings,
        masking=Masking(
            mask_id=config.mask_id,
            random_ids=(PAD_ID + 1, config.mask_id),
            special_ids=(PAD_ID,),
            rate=config.mask_rate,
            predictions=max(1, math.ceil(config.max_length * config.mask_rate)),
            objective=config.pretrain_objective,
        ),
        token_batches=token_batches,
        offset=1 if config.pooling == "cls" else 0,
    )


def example_inputs(config: TextEncoderConfig, batch_size: int = 1):
    """Zero inputs of the shape the model takes (padding only)."""
    token_ids = ops.zeros((batch_size, config.max_length), dtype="int32")
    if not config.ngram_buckets:
        return token_ids
    return {
        "token_ids": token_ids,
        "ngram_ids": ops.zeros((batch_size, config.max_ngrams), dtype="int32"),
    }
