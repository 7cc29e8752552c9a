"""tf.Transform preprocessing for images: decode, resize, per-channel normalization.

The channel means and standard deviations are tf.Transform analyzers over the training split,
so serving normalizes with the same numbers. Augmentation is not here: Transform runs once, so
random crops and flips would be frozen into the data; the trainer's input function applies
them to training batches (training.py).
"""

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.preprocessing.classes import class_vocabulary

PIXELS = "pixels"  # float32 (B, S, S, 3), per-channel normalized: the model's input
EPSILON = 1e-6


def decode_images(encoded: tf.Tensor, image_size: int) -> tf.Tensor:
    """Encoded PNG/JPEG bytes (B,) or (B, 1) -> float32 (B, S, S, 3) in [0, 1]; any size in,
    resized (bilinear, antialiased) to S x S; grey and RGBA images become RGB."""

    def decode(data):
        image = tf.io.decode_image(data, channels=3, expand_animations=False)
        image = tf.image.convert_image_dtype(image, tf.float32)
        # The identity when the image already has the size (pixel centres map onto themselves).
        return tf.image.resize(image, [image_size, image_size], antialias=True)

    return tf.map_fn(
        decode,
        tf.reshape(encoded, [-1]),
        fn_output_signature=tf.TensorSpec([image_size, image_size, 3], tf.float32),
    )


def normalize(images: tf.Tensor) -> tf.Tensor:
    """Per-channel (x - mean) / std, both computed over the whole training split."""
    pixels = tf.reshape(images, [-1, 3])
    mean = tft.mean(pixels, reduce_instance_dims=False)  # (3,)
    variance = tft.var(pixels, reduce_instance_dims=False)
    return (images - mean) / tf.sqrt(variance + EPSILON)


@tf.autograph.experimental.do_not_convert  # TF ops alone (trainer_module/preprocessing)
def preprocessing_fn(inputs, custom_config):
    """Raw image features -> {pixels (B, S, S, 3), label (B,)}; S = custom_config["image_size"]
    (config.transform_config)."""
    images = decode_images(inputs[features.IMAGE], int(custom_config["image_size"]))
    labels = tf.reshape(inputs[features.IMAGE_LABEL], [-1])
    class_vocabulary(labels, inputs[features.IMAGE_LABEL_NAME])
    return {PIXELS: normalize(images), features.LABEL: labels}
