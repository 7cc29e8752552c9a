"""Input functions over Transform's output, shared by every model family."""
from typing import Callable

import keras
import tensorflow as tf
import tensorflow_transform as tft
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx_bsl.public import tfxio

from trainer_module import features
from trainer_module.training import distribution


def make_dataset(fn_args: FnArgs, file_pattern, tf_transform_output: tft.TFTransformOutput,
                 model_inputs: Callable[[dict], object], batch_size: int, num_classes: int,
                 shuffle: bool) -> tf.data.Dataset:
    """Batches of (model_inputs(transformed features), one-hot labels (B, C)), repeated."""
    dataset = fn_args.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(batch_size=batch_size,
                                       label_key=features.TRANSFORMED_LABEL,
                                       shuffle=shuffle, shuffle_seed=0 if shuffle else None),
        tf_transform_output.transformed_metadata.schema,
    )
    return dataset.map(
        lambda x, y: (model_inputs(x), tf.one_hot(tf.reshape(y, [-1]), num_classes)),
        num_parallel_calls=tf.data.AUTOTUNE,
    ).prefetch(tf.data.AUTOTUNE)


def start_run(fn_args: FnArgs, get_preset, default_preset: str):
    """(config, TFTransformOutput) for one Trainer run: the preset named in custom_config with
    its overrides and the global batch size of the current strategy, and Keras' random seed
    set from it."""
    custom = fn_args.custom_config
    config = get_preset(custom.get("preset", default_preset), custom.get("overrides"))
    # The preset's batch is per replica; a step over all replicas takes this many examples.
    config = config.replace(batch_size=distribution.global_batch_size(config.batch_size))
    keras.utils.set_random_seed(int(custom.get("seed", 0)))
    return config, tft.TFTransformOutput(fn_args.transform_output)
