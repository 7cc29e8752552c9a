"""Multi-head scaled dot-product attention, written out (Vaswani et al., 2017, section 3.2)."""

import math

import keras
from keras import ops

from trainer_module.layers.dense import Dense
from trainer_module.layers.dropout import Dropout

MASKED_SCORE = -1.0e9  # a masked key's score, before the softmax (in float32)


class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention that returns its output and its attention weights.

    Args:
        num_heads: int. Number of attention heads.
        key_dim: int. Size of each head's query/key/value projection.
        dropout: float. Dropout on the attention weights during training.

    Call arguments:
        query: (B, Tq, D). value: (B, Tk, D), defaults to `query` (self-attention).
        attention_mask: bool, broadcastable to (B, Tq, Tk); True where a query may attend
            to a key. Padding masks are (B, 1, Tk); causal masks (1, Tq, Tk).

    Returns:
        (output (B, Tq, D) in the compute dtype, weights (B, num_heads, Tq, Tk) in float32: the
        scores are masked and normalised in float32 under mixed precision).

    Example:
    >>> mha = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> out, weights = mha(ops.ones((2, 5, 8)))
    >>> tuple(out.shape), tuple(weights.shape)
    ((2, 5, 8), (2, 2, 5, 5))
    """

    def __init__(self, num_heads: int, key_dim: int, dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout

    def build(self, query_shape, value_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        inner = self.num_heads * self.key_dim
        self.query_dense = Dense(inner, name="query")
        self.key_dense = Dense(inner, name="key")
        self.value_dense = Dense(inner, name="value")
        self.output_dense = Dense(query_shape[-1], name="output")
        self.query_dense.build(query_shape)
        self.key_dense.build(value_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build(tuple(query_shape[:-1]) + (inner,))
        self.weights_dropout = Dropout(self.dropout)

    def _split_heads(self, x):
        # (B, T, H*Dk) -> (B, H, T, Dk); a static length needs no shape computation in the
        # graph. (B, H*Dk), one position per row (a decoding step): a reshape alone.
        if len(x.shape) == 2:
            return ops.reshape(x, (-1, self.num_heads, 1, self.key_dim))
        length = x.shape[1] if x.shape[1] is not None else ops.shape(x)[1]
        x = ops.reshape(x, (-1, length, self.num_heads, self.key_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def project_key_value(self, value):
        """(B, Tk, D) -> keys and values (B, H, Tk, Dk): what a decoding cache keeps."""
        return self._split_heads(self.key_dense(value)), self._split_heads(self.value_dense(value))

    def attend(self, query, keys, values, attention_mask=None, training=None):
        """Attention of `query` (B, Tq, D) over projected `keys`/`values` (B, H, Tk, Dk). A
        query (B, D) of one position per row gives an output (B, D), with no transposes."""
        # Scaled by 1/sqrt(Dk) before the product, not after: under float16 (largest value
        # 65,504) the product itself must stay in range.
        q = self._split_heads(self.query_dense(query)) * (1.0 / math.sqrt(self.key_dim))
        scores = ops.matmul(q, ops.transpose(keys, (0, 1, 3, 2)))  # (B, H, Tq, Tk)
        # Masking and the softmax in float32 whatever the compute dtype (mixed precision).
        scores = ops.cast(scores, "float32")
        if attention_mask is not None:
            mask = ops.expand_dims(ops.cast(attention_mask, "bool"), 1)  # (B, 1, Tq, Tk)
            scores = ops.where(mask, scores, MASKED_SCORE)
        weights = ops.softmax(scores, axis=-1)  # float32, returned as they are

        dropped = self.weights_dropout(ops.cast(weights, values.dtype), training=training)
        context = ops.matmul(dropped, values)
        if len(query.shape) == 2:  # (B, H, 1, Dk): the heads of one position, in order
            return self.output_dense(
                ops.reshape(context, (-1, self.num_heads * self.key_dim))
            ), weights
        context = ops.transpose(context, (0, 2, 1, 3))  # (B, Tq, H, Dk)
        length = query.shape[1] if query.shape[1] is not None else ops.shape(context)[1]
        context = ops.reshape(context, (-1, length, self.num_heads * self.key_dim))
        return self.output_dense(context), weights

    def call(self, query, value=None, attention_mask=None, training=None):
        keys, values = self.project_key_value(query if value is None else value)
        return self.attend(query, keys, values, attention_mask, training=training)

    def compute_output_spec(self, query, value=None, attention_mask=None, training=None):
        value = query if value is None else value
        weights_shape = (query.shape[0], self.num_heads, query.shape[1], value.shape[1])
        return (
            keras.KerasTensor(query.shape, dtype=self.compute_dtype),
            keras.KerasTensor(weights_shape, dtype="float32"),
        )

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "dropout": self.dropout,
        }
