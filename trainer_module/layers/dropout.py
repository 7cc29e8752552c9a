"""Dropout as a multiplicative mask from 16-bit random draws, of elements or of whole tokens
(keras.ops only)."""

import keras
from keras import ops

RESOLUTION = 1 << 16  # the uniforms are 16-bit: the rate is kept to 1/65,536


@keras.saving.register_keras_serializable(package="trainer_module")
class Dropout(keras.layers.Layer):
    """Inverted dropout, as keras.layers.Dropout: in training each element is zeroed with
    probability `rate` and the rest scaled by 1 / (1 - rate); outside training, the identity.

    Computed as x * mask, so the gradient is one multiply; the mask's uniforms are the two
    16-bit halves of each 32-bit random integer, half a draw per element. keras.layers.Dropout
    on TensorFlow draws a 32-bit uniform per element and selects between the scaled input and
    zeros, forward and in the gradient (a bfloat16 select costs several multiplies on a CPU).
    On the translator's training step (mixed bfloat16, Zen 5) this made the step about a fifth
    shorter (docs/benchmarks.md, Training steps).
    """

    def __init__(self, rate: float, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"rate must be in [0, 1), not {rate}")
        self.rate = rate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, x, training=None):
        if not training or self.rate <= 0:
            return x
        keep = self.keep_mask(ops.shape(x))
        return x * (ops.cast(keep, x.dtype) * ops.cast(1.0 / (1.0 - self.rate), x.dtype))

    def keep_mask(self, shape):
        """(shape) bool, True with probability 1 - rate (to 1/RESOLUTION)."""
        width = shape[-1]
        draws = keras.random.randint(
            (*shape[:-1], (width + 1) // 2),
            minval=-(1 << 31),
            maxval=(1 << 31) - 1,
            dtype="int32",
            seed=self.seed_generator,
        )
        uniforms = ops.view(draws, "uint16")  # (..., 2 * draws): each draw's two halves
        return uniforms[..., :width] >= round(self.rate * RESOLUTION)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class TokenDropout(Dropout):
    """Word dropout (Iyyer et al., 2015): in training, each token's whole embedding is zeroed
    with probability `rate` (its position stays), so no single word can decide the output. The
    kept embeddings are not rescaled.

    Call arguments: x (B, T, D) embeddings; training. Returns x with dropped tokens zeroed.
    """

    def call(self, x, training=None):
        if not training or self.rate <= 0:
            return x
        keep = self.keep_mask(ops.shape(x)[:2])
        return x * ops.cast(keep, x.dtype)[:, :, None]
