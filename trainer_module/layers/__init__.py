"""Backend-agnostic Keras 3 building blocks every model family shares (keras.ops only; no
TensorFlow imports)."""

from trainer_module.layers.attention import MultiHeadAttention
from trainer_module.layers.block import EncoderStack, FeedForward, TransformerBlock, causal_mask
from trainer_module.layers.dense import Dense, few_rows_matmul, flat_matmul
from trainer_module.layers.dropout import Dropout, TokenDropout
from trainer_module.layers.ngram import NgramLogit, PathCombination, WideAndDeep
from trainer_module.layers.pooling import masked_mean
from trainer_module.layers.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    position_layer,
    sinusoidal_table,
)

__all__ = [
    "Dense",
    "Dropout",
    "EncoderStack",
    "FeedForward",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "NgramLogit",
    "PathCombination",
    "SinusoidalPositionalEncoding",
    "TokenDropout",
    "TokenEmbedding",
    "TransformerBlock",
    "WideAndDeep",
    "causal_mask",
    "few_rows_matmul",
    "flat_matmul",
    "masked_mean",
    "position_layer",
    "sinusoidal_table",
]
