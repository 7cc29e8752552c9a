"""Backend-agnostic Keras 3 building blocks (keras.ops only; no TensorFlow imports)."""
from trainer_module.layers.attention import MultiHeadAttention
from trainer_module.layers.decoder import TransformerDecoderBlock, causal_mask
from trainer_module.layers.encoder import FeedForward, TransformerEncoderBlock
from trainer_module.layers.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    sinusoidal_table,
)

__all__ = [
    "FeedForward",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "SinusoidalPositionalEncoding",
    "TokenEmbedding",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
    "causal_mask",
    "sinusoidal_table",
]
