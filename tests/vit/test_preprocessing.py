import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from lab.local_transform import analyze_and_transform
from tests.conftest import image_spec
from trainer_module.preprocessing.classes import class_names
from trainer_module.vit import preprocessing as image


def encode(pixels, format="PNG"):
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(buffer, format=format)
    return buffer.getvalue()


def solid(rgb, size=4):
    return np.broadcast_to(np.asarray(rgb, np.uint8), (size, size, 3))


def transform(rows, tmp_path, image_size=4):
    return analyze_and_transform(
        rows, image.preprocessing_fn, {"image_size": image_size}, str(tmp_path), image_spec()
    )


@pytest.fixture(scope="module")
def dark_and_light(tmp_path_factory):
    """Red and blue 0 and 255 (mean 0.5, std 0.5 -> -1, +1); green constant 51 (-> 0)."""
    rows = [
        {"image": encode(solid([0, 51, 0])), "label": 0, "label_name": "dark"},
        {"image": encode(solid([255, 51, 255])), "label": 1, "label_name": "light"},
    ]
    return transform(rows, tmp_path_factory.mktemp("dark_and_light"))


def test_normalizes_each_channel_with_training_mean_and_std(dark_and_light):
    transformed, output = dark_and_light
    first, second = (row["pixels"] for row in transformed)
    assert first.shape == (4, 4, 3)
    np.testing.assert_allclose(first[..., 0], -1.0, atol=1e-3)
    np.testing.assert_allclose(second[..., 0], 1.0, atol=1e-3)
    np.testing.assert_allclose(first[..., 1], 0.0, atol=1e-3)  # zero variance: no NaN
    assert [row["label"] for row in transformed] == [0, 1]
    assert class_names(output) == ["dark", "light"]


def test_serving_layer_resizes_any_size_and_format_with_the_training_statistics(dark_and_light):
    _, output = dark_and_light
    layer = output.transform_features_layer()
    big_white_jpeg = encode(solid([255, 255, 255], size=40), format="JPEG")
    grey_png = encode(np.full((7, 5), 0, np.uint8))  # one channel, odd size
    pixels = layer({"image": tf.constant([big_white_jpeg, grey_png])})["pixels"].numpy()
    assert pixels.shape == (2, 4, 4, 3)
    red_and_blue = [0, 2]  # the channels that varied in training
    np.testing.assert_allclose(pixels[0][..., red_and_blue], 1.0, atol=0.02)
    np.testing.assert_allclose(pixels[1][..., red_and_blue], -1.0, atol=0.02)


def test_class_names_refuse_a_label_with_two_names(tmp_path):
    rows = [
        {"image": encode(solid([0, 0, 0])), "label": 0, "label_name": "cat"},
        {"image": encode(solid([9, 9, 9])), "label": 0, "label_name": "dog"},
    ]
    _, output = transform(rows, tmp_path)
    with pytest.raises(ValueError, match="label 0 has two names"):
        class_names(output)
