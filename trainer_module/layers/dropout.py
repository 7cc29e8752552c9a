"""Dropout as a multiplicative mask, with a cheaper draw on TensorFlow (keras.ops, plus
TensorFlow's bit-level random ops when it is the backend)."""

import keras
from keras import ops

RESOLUTION = 1 << 16  # the TensorFlow draw's uniforms are 16-bit: the rate is kept to 1/65,536


@keras.saving.register_keras_serializable(package="trainer_module")
class Dropout(keras.layers.Layer):
    """Inverted dropout, as keras.layers.Dropout: in training each element is zeroed with
    probability `rate` and the rest scaled by 1 / (1 - rate); outside training, the identity.

    Computed as x * mask, so the gradient is one multiply. keras.layers.Dropout on TensorFlow
    selects between the scaled input and zeros (a bfloat16 select costs several multiplies on
    a CPU) and draws a 32-bit uniform per element; here each 32-bit draw gives two 16-bit
    uniforms. On the translator's training step (mixed bfloat16, Zen 5) the step is a fifth
    shorter (docs/benchmarks.md, Translation). Other backends draw float uniforms.
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
        if keras.backend.backend() == "tensorflow":
            keep = _keep_tensorflow(x, self.rate, self.seed_generator.next())
        else:
            keep = keras.random.uniform(ops.shape(x), seed=self.seed_generator) >= self.rate
        return x * (ops.cast(keep, x.dtype) * ops.cast(1.0 / (1.0 - self.rate), x.dtype))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


def _keep_tensorflow(x, rate: float, seed):
    """(x's shape) bool, True with probability 1 - rate (to 1/RESOLUTION): half as many
    stateless 32-bit Philox draws as elements, each split into two 16-bit uniforms."""
    import tensorflow as tf

    shape = tf.shape(x)
    width = shape[-1]
    draws = tf.concat([shape[:-1], [(width + 1) // 2]], axis=0)
    bits = tf.random.stateless_uniform(
        draws, tf.cast(seed, tf.int32), minval=None, maxval=None, dtype=tf.uint32
    )
    uniforms = tf.reshape(tf.bitcast(bits, tf.uint16), tf.concat([shape[:-1], [-1]], axis=0))
    keep = uniforms[..., :width] >= round(rate * RESOLUTION)
    keep.set_shape(x.shape)
    return keep
