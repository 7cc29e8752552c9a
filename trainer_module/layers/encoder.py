"""The Transformer encoder block: self-attention and a position-wise feed-forward network."""
import keras

from trainer_module.layers.attention import MultiHeadAttention


class FeedForward(keras.layers.Layer):
    """Position-wise Dense(ff_dim, activation) -> Dropout -> Dense(D)."""

    def __init__(self, ff_dim: int, activation: str = "relu", dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.ff_dim = ff_dim
        self.activation = activation
        self.dropout = dropout

    def build(self, input_shape):
        self.inner = keras.layers.Dense(self.ff_dim, activation=self.activation, name="inner")
        self.outer = keras.layers.Dense(input_shape[-1], name="outer")
        self.inner.build(input_shape)
        self.outer.build(tuple(input_shape[:-1]) + (self.ff_dim,))
        self.inner_dropout = keras.layers.Dropout(self.dropout)

    def call(self, x, training=None):
        return self.outer(self.inner_dropout(self.inner(x), training=training))

    def get_config(self):
        return {**super().get_config(), "ff_dim": self.ff_dim,
                "activation": self.activation, "dropout": self.dropout}


class TransformerEncoderBlock(keras.layers.Layer):
    """Self-attention + feed-forward, each with a residual connection and LayerNorm.

    Post-norm (the original paper): x = LN(x + Drop(Attn(x))); x = LN(x + Drop(FF(x))).
    Pre-norm (more stable when deep): x = x + Drop(Attn(LN(x))); x = x + Drop(FF(LN(x))).

    `dropout` applies to the sublayer outputs and inside the feed-forward network;
    `attention_dropout` to the attention weights (costly on CPU: B*H*T*T random draws).

    Call arguments:
        x: (B, T, D). padding_mask: bool (B, T), True on real tokens.

    Returns:
        (x (B, T, D), attention weights (B, H, T, T)).
    """

    def __init__(self, num_heads: int, ff_dim: int, dropout: float = 0.1,
                 norm_first: bool = False, activation: str = "relu",
                 layer_norm_epsilon: float = 1e-6, attention_dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.norm_first = norm_first
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon

    def build(self, input_shape):
        d_model = input_shape[-1]
        if d_model % self.num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={self.num_heads}")
        self.attention = MultiHeadAttention(self.num_heads, d_model // self.num_heads,
                                            dropout=self.attention_dropout,
                                            name="self_attention")
        self.attention.build(input_shape)
        self.feed_forward = FeedForward(self.ff_dim, self.activation, self.dropout,
                                        name="feed_forward")
        self.feed_forward.build(input_shape)
        self.attention_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon)
        self.feed_forward_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon)
        self.attention_norm.build(input_shape)
        self.feed_forward_norm.build(input_shape)
        self.attention_output_dropout = keras.layers.Dropout(self.dropout)
        self.feed_forward_output_dropout = keras.layers.Dropout(self.dropout)

    def call(self, x, padding_mask=None, training=None):
        mask = None if padding_mask is None else padding_mask[:, None, :]  # (B, 1, T)
        if self.norm_first:
            attended, weights = self.attention(self.attention_norm(x), attention_mask=mask,
                                               training=training)
            x = x + self.attention_output_dropout(attended, training=training)
            ff = self.feed_forward(self.feed_forward_norm(x), training=training)
            x = x + self.feed_forward_output_dropout(ff, training=training)
        else:
            attended, weights = self.attention(x, attention_mask=mask, training=training)
            x = self.attention_norm(x + self.attention_output_dropout(attended, training=training))
            ff = self.feed_forward(x, training=training)
            x = self.feed_forward_norm(x + self.feed_forward_output_dropout(ff, training=training))
        return x, weights

    def compute_output_spec(self, x, padding_mask=None, training=None):
        weights_shape = (x.shape[0], self.num_heads, x.shape[1], x.shape[1])
        return (keras.KerasTensor(x.shape, dtype=self.compute_dtype),
                keras.KerasTensor(weights_shape, dtype=self.compute_dtype))

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
        }
