"""Batch augmentation in keras.ops, shared by the TensorFlow trainer and runs under JAX: mixup
(Zhang et al., 2018) and CutMix (Yun et al., 2019), one of the two per batch, as DeiT and the
Compact Convolutional Transformer train. The random draws are arguments: inside tf.data and
under jit the backends draw differently (training.py draws with tf.random)."""

from keras import ops


def mix_batch(images, labels, lam, use_cutmix, center):
    """Mixes example i with example B-1-i of the same batch (timm's pairing: no permutation).

    Args:
        images: (B, S, S, C) floats.
        labels: (B, K) one-hot or soft labels.
        lam: scalar in [0, 1], drawn from Beta(alpha, alpha): the share of each example kept.
        use_cutmix: scalar bool. False: mixup, lam * x_i + (1 - lam) * x_partner. True: CutMix, a
            box of about (1 - lam) S^2 pixels from the partner pasted over x_i.
        center: (2,) in [0, 1): the CutMix box's centre (row, column) as a fraction of S.

    Returns:
        (images, labels). Labels are mixed by lam, or for CutMix by the share of pixels the box
        left after clipping at the border.
    """
    partner_images, partner_labels = ops.flip(images, axis=0), ops.flip(labels, axis=0)
    size = ops.cast(ops.shape(images)[1], "float32")
    lam = ops.cast(lam, "float32")
    half = ops.sqrt(1.0 - lam) * size / 2.0
    top = ops.clip(ops.round(center[0] * size - half), 0.0, size)
    bottom = ops.clip(ops.round(center[0] * size + half), 0.0, size)
    left = ops.clip(ops.round(center[1] * size - half), 0.0, size)
    right = ops.clip(ops.round(center[1] * size + half), 0.0, size)
    pixels = ops.cast(ops.arange(ops.shape(images)[1]), "float32")
    rows = ops.logical_and(pixels >= top, pixels < bottom)
    columns = ops.logical_and(pixels >= left, pixels < right)
    box = ops.logical_and(rows[:, None], columns[None, :])[None, :, :, None]  # (1, S, S, 1)
    box_lam = 1.0 - (bottom - top) * (right - left) / (size * size)

    blend = ops.cast(lam, images.dtype)
    mixed = ops.where(
        use_cutmix,
        ops.where(box, partner_images, images),
        blend * images + (1 - blend) * partner_images,
    )
    weight = ops.cast(ops.where(use_cutmix, box_lam, lam), labels.dtype)
    return mixed, weight * labels + (1 - weight) * partner_labels
