"""Pooling a sequence into one vector (keras.ops only)."""

from keras import ops


def masked_mean(values, mask):
    """(B, T, D) values, (B, T) bool mask -> (B, D) mean over the kept positions, in float32
    (a sum over hundreds of positions, whatever the compute dtype)."""
    values = ops.cast(values, "float32")
    mask = ops.cast(mask, "float32")[:, :, None]  # (B, T, 1)
    return ops.sum(values * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)
