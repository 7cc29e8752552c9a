"""The ViT's Trainer entry point, run for real, and its augmentation and image dataset."""

import copy
import json
import os

import numpy as np
import tensorflow as tf

from trainer_module.vit import FAMILY
from trainer_module.vit.model import whitening_kernel
from trainer_module.vit.training import augment, image_dataset, prepare

get_preset = FAMILY.config


def test_run_fn_trains_on_the_classes_transform_found_and_exports(vit_run):
    model, fn_args = vit_run.model, vit_run.fn_args
    # 14 epochs of the 18 images in batches of 6, counted by the run: 42 steps.
    assert int(model.optimizer.iterations.numpy()) == 42
    assert model.config.num_classes == 3  # red, green, blue: not the preset's 10
    history = json.load(open(os.path.join(fn_args.model_run_dir, "history.json")))
    assert history["class_names"] == ["red", "green", "blue"]
    assert history["parameters"] == model.count_params()
    assert history["history"]["val_accuracy"][-1] == 1.0  # three solid colours
    assert history["precision"] == "mixed_bfloat16"  # the run's mixed_precision="on" on a CPU
    assert (history["train_steps"], history["batch_size"]) == (42, 6)
    assert (history["train_examples"], history["epochs"]) == (18, 14.0)
    # The rate is of the 252 examples trained; fit_seconds is rounded to 0.1 s.
    rate, seconds = history["train_examples_per_second"], history["fit_seconds"]
    assert rate * (seconds - 0.05) <= 42 * 6 + 0.05 * seconds
    assert rate * (seconds + 0.05) >= 42 * 6 - 0.05 * seconds


def test_the_trainer_whitens_the_stem_from_the_training_images_and_keeps_it(vit_run):
    """The run's 18 training images are fewer than WHITENING_IMAGES: all of them count."""
    fn_args = copy.copy(vit_run.fn_args)
    overrides = {**fn_args.custom_config["overrides"], "whitening_kernel": 2}
    fn_args.custom_config = {**fn_args.custom_config, "overrides": overrides}
    prepared = prepare(fn_args)
    stem = prepared.build(prepared.config, prepared.run.train_steps).tokenizer_layers[0]
    assert (stem.name, stem.filters, stem.trainable) == ("stem_0a", 24, False)
    training_images = np.stack([row["pixels"] for row in vit_run.transformed])
    np.testing.assert_allclose(
        stem.kernel.numpy(), whitening_kernel(training_images, 2), rtol=1e-4, atol=1e-4
    )


def test_the_image_dataset_batches_one_hot_labels_and_augments_training_only(vit_run):
    config = vit_run.model.config.replace(batch_size=5, crop_padding=2)
    training = image_dataset(
        vit_run.fn_args, vit_run.fn_args.train_files, vit_run.output, config, 3, training=True
    )
    images, labels = next(iter(training))
    assert images.shape == (5, 16, 16, 3) and labels.shape == (5, 3)
    np.testing.assert_array_equal(labels.numpy().sum(axis=1), 1.0)
    evaluation = image_dataset(
        vit_run.fn_args, vit_run.fn_args.eval_files, vit_run.output, config, 3, training=False
    )
    first, _ = next(iter(evaluation))
    # Evaluation images are Transform's pixels as they are, in file order.
    np.testing.assert_allclose(first.numpy()[0], vit_run.transformed[0]["pixels"], atol=1e-6)
    # 18 images in batches of 5, repeated (Keras counts validation steps): the fourth batch
    # ends with the first two images again.
    fourth, _ = list(evaluation.take(4))[3]
    np.testing.assert_allclose(
        fourth.numpy()[3:], [vit_run.transformed[i]["pixels"] for i in (0, 1)], atol=1e-6
    )


def test_mixed_training_batches_have_soft_labels_and_evaluation_batches_do_not(vit_run):
    config = vit_run.model.config.replace(batch_size=6, mixup_alpha=0.8, cutmix_alpha=1.0)
    soft = 0
    for _, labels in image_dataset(
        vit_run.fn_args, vit_run.fn_args.train_files, vit_run.output, config, 3, training=True
    ).take(8):
        labels = labels.numpy()
        np.testing.assert_allclose(labels.sum(axis=1), 1.0, rtol=1e-5)
        soft += int(((labels > 0) & (labels < 1)).any())
    assert soft >= 6  # Beta draws of exactly 0 or 1 are rare
    _, labels = next(
        iter(
            image_dataset(
                vit_run.fn_args,
                vit_run.fn_args.eval_files,
                vit_run.output,
                config,
                3,
                training=False,
            )
        )
    )
    assert set(np.unique(labels.numpy())) == {0.0, 1.0}


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
                    if np.array_equal(out, padded[dy : dy + 8, dx : dx + 8]):
                        matched = True
                        seen.add((flipped is not image, dy, dx))
        assert matched
    assert len(seen) > 5 and {flip for flip, _, _ in seen} == {False, True}


def test_no_augmentation_when_switched_off():
    config = get_preset("tiny", {"image_size": 8, "crop_padding": 0, "horizontal_flip": False})
    image = np.random.default_rng(0).normal(size=(8, 8, 3)).astype("float32")
    np.testing.assert_array_equal(augment(tf.constant(image), config, 0).numpy(), image)
