"""The Vision Transformer's run over Transform's output (prepare), and the Trainer's and the
Tuner's entry points: training/run_fn.py fits and exports what prepare returns.

Augmentation (a random crop after zero-padding, which is the channel mean after normalization,
a horizontal flip, and mixup or CutMix of whole batches) happens here, on training batches only:
Transform runs once, so there it would freeze one crop per image.
"""

import dataclasses
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
from absl import logging
from tfx_bsl.public import tfxio

from trainer_module import features
from trainer_module.preprocessing.classes import class_names
from trainer_module.training.inputs import Prepared, TrainerRun, start_run
from trainer_module.training.run_fn import trainer_entry_point, tuner_entry_point
from trainer_module.vit import FAMILY
from trainer_module.vit.augment import mix_batch
from trainer_module.vit.config import VitConfig
from trainer_module.vit.model import WHITENING_IMAGES, build_model
from trainer_module.vit.preprocessing import PIXELS
from trainer_module.vit.serving import export

SHUFFLE_BUFFER = 50_000  # the whole of CIFAR-10's training split: ~600 MB of float pixels
READ_BATCH = 256


def augment(image: tf.Tensor, config: VitConfig, seed: int) -> tf.Tensor:
    """One (S, S, 3) image: zero-pad by crop_padding, crop back to S x S at random, flip."""
    if config.crop_padding:
        pad = config.crop_padding
        image = tf.pad(image, [[pad, pad], [pad, pad], [0, 0]])
        image = tf.image.random_crop(image, [config.image_size, config.image_size, 3], seed=seed)
    if config.horizontal_flip:
        image = tf.image.random_flip_left_right(image, seed=seed)
    return image


def beta(alpha: float) -> tf.Tensor:
    """One draw from Beta(alpha, alpha), as a ratio of two Gamma(alpha) draws."""
    a, b = tf.random.gamma([], alpha), tf.random.gamma([], alpha)
    return a / (a + b)


def mix(images: tf.Tensor, labels: tf.Tensor, config: VitConfig):
    """augment.mix_batch with tf.random's draws: CutMix or mixup, each with probability 1/2
    when both are on."""
    if config.mixup_alpha and config.cutmix_alpha:
        use_cutmix = tf.random.uniform([]) < 0.5
    else:
        use_cutmix = tf.constant(config.cutmix_alpha > 0)
    lam = tf.where(use_cutmix, beta(config.cutmix_alpha or 1.0), beta(config.mixup_alpha or 1.0))
    return mix_batch(images, labels, lam, use_cutmix, tf.random.uniform([2]))


def image_dataset(
    run: TrainerRun,
    file_pattern,
    tf_transform_output: tft.TFTransformOutput,
    config: VitConfig,
    num_classes: int,
    training: bool,
    seed: int = 0,
):
    """Repeated batches of (pixels (B, S, S, 3), one-hot labels (B, C)), read once and cached in
    memory; training batches are reshuffled every epoch and augmented (their labels are soft
    when batches are mixed)."""
    dataset = run.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(
            batch_size=READ_BATCH, num_epochs=1, shuffle=False, label_key=features.LABEL
        ),
        tf_transform_output.transformed_metadata.schema,
    )
    dataset = dataset.map(lambda x, y: (x[PIXELS], tf.reshape(y, [-1])))
    dataset = dataset.unbatch().cache()
    if training:
        dataset = (
            dataset.shuffle(SHUFFLE_BUFFER, seed=seed)
            .repeat()
            .map(
                lambda image, label: (augment(image, config, seed), label),
                num_parallel_calls=tf.data.AUTOTUNE,
            )
        )
    else:
        dataset = dataset.repeat()
    dataset = dataset.batch(config.batch_size, drop_remainder=training).map(
        lambda image, label: (image, tf.one_hot(label, num_classes)),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    if training and (config.mixup_alpha or config.cutmix_alpha):
        dataset = dataset.map(
            lambda image, label: mix(image, label, config), num_parallel_calls=tf.data.AUTOTUNE
        )
    return dataset.prefetch(tf.data.AUTOTUNE)


def whitening_sample(run: TrainerRun, tf_transform_output: tft.TFTransformOutput) -> np.ndarray:
    """The first WHITENING_IMAGES training images, unaugmented: (N, S, S, 3) floats."""
    dataset = run.data_accessor.tf_dataset_factory(
        run.train_files,
        tfxio.TensorFlowDatasetOptions(batch_size=READ_BATCH, num_epochs=1, shuffle=False),
        tf_transform_output.transformed_metadata.schema,
    )
    batches = -(-WHITENING_IMAGES // READ_BATCH)
    images = [batch[PIXELS].numpy() for batch in dataset.take(batches)]
    return np.concatenate(images)[:WHITENING_IMAGES]


@dataclasses.dataclass(frozen=True)
class VitPrepared(Prepared):
    class_names: Sequence[str]  # Transform's, in label order

    def build(self, config: VitConfig, train_steps: int) -> keras.Model:
        model = build_model(config, train_steps)
        if config.whitening_kernel:
            model.whiten(whitening_sample(self.run, self.tf_transform_output))
        return model

    def describe(self, model: keras.Model) -> dict:
        logging.info("ViT parameters: %d", model.count_params())
        return {"class_names": list(self.class_names), "parameters": model.count_params()}

    def export(self, model, serving_model_dir):
        export(model, self.tf_transform_output, serving_model_dir, self.class_names)


def prepare(run: TrainerRun) -> VitPrepared:
    config, tf_transform_output, run = start_run(run, FAMILY)
    names = class_names(tf_transform_output)
    config = config.replace(num_classes=len(names))
    logging.info("ViT config %s, classes %s", config, names)
    seed = int(run.options.seed)
    train, evaluation = (
        image_dataset(run, files, tf_transform_output, config, len(names), training, seed)
        for files, training in ((run.train_files, True), (run.eval_files, False))
    )
    return VitPrepared(
        run=run,
        config=config,
        tf_transform_output=tf_transform_output,
        train=train,
        evaluation=evaluation,
        class_names=names,
    )


# The TFX Trainer's and Tuner's entry points (FAMILY.run_fn, FAMILY.tuner_fn).
run_fn = trainer_entry_point(prepare)
tuner_fn = tuner_entry_point(prepare, FAMILY.search_space)
