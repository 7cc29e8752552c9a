"""The Transformer block: self-attention, optional cross-attention, feed-forward (keras.ops only).

One constructor for every block: an encoder block is `TransformerBlock(...)`, a decoder block
`TransformerBlock(..., causal=True, cross_attention=True)`; one encoder stack (`EncoderStack`).
"""

import keras
from keras import ops

from trainer_module.layers.attention import MultiHeadAttention
from trainer_module.layers.dense import Dense
from trainer_module.layers.dropout import Dropout


def causal_mask(length) -> "keras.KerasTensor":
    """(1, T, T) bool, True where query position i may attend to key position j <= i."""
    rows = ops.arange(length)[:, None]
    cols = ops.arange(length)[None, :]
    return ops.expand_dims(cols <= rows, 0)


class FeedForward(keras.layers.Layer):
    """Position-wise Dense(ff_dim, activation) -> Dropout -> Dense(D)."""

    def __init__(self, ff_dim: int, activation: str = "relu", dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.ff_dim = ff_dim
        self.activation = activation
        self.dropout = dropout

    def build(self, input_shape):
        self.inner = Dense(self.ff_dim, activation=self.activation, name="inner")
        self.outer = Dense(input_shape[-1], name="outer")
        self.inner.build(input_shape)
        self.outer.build(tuple(input_shape[:-1]) + (self.ff_dim,))
        self.inner_dropout = Dropout(self.dropout)

    def call(self, x, training=None):
        return self.outer(self.inner_dropout(self.inner(x), training=training))

    def get_config(self):
        return {
            **super().get_config(),
            "ff_dim": self.ff_dim,
            "activation": self.activation,
            "dropout": self.dropout,
        }


class TransformerBlock(keras.layers.Layer):
    """Self-attention, then (with `cross_attention`) attention over an encoder's output, then a
    feed-forward network; each sublayer with a residual connection and LayerNorm.

    Post-norm (the original paper): x = LN(x + Drop(f(x))). Pre-norm (stable when deep):
    x = x + Drop(f(LN(x))). `dropout` applies to sublayer outputs and inside the feed-forward
    network; `attention_dropout` to the attention weights (costly on a CPU: B*H*T*T draws).

    Args:
        num_heads, ff_dim, dropout, norm_first, activation, layer_norm_epsilon,
            attention_dropout: as above.
        causal: bool. Position i attends to positions <= i only (a decoder).
        cross_attention: bool. Adds attention over `memory` (a decoder).

    Call arguments:
        x: (B, T, D). padding_mask: bool (B, T), True on real tokens of x.
        memory: (B, S, D) encoder output, with cross_attention. memory_mask: bool (B, S).

    Returns:
        (x (B, T, D), self-attention weights (B, H, T, T)) and, with cross_attention, the
        cross-attention weights (B, H, T, S) as a third element.

    Example:
    >>> block = TransformerBlock(num_heads=2, ff_dim=16, causal=True, cross_attention=True)
    >>> x, self_w, cross_w = block(ops.ones((2, 3, 8)), memory=ops.ones((2, 5, 8)))
    >>> tuple(x.shape), tuple(self_w.shape), tuple(cross_w.shape)
    ((2, 3, 8), (2, 2, 3, 3), (2, 2, 3, 5))
    """

    def __init__(
        self,
        num_heads: int,
        ff_dim: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
        layer_norm_epsilon: float = 1e-6,
        attention_dropout: float = 0.0,
        causal: bool = False,
        cross_attention: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.norm_first = norm_first
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.attention_dropout = attention_dropout
        self.causal = causal
        self.cross_attention = cross_attention

    def build(self, x_shape, memory_shape=None):
        d_model = x_shape[-1]
        if d_model % self.num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={self.num_heads}")
        key_dim = d_model // self.num_heads
        # One (attention or feed-forward, LayerNorm, Dropout) per sublayer, in call order.
        self.self_attention = MultiHeadAttention(
            self.num_heads, key_dim, self.attention_dropout, name="self_attention"
        )
        self.self_attention.build(x_shape)
        names = ["self_attention_norm"]
        if self.cross_attention:
            self.memory_attention = MultiHeadAttention(
                self.num_heads, key_dim, self.attention_dropout, name="cross_attention"
            )
            self.memory_attention.build(x_shape, x_shape if memory_shape is None else memory_shape)
            names.append("cross_attention_norm")
        self.feed_forward = FeedForward(
            self.ff_dim, self.activation, self.dropout, name="feed_forward"
        )
        self.feed_forward.build(x_shape)
        names.append("feed_forward_norm")
        self.norms, self.dropouts = [], []
        for name in names:
            norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name=name)
            norm.build(x_shape)
            self.norms.append(norm)
            self.dropouts.append(Dropout(self.dropout))

    def _sublayer(self, index, x, function, training):
        """One residual sublayer; `function` maps normalised (or raw) x to (output, extra)."""
        norm, dropout = self.norms[index], self.dropouts[index]
        if self.norm_first:
            out, extra = function(norm(x))
            return x + dropout(out, training=training), extra
        out, extra = function(x)
        return norm(x + dropout(out, training=training)), extra

    def _self_mask(self, x, padding_mask):
        mask = None if padding_mask is None else padding_mask[:, None, :]  # (B, 1, T)
        if self.causal:
            causal = causal_mask(ops.shape(x)[1])  # (1, T, T)
            mask = causal if mask is None else ops.logical_and(mask, causal)
        return mask

    def call(self, x, padding_mask=None, memory=None, memory_mask=None, training=None):
        self_mask = self._self_mask(x, padding_mask)
        x, self_weights = self._sublayer(
            0,
            x,
            lambda h: self.self_attention(h, attention_mask=self_mask, training=training),
            training,
        )
        outputs = [self_weights]
        if self.cross_attention:
            cross_mask = None if memory_mask is None else memory_mask[:, None, :]  # (B, 1, S)
            x, cross_weights = self._sublayer(
                1,
                x,
                lambda h: self.memory_attention(
                    h, memory, attention_mask=cross_mask, training=training
                ),
                training,
            )
            outputs.append(cross_weights)
        x, _ = self._sublayer(
            len(self.norms) - 1,
            x,
            lambda h: (self.feed_forward(h, training=training), None),
            training,
        )
        return (x, *outputs)

    def step(self, x, index, self_cache, cross_keys_values, memory_mask=None, shift=False):
        """One decoding position with cached keys and values (a causal block, inference only).

        x: (B, D) at position `index` (one position per row: no reshapes or transposes of a
        sequence axis among the step's many small ops). self_cache: (keys, values)
        (B, H, T, Dk), the newest position last: positions 0 ... index - 1 (T = index), or with
        `shift` T fixed slots holding them in the last `index` (for loops whose shapes are
        fixed). cross_keys_values: the encoder output's projected (keys, values). Returns
        (x, self_cache with position `index` appended): T + 1 positions, or with `shift` T,
        the oldest slot dropped.
        """

        def self_attend(h):
            new_keys, new_values = self.self_attention.project_key_value(h)  # (B, H, 1, Dk)
            keys, values = self_cache
            if shift:
                keys, values = keys[:, :, 1:], values[:, :, 1:]
            # Appended by a copy: writing in place (ops.where over a position mask, or
            # ops.slice_update, which TensorFlow compiles as a separate XLA cluster per call)
            # cost more than the rest of a step at batch 64. A growing cache copies only the
            # positions decoded so far, and needs no mask.
            keys = ops.concatenate([keys, new_keys], axis=2)
            values = ops.concatenate([values, new_values], axis=2)
            visible = None
            if shift:
                length = ops.shape(keys)[2]
                visible = (ops.arange(length) >= length - 1 - index)[None, None, :]  # filled
            out, _ = self.self_attention.attend(h, keys, values, visible)
            return out, (keys, values)

        x, self_cache = self._sublayer(0, x, self_attend, training=False)
        if self.cross_attention:
            cross_mask = None if memory_mask is None else memory_mask[:, None, :]
            x, _ = self._sublayer(
                1,
                x,
                lambda h: self.memory_attention.attend(
                    h, cross_keys_values[0], cross_keys_values[1], attention_mask=cross_mask
                ),
                training=False,
            )
        x, _ = self._sublayer(
            len(self.norms) - 1, x, lambda h: (self.feed_forward(h), None), training=False
        )
        return x, self_cache

    def compute_output_spec(
        self, x, padding_mask=None, memory=None, memory_mask=None, training=None
    ):
        batch, length = x.shape[0], x.shape[1]
        specs = [
            keras.KerasTensor(x.shape, dtype=self.compute_dtype),
            keras.KerasTensor((batch, self.num_heads, length, length), dtype="float32"),
        ]
        if self.cross_attention:
            specs.append(
                keras.KerasTensor((batch, self.num_heads, length, memory.shape[1]), dtype="float32")
            )
        return tuple(specs)

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "attention_dropout": self.attention_dropout,
            "causal": self.causal,
            "cross_attention": self.cross_attention,
        }


class EncoderStack(keras.layers.Layer):
    """`num_layers` encoder blocks (TransformerBlock: self-attention, feed-forward) over one
    sequence; a pre-norm stack, which leaves the residual stream unnormalised, ends with one
    LayerNorm. The encoder of every family built here (text encoder, translator, ViT).

    Args:
        num_layers: int. Blocks, named `encoder_0`, `encoder_1`, ...
        num_heads, ff_dim, dropout, norm_first, activation, attention_dropout: each block's
            (TransformerBlock).

    Call arguments:
        x: (B, T, D). padding_mask: bool (B, T), True on real tokens; None: all are.

    Returns:
        (x (B, T, D), [self-attention weights (B, H, T, T) of each block]).

    Example:
    >>> stack = EncoderStack(2, num_heads=2, ff_dim=16, norm_first=True)
    >>> x, weights = stack(ops.ones((2, 3, 8)))
    >>> tuple(x.shape), len(weights), tuple(weights[0].shape)
    ((2, 3, 8), 2, (2, 2, 3, 3))
    """

    def __init__(
        self,
        num_layers: int,
        num_heads: int,
        ff_dim: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
        attention_dropout: float = 0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_layers, self.num_heads, self.ff_dim = num_layers, num_heads, ff_dim
        self.dropout, self.norm_first, self.activation = dropout, norm_first, activation
        self.attention_dropout = attention_dropout
        self.blocks = [
            TransformerBlock(
                num_heads,
                ff_dim,
                dropout,
                norm_first,
                activation=activation,
                attention_dropout=attention_dropout,
                name=f"encoder_{i}",
            )
            for i in range(num_layers)
        ]
        self.final_norm = (
            keras.layers.LayerNormalization(epsilon=1e-6, name="final_norm") if norm_first else None
        )

    def call(self, x, padding_mask=None, training=None):
        attention = []
        for block in self.blocks:
            x, weights = block(x, padding_mask=padding_mask, training=training)
            attention.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, attention

    def get_config(self):
        return {
            **super().get_config(),
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "activation": self.activation,
            "attention_dropout": self.attention_dropout,
        }
