"""The Transformer decoder block: causal self-attention, cross-attention, feed-forward."""
import keras
from keras import ops

from trainer_module.layers.attention import MultiHeadAttention
from trainer_module.layers.encoder import FeedForward


def causal_mask(length) -> "keras.KerasTensor":
    """(1, T, T) bool, True where query position i may attend to key position j <= i."""
    rows = ops.arange(length)[:, None]
    cols = ops.arange(length)[None, :]
    return ops.expand_dims(cols <= rows, 0)


class TransformerDecoderBlock(keras.layers.Layer):
    """Causal self-attention, cross-attention over the encoder output, feed-forward; each with a
    residual connection and LayerNorm (post-norm, or pre-norm with `norm_first`).

    Call arguments:
        x: (B, T, D) target-side states. memory: (B, S, D) encoder output.
        memory_mask: bool (B, S), True on real source tokens.

    Returns:
        (x (B, T, D), self-attention weights (B, H, T, T), cross-attention weights (B, H, T, S)).
    """

    def __init__(self, num_heads: int, ff_dim: int, dropout: float = 0.1,
                 norm_first: bool = False, activation: str = "relu",
                 layer_norm_epsilon: float = 1e-6, attention_dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.norm_first = norm_first
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.attention_dropout = attention_dropout

    def build(self, x_shape, memory_shape=None):
        memory_shape = x_shape if memory_shape is None else memory_shape
        d_model = x_shape[-1]
        if d_model % self.num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={self.num_heads}")
        key_dim = d_model // self.num_heads
        self.self_attention = MultiHeadAttention(self.num_heads, key_dim, self.attention_dropout,
                                                 name="self_attention")
        self.self_attention.build(x_shape)
        self.cross_attention = MultiHeadAttention(self.num_heads, key_dim, self.attention_dropout,
                                                  name="cross_attention")
        self.cross_attention.build(x_shape, memory_shape)
        self.feed_forward = FeedForward(self.ff_dim, self.activation, self.dropout,
                                        name="feed_forward")
        self.feed_forward.build(x_shape)
        self.norms = []
        self.dropouts = []
        for name in ("self_attention_norm", "cross_attention_norm", "feed_forward_norm"):
            norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name=name)
            norm.build(x_shape)
            self.norms.append(norm)
            self.dropouts.append(keras.layers.Dropout(self.dropout))

    def _sublayer(self, index, x, function, training):
        """One residual sublayer; `function` maps normalised (or raw) x to (output, weights)."""
        norm, dropout = self.norms[index], self.dropouts[index]
        if self.norm_first:
            out, weights = function(norm(x))
            return x + dropout(out, training=training), weights
        out, weights = function(x)
        return norm(x + dropout(out, training=training)), weights

    def call(self, x, memory, memory_mask=None, training=None):
        self_mask = causal_mask(ops.shape(x)[1])
        cross_mask = None if memory_mask is None else memory_mask[:, None, :]  # (B, 1, S)
        x, self_weights = self._sublayer(
            0, x, lambda h: self.self_attention(h, attention_mask=self_mask, training=training),
            training)
        x, cross_weights = self._sublayer(
            1, x, lambda h: self.cross_attention(h, memory, attention_mask=cross_mask,
                                                 training=training), training)
        x, _ = self._sublayer(2, x, lambda h: (self.feed_forward(h, training=training), None),
                              training)
        return x, self_weights, cross_weights

    def step(self, x, index, self_cache, cross_keys_values, memory_mask=None):
        """One decoding position with cached keys and values (inference only).

        x: (B, 1, D) at position `index`. self_cache: (keys, values) (B, H, L, Dk) of positions
        0 ... L - 1, filled up to index - 1. cross_keys_values: the encoder output's projected
        (keys, values). Returns (x, self_cache with position `index` written in).
        """
        def self_attend(h):
            new_keys, new_values = self.self_attention.project_key_value(h)  # (B, H, 1, Dk)
            keys = ops.slice_update(self_cache[0], (0, 0, index, 0), new_keys)
            values = ops.slice_update(self_cache[1], (0, 0, index, 0), new_values)
            visible = ops.arange(ops.shape(keys)[2]) <= index  # causal: positions <= index
            out, _ = self.self_attention.attend(h, keys, values, visible[None, None, :])
            return out, (keys, values)

        cross_mask = None if memory_mask is None else memory_mask[:, None, :]
        x, self_cache = self._sublayer(0, x, self_attend, training=False)
        x, _ = self._sublayer(1, x, lambda h: self.cross_attention.attend(
            h, *cross_keys_values, attention_mask=cross_mask), training=False)
        x, _ = self._sublayer(2, x, lambda h: (self.feed_forward(h), None), training=False)
        return x, self_cache

    def compute_output_spec(self, x, memory, memory_mask=None, training=None):
        batch, length, source = x.shape[0], x.shape[1], memory.shape[1]
        return (keras.KerasTensor(x.shape, dtype=self.compute_dtype),
                keras.KerasTensor((batch, self.num_heads, length, length), dtype=self.compute_dtype),
                keras.KerasTensor((batch, self.num_heads, length, source), dtype=self.compute_dtype))

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "ff_dim": self.ff_dim,
                "dropout": self.dropout, "norm_first": self.norm_first,
                "activation": self.activation, "layer_norm_epsilon": self.layer_norm_epsilon,
                "attention_dropout": self.attention_dropout}
