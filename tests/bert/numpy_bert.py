"""BERT's forward pass in NumPy, from a checkpoint's weights by their Transformers names (Devlin
et al., 2019; the layout of Transformers' BertModel): the reference the ported backbone is
checked against. Written from the paper and the checkpoint format, not from KerasHub."""

import math

import numpy as np


def _gelu(x):  # exact, erf-based: Transformers' "gelu"
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _layer_norm(x, scale, offset, eps):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * scale + offset


def _linear(x, weights, prefix):  # torch.nn.Linear: y = x W^T + b, W (out, in)
    return x @ weights[prefix + ".weight"].T + weights[prefix + ".bias"]


def bert_forward(weights: dict, config: dict, token_ids, segment_ids, padding_mask):
    """(B, T) int arrays -> (sequence output (B, T, H), pooled output (B, H)) in float64;
    `weights` named as BertModel saves them (no prefix, LayerNorm weight/bias)."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]
    batch, length = token_ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][token_ids]
        + w["embeddings.position_embeddings.weight"][np.arange(length)][None]
        + w["embeddings.token_type_embeddings.weight"][segment_ids]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    hidden = x.shape[-1]
    size = hidden // heads
    # Padded keys get a large negative score before the softmax.
    bias = np.where(padding_mask[:, None, None, :] > 0, 0.0, -1e9)  # (B, 1, 1, T)
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def split(y):  # (B, T, H) -> (B, heads, T, size)
            return y.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        q, k, v = (
            split(_linear(x, w, f"{p}.attention.self.{n}")) for n in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attention = scores / scores.sum(-1, keepdims=True)
        context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        x = _layer_norm(
            x + _linear(context, w, f"{p}.attention.output.dense"),
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            eps,
        )
        inner = _gelu(_linear(x, w, f"{p}.intermediate.dense"))
        x = _layer_norm(
            x + _linear(inner, w, f"{p}.output.dense"),
            w[f"{p}.output.LayerNorm.weight"],
            w[f"{p}.output.LayerNorm.bias"],
            eps,
        )
    pooled = np.tanh(_linear(x[:, 0], w, "pooler.dense"))
    return x, pooled
