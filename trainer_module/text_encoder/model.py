"""A from-scratch Transformer encoder classifier (token ids in, class logits out)."""
import keras
from keras import ops

from trainer_module.layers import TokenDropout, TokenEmbedding, TransformerBlock, position_layer
from trainer_module.text_encoder.config import PAD_ID, TextEncoderConfig


class TextEncoderClassifier(keras.Model):
    """Embedding -> positions -> N encoder blocks -> pooling -> classification head.

    Args:
        config: TextEncoderConfig. The vocabulary (`embedding_rows` ids), the encoder's shape
            and regularisation, the pooling ("mean" over real tokens, or a learned [CLS]
            vector prepended to the sequence) and the number of classes.

    Call arguments:
        token_ids: int (B, T), T <= config.max_length; 0 pads.

    Returns:
        Logits (B, num_classes).

    Example:
    >>> from trainer_module.text_encoder.config import PRESETS
    >>> model = TextEncoderClassifier(PRESETS["tiny"].replace(vocab_size=10))
    >>> tuple(model(ops.convert_to_tensor([[3, 4, 0, 0, 0]])).shape)
    (1, 2)
    """

    def __init__(self, config: TextEncoderConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.token_embedding = TokenEmbedding(config.embedding_rows, config.d_model,
                                              name="token_embedding")
        self.token_dropout = TokenDropout(config.token_dropout)
        positions = config.max_length + (1 if config.pooling == "cls" else 0)
        self.position_encoding = position_layer(config.positional, positions,
                                                name="position_encoding")
        self.embedding_dropout = keras.layers.Dropout(config.dropout)
        self.blocks = [
            TransformerBlock(config.num_heads, config.ff_dim, config.dropout, config.norm_first,
                             attention_dropout=config.attention_dropout, name=f"encoder_{i}")
            for i in range(config.num_layers)
        ]
        # Pre-norm stacks leave the residual stream unnormalised: normalise once at the end.
        self.final_norm = (keras.layers.LayerNormalization(epsilon=1e-6)
                           if config.norm_first else None)
        self.head_dropout = keras.layers.Dropout(config.dropout)
        # Logits in float32 whatever the compute dtype (the Keras mixed-precision guide's advice).
        self.head = keras.layers.Dense(config.num_classes, dtype="float32", name="head")

    def build(self, input_shape):
        if self.config.pooling == "cls":
            self.cls_embedding = self.add_weight(
                name="cls_embedding", shape=(1, 1, self.config.d_model),
                initializer=keras.initializers.RandomNormal(stddev=0.02))
        super().build(input_shape)

    def encode(self, token_ids, training=None):
        """(B, T) ids -> (hidden (B, T', D), padding mask (B, T'), per-layer attention weights).

        T' = T + 1 with [CLS] pooling (position 0 is the [CLS] vector).
        """
        padding_mask = ops.not_equal(token_ids, PAD_ID)  # (B, T)
        x = self.token_dropout(self.token_embedding(token_ids), training=training)  # (B, T, D)
        if self.config.pooling == "cls":
            batch = ops.shape(x)[0]
            cls = ops.broadcast_to(ops.cast(self.cls_embedding, x.dtype),
                                   (batch, 1, self.config.d_model))
            x = ops.concatenate([cls, x], axis=1)  # (B, T+1, D)
            padding_mask = ops.concatenate(
                [ops.ones((batch, 1), dtype="bool"), padding_mask], axis=1)
        x = self.embedding_dropout(self.position_encoding(x), training=training)
        attention = []
        for block in self.blocks:
            x, weights = block(x, padding_mask=padding_mask, training=training)
            attention.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, padding_mask, attention

    def call(self, token_ids, training=None):
        hidden, padding_mask, _ = self.encode(token_ids, training=training)
        if self.config.pooling == "cls":
            pooled = ops.cast(hidden[:, 0, :], "float32")  # (B, D)
        else:
            pooled = masked_mean(hidden, padding_mask)
        return self.head(self.head_dropout(pooled, training=training))  # (B, C) logits

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(TextEncoderConfig.from_dict(config.pop("config")), **config)


def masked_mean(values, mask):
    """(B, T, D) values, (B, T) bool mask -> (B, D) mean over the kept positions, in float32
    (a sum over hundreds of positions, whatever the compute dtype)."""
    values = ops.cast(values, "float32")
    mask = ops.cast(mask, "float32")[:, :, None]  # (B, T, 1)
    return ops.sum(values * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)
