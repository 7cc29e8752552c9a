"""The ViT's export (from the session's real training run on solid colours:
tests/conftest.py): raw JPEG/PNG bytes of any size in."""

import numpy as np
import tensorflow as tf

from tests.conftest import picture
from tests.image_util import encode


def example(data: bytes, label: int = None, name: bytes = None) -> bytes:
    feature = {"image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))}
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
        feature["label_name"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[name]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_exported_classifier_answers_raw_image_bytes_of_any_size(vit_run):
    loaded = tf.saved_model.load(vit_run.export_dir)
    # Any size and format: a 50x40 JPEG and a 16x16 PNG.
    images = [encode(picture("green", 50, 99)[:40], "JPEG"), encode(picture("blue", 16, 98))]
    out = loaded.signatures["classify_image"](image=tf.constant(images))
    assert [n.decode() for n in out["label_name"].numpy()] == ["green", "blue"]
    assert out["probabilities"].dtype == tf.float32
    np.testing.assert_allclose(out["probabilities"].numpy().sum(-1), 1.0, atol=1e-5)

    served = loaded.signatures["serving_default"](
        examples=tf.constant([example(images[0]), example(encode(picture("red", 16, 97)))])
    )
    assert served["label_name"].numpy().tolist() == [b"green", b"red"]
    assert served["probabilities"].shape == (2, 3)
    # The same probabilities as the Keras model on Transform's pixels (trained and served in
    # bfloat16: the graph's and the eager kernels round differently, hence 2e-3).
    features = loaded.signatures["transform_features"](
        examples=tf.constant([example(images[1], 2, b"blue")])
    )
    assert features["pixels"].shape == (1, 16, 16, 3)
    assert features["label"].numpy().tolist() == [2]
    expected = tf.nn.softmax(vit_run.model(features["pixels"], training=False)).numpy()
    np.testing.assert_allclose(out["probabilities"].numpy()[1:], expected, atol=2e-3)


def test_the_export_averages_the_image_and_its_mirror(vit_run):
    """The run's model has flip test-time augmentation: the served probabilities are those of
    the mean of the two passes' logits, so an image and its mirror get the same answer."""
    loaded = tf.saved_model.load(vit_run.export_dir)
    image = picture("green", 16, 5)
    image[:, :8] = picture("red", 16, 6)[:, :8]  # left half red: not symmetric
    pair = [encode(image), encode(np.ascontiguousarray(image[:, ::-1]))]
    out = loaded.signatures["classify_image"](image=tf.constant(pair))["probabilities"].numpy()
    np.testing.assert_allclose(out[0], out[1], atol=2e-3)
    model = vit_run.model
    pixels = loaded.signatures["transform_features"](
        examples=tf.constant([example(pair[0], 1, b"green")])
    )["pixels"]

    def one_pass(x):
        return model.head(model.pool(model.encode(x, training=False)[0]))

    mean = (one_pass(pixels) + one_pass(tf.reverse(pixels, axis=[2]))) / 2
    # Both sides compute in bfloat16 (the run's mixed precision), the served graph in another op
    # order: one rounding of a logit near 2 (a step of 2^-6) moves a probability near 0.45 by up
    # to 0.004. The mirror check above needs no such allowance.
    np.testing.assert_allclose(out[:1], tf.nn.softmax(mean).numpy(), atol=8e-3)


def test_attention_over_the_patch_grid(vit_run):
    loaded = tf.saved_model.load(vit_run.export_dir)
    images = [encode(picture("green", 20, 1)), encode(picture("red", 16, 2))]
    attention = loaded.signatures["attention"](image=tf.constant(images))
    # The run's hybrid stem: 16x16 images to a 4x4 grid of tokens, [CLS] first.
    assert attention["patch_grid"].numpy().tolist() == [4, 4]
    weights = attention["attention"].numpy()
    config = vit_run.model.config
    assert weights.shape == (2, config.num_layers, config.num_heads, 17, 17)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)


def test_a_saved_model_with_shifted_test_time_views_answers_as_the_keras_model(tmp_path):
    """airbench's views (flips and one-pixel shifts, reflect-padded) trace into a graph with an
    unknown batch, as the export's signatures have."""
    from trainer_module.vit import FAMILY
    from trainer_module.vit.model import VitClassifier

    config = FAMILY.config("tiny", {"flip_test_time": True, "translate_test_time": True})
    model = VitClassifier(config)
    images = np.random.default_rng(3).normal(size=(3, 16, 16, 3)).astype("float32")
    expected = model(images).numpy()
    module = tf.Module()
    module.model = model
    module.classify = tf.function(
        lambda x: model(x, training=False),
        input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32)],
    )
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    np.testing.assert_allclose(loaded.classify(images).numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(loaded.classify(images[:1]).numpy(), expected[:1], atol=1e-5)
