"""Mixup and CutMix of whole batches (trainer_module/vit/augment.py), with given draws."""

import numpy as np
import pytest

from trainer_module.vit.augment import mix_batch

# Two 4x4 one-channel images, 1s and 2s, of classes 0 and 1 (of 3).
IMAGES = np.stack([np.full((4, 4, 1), 1.0), np.full((4, 4, 1), 2.0)]).astype("float32")
LABELS = np.eye(3, dtype="float32")[[0, 1]]


def mixed(lam, use_cutmix, center):
    images, labels = mix_batch(IMAGES, LABELS, lam, use_cutmix, np.asarray(center, "float32"))
    return np.asarray(images), np.asarray(labels)


def test_mixup_blends_each_image_with_the_batch_mirror_and_the_labels_alike():
    images, labels = mixed(0.7, False, (0.5, 0.5))
    np.testing.assert_allclose(images[0], 0.7 * 1 + 0.3 * 2, rtol=1e-6)
    np.testing.assert_allclose(images[1], 0.7 * 2 + 0.3 * 1, rtol=1e-6)
    np.testing.assert_allclose(labels, [[0.7, 0.3, 0], [0.3, 0.7, 0]], rtol=1e-6)


def test_cutmix_pastes_a_box_of_the_partner_and_weights_labels_by_its_area():
    images, labels = mixed(0.75, True, (0.5, 0.5))  # a 2x2 box in the middle: 4 of 16 pixels
    box = np.zeros((4, 4, 1), bool)
    box[1:3, 1:3] = True
    np.testing.assert_array_equal(images[0], np.where(box, 2.0, 1.0))
    np.testing.assert_array_equal(images[1], np.where(box, 1.0, 2.0))
    np.testing.assert_allclose(labels, [[0.75, 0.25, 0], [0.25, 0.75, 0]], rtol=1e-6)


def test_a_cutmix_box_clipped_at_the_border_weights_labels_by_what_is_left():
    images, labels = mixed(0.75, True, (0.0, 0.0))  # the 2x2 box centred on the corner
    assert (images[0] == 2.0).sum() == 1 and images[0, 0, 0, 0] == 2.0
    np.testing.assert_allclose(labels[0], [15 / 16, 1 / 16, 0], rtol=1e-6)


@pytest.mark.parametrize("use_cutmix", [False, True])
def test_lam_one_leaves_the_batch_as_it_is(use_cutmix):
    images, labels = mixed(1.0, use_cutmix, (0.3, 0.6))
    np.testing.assert_array_equal(images, IMAGES)
    np.testing.assert_array_equal(labels, LABELS)
