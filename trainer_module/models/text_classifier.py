"""A from-scratch Transformer encoder classifier (token ids in, class logits out)."""
import keras
from keras import ops

from trainer_module.layers import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    TransformerEncoderBlock,
)
from trainer_module.models.presets import TextEncoderConfig

PAD_ID = 0  # tf.Transform pads with 0; real token ids start at 1


class TransformerClassifier(keras.Model):
    """Embedding -> positions -> N encoder blocks -> pooling -> classification head.

    Args:
        vocab_size: int. Embedding rows, including padding id 0 and the OOV bucket.
        max_length: int. Longest input (positions table size).
        d_model, num_heads, ff_dim, num_layers, dropout, norm_first, attention_dropout:
            the encoder's shape and regularisation (see TransformerEncoderBlock).
        positional: "sinusoidal" or "learned".
        pooling: "mean" (masked mean over real tokens) or "cls" (a learned [CLS] vector
            prepended to the sequence; its final state feeds the head).
        num_classes: int. Width of the logits.

    Example:
    >>> model = TransformerClassifier(vocab_size=10, max_length=5, d_model=8, num_heads=2,
    ...                               ff_dim=16, num_layers=1)
    >>> tuple(model(ops.convert_to_tensor([[3, 4, 0, 0, 0]])).shape)
    (1, 2)
    """

    def __init__(self, vocab_size: int, max_length: int, d_model: int = 64, num_heads: int = 4,
                 ff_dim: int = 128, num_layers: int = 2, dropout: float = 0.1,
                 norm_first: bool = False, positional: str = "sinusoidal",
                 pooling: str = "mean", num_classes: int = 2, attention_dropout: float = 0.0,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.max_length = max_length
        self.d_model = d_model
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.norm_first = norm_first
        self.positional = positional
        self.pooling = pooling
        self.num_classes = num_classes
        self.attention_dropout = attention_dropout

        self.token_embedding = TokenEmbedding(vocab_size, d_model, name="token_embedding")
        positions = max_length + (1 if pooling == "cls" else 0)
        position_layer = (SinusoidalPositionalEncoding if positional == "sinusoidal"
                          else LearnedPositionalEmbedding)
        self.position_encoding = position_layer(positions, name="position_encoding")
        self.embedding_dropout = keras.layers.Dropout(dropout)
        self.blocks = [
            TransformerEncoderBlock(num_heads, ff_dim, dropout, norm_first,
                                    attention_dropout=attention_dropout, name=f"encoder_{i}")
            for i in range(num_layers)
        ]
        # Pre-norm stacks leave the residual stream unnormalised: normalise once at the end.
        self.final_norm = keras.layers.LayerNormalization(epsilon=1e-6) if norm_first else None
        self.head_dropout = keras.layers.Dropout(dropout)
        self.head = keras.layers.Dense(num_classes, name="head")

    @classmethod
    def from_preset_config(cls, config: TextEncoderConfig, vocab_size: int) -> "TransformerClassifier":
        """Builds the model for `config` over a vocabulary of `vocab_size` ids (padding included)."""
        return cls(vocab_size=vocab_size, max_length=config.max_length, d_model=config.d_model,
                   num_heads=config.num_heads, ff_dim=config.ff_dim,
                   num_layers=config.num_layers, dropout=config.dropout,
                   norm_first=config.norm_first, positional=config.positional,
                   pooling=config.pooling, num_classes=config.num_classes,
                   attention_dropout=config.attention_dropout)

    def build(self, input_shape):
        if self.pooling == "cls":
            self.cls_embedding = self.add_weight(
                name="cls_embedding", shape=(1, 1, self.d_model),
                initializer=keras.initializers.RandomNormal(stddev=0.02))
        super().build(input_shape)

    def encode(self, token_ids, training=None):
        """(B, T) ids -> (hidden (B, T', D), padding mask (B, T'), per-layer attention weights).

        T' = T + 1 with [CLS] pooling (position 0 is the [CLS] vector).
        """
        padding_mask = ops.not_equal(token_ids, PAD_ID)  # (B, T)
        x = self.token_embedding(token_ids)  # (B, T, D)
        if self.pooling == "cls":
            batch = ops.shape(x)[0]
            cls = ops.broadcast_to(ops.cast(self.cls_embedding, x.dtype), (batch, 1, self.d_model))
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
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]  # (B, D)
        else:
            mask = ops.cast(padding_mask, hidden.dtype)[:, :, None]  # (B, T, 1)
            pooled = ops.sum(hidden * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)
        return self.head(self.head_dropout(pooled, training=training))  # (B, C) logits

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "max_length": self.max_length,
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "num_layers": self.num_layers,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "positional": self.positional,
            "pooling": self.pooling,
            "num_classes": self.num_classes,
            "attention_dropout": self.attention_dropout,
        }
