"""Token embeddings and positional encodings."""

import math

import keras
import numpy as np
from keras import ops


def sinusoidal_table(max_length: int, d_model: int) -> np.ndarray:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...): (max_length, d_model)."""
    positions = np.arange(max_length, dtype=np.float64)[:, None]
    rates = 1.0 / np.power(10000.0, (2 * (np.arange(d_model) // 2)) / d_model)
    angles = positions * rates[None, :]
    table = np.zeros((max_length, d_model))
    table[:, 0::2] = np.sin(angles[:, 0::2])
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table.astype("float32")


def _positions(table, offset, length):
    """Rows offset ... offset + length - 1 of a (max_length, D) table."""
    if isinstance(offset, int) and offset == 0:
        return table[:length]
    return ops.slice(table, (offset, 0), (length, ops.shape(table)[1]))


class TokenEmbedding(keras.layers.Layer):
    """Token ids (B, T) -> embeddings (B, T, D) scaled by sqrt(D), as in Vaswani et al. 3.4."""

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = scale
        self.embedding = keras.layers.Embedding(vocab_size, d_model, name="embedding")

    def build(self, input_shape):
        self.embedding.build(input_shape)

    def call(self, token_ids):
        x = self.embedding(token_ids)
        return x * ops.cast(math.sqrt(self.d_model), x.dtype) if self.scale else x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.d_model,)

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "d_model": self.d_model,
            "scale": self.scale,
        }


class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Adds the fixed sinusoidal table to (B, T, D) inputs, T <= max_length."""

    def __init__(self, max_length: int, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length

    def build(self, input_shape):
        # A NumPy constant, not a tensor: build may run inside a traced function.
        self.table = sinusoidal_table(self.max_length, input_shape[-1])

    def call(self, x, offset=0):
        """x (B, T, D) holds positions offset ... offset + T - 1 (offset > 0 when decoding)."""
        table = ops.convert_to_tensor(self.table, dtype=x.dtype)
        return x + _positions(table, offset, ops.shape(x)[1])[None]

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length}


class LearnedPositionalEmbedding(keras.layers.Layer):
    """Adds a trained (max_length, D) position table to (B, T, D) inputs."""

    def __init__(self, max_length: int, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length

    def build(self, input_shape):
        self.table = self.add_weight(
            name="position_embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=keras.initializers.RandomNormal(stddev=0.02),
        )

    def call(self, x, offset=0):
        """x (B, T, D) holds positions offset ... offset + T - 1 (offset > 0 when decoding)."""
        return x + ops.cast(_positions(self.table, offset, ops.shape(x)[1]), x.dtype)[None]

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length}


def position_layer(kind: str, max_length: int, name: str) -> keras.layers.Layer:
    """The positional layer a config names: "sinusoidal" (fixed) or "learned"."""
    layers = {"sinusoidal": SinusoidalPositionalEncoding, "learned": LearnedPositionalEmbedding}
    if kind not in layers:
        raise ValueError(f"positional must be one of {sorted(layers)}, not {kind!r}")
    return layers[kind](max_length, name=name)
