import numpy as np
import tensorflow as tf

from trainer_module.models.vit_presets import get_preset
from trainer_module.training.image_classification import augment


def test_crops_shift_the_image_within_the_padding_and_flips_mirror_it():
    config = get_preset("tiny", {"image_size": 8, "crop_padding": 2})
    image = np.arange(8 * 8 * 3, dtype="float32").reshape(8, 8, 3) + 1.0
    seen = set()
    for seed in range(40):
        tf.random.set_seed(seed)
        out = augment(tf.constant(image), config, seed).numpy()
        assert out.shape == (8, 8, 3)
        matched = False
        for flipped in (image, image[:, ::-1]):
            padded = np.pad(flipped, ((2, 2), (2, 2), (0, 0)))  # zeros: the normalized mean
            for dy in range(5):
                for dx in range(5):
                    if np.array_equal(out, padded[dy:dy + 8, dx:dx + 8]):
                        matched = True
                        seen.add((flipped is not image, dy, dx))
        assert matched
    assert len(seen) > 5 and {flip for flip, _, _ in seen} == {False, True}


def test_no_augmentation_when_switched_off():
    config = get_preset("tiny", {"image_size": 8, "crop_padding": 0, "horizontal_flip": False})
    image = np.random.default_rng(0).normal(size=(8, 8, 3)).astype("float32")
    np.testing.assert_array_equal(augment(tf.constant(image), config, 0).numpy(), image)
