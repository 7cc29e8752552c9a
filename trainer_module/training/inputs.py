"""Input functions over Transform's output, and what every model family's run starts from."""

import dataclasses
import math
from typing import Any, Callable, Mapping, Optional, Sequence

import keras
import tensorflow as tf
import tensorflow_transform as tft
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx_bsl.public import tfxio

from trainer_module import features
from trainer_module.family import ModelFamily, search_overrides
from trainer_module.training import distribution

# Training batches are drawn from a shuffle buffer of the whole training split, up to this many
# examples (a few hundred MB of serialized examples for the text families). ExampleGen writes
# examples in the order it reads them (a local Beam's Reshuffle keeps it), and aclImdb's folders
# are sorted by label: tf.data's customary 10,000 over IMDB's 20,000 training reviews fed
# SGD runs of one class, which cost the n-gram path 0.5 points alone.
SHUFFLE_EXAMPLES = 50_000


def make_dataset(
    fn_args: FnArgs,
    file_pattern,
    tf_transform_output: tft.TFTransformOutput,
    model_inputs: Callable[[dict], object],
    batch_size: int,
    num_classes: int,
    shuffle: bool,
    num_epochs: Optional[int] = None,
) -> tf.data.Dataset:
    """Batches of (model_inputs(transformed features), one-hot labels (B, C)), repeated (or
    `num_epochs` passes); shuffled over the whole training split (`SHUFFLE_EXAMPLES` at most,
    custom_config["train_examples"] counted by start_run)."""
    dataset = fn_args.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(
            batch_size=batch_size,
            label_key=features.LABEL,
            shuffle=shuffle,
            shuffle_buffer_size=max(
                1, min(SHUFFLE_EXAMPLES, int(fn_args.custom_config["train_examples"]))
            ),
            shuffle_seed=0 if shuffle else None,
            num_epochs=num_epochs,
        ),
        tf_transform_output.transformed_metadata.schema,
    )
    dataset = dataset.map(
        lambda x, y: (model_inputs(x), tf.one_hot(tf.reshape(y, [-1]), num_classes)),
        num_parallel_calls=tf.data.AUTOTUNE,
    ).prefetch(tf.data.AUTOTUNE)
    return dataset if shuffle else without_autotuning(dataset)


def without_autotuning(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """A validation dataset without tf.data's autotuning thread. Keras drops its validation
    iterator after every evaluation, and (TensorFlow 2.16) destroying an iterator waits for its
    autotuning thread's current sleep to end: up to a minute once the iterator has lived through
    a training interval, which stalled the translator's training at half its evaluations. A
    validation pass of a few batches has nothing to tune."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


@dataclasses.dataclass(frozen=True)
class TrainerOptions:
    """What the pipeline tells the Trainer and the Tuner, as their custom_config
    (pipeline/options.py writes it from these fields), read strictly: a missing key is an
    error that names it, never a silent default."""

    task: str
    model: str  # the family
    preset: str
    overrides: Mapping[str, Any]
    seed: int
    mixed_precision: str  # training/precision.py
    epochs: Optional[float]  # None: the Trainer's train_args.num_steps
    time_budget_minutes: Optional[float]  # training/plan.py

    def as_custom_config(self) -> dict:
        return {**dataclasses.asdict(self), "overrides": dict(self.overrides)}


TRAINER_KEYS = tuple(field.name for field in dataclasses.fields(TrainerOptions))


def check_trainer_keys(custom_config) -> dict:
    """`custom_config`, after checking that it holds every TRAINER_KEYS key."""
    missing = [key for key in TRAINER_KEYS if key not in (custom_config or {})]
    if missing:
        raise ValueError(
            f"the Trainer's custom_config lacks {missing} (pipeline/factory.py writes "
            f"{list(TRAINER_KEYS)}); it has {sorted(custom_config or {})}"
        )
    return custom_config


def start_run(fn_args: FnArgs, family: ModelFamily):
    """(config, TFTransformOutput) for one Trainer or Tuner run, and Keras' random seed set.

    The config is the family's preset named in custom_config with its overrides, then the
    Tuner's best values when the Trainer was given them, with the global batch size of the
    current strategy (the preset's batch is per replica).

    The training examples are counted (custom_config["train_examples"]); with
    custom_config["epochs"] and no train_args.num_steps (a cloud run can set it as a runtime
    parameter), the run trains ceil(epochs x examples / global batch) steps.
    """
    custom = check_trainer_keys(fn_args.custom_config)
    config = family.config(custom["preset"], custom["overrides"])
    tuned = getattr(fn_args, "hyperparameters", None)
    if tuned:
        overrides = search_overrides(family.search_space, tuned["values"])
        logging.info("Applying the Tuner's best values: %s", overrides)
        config = config.replace(**overrides)
    config = config.replace(batch_size=distribution.global_batch_size(config.batch_size))
    examples = count_examples(fn_args.train_files)
    fn_args.custom_config = {**custom, "train_examples": examples}
    if custom["epochs"] and not fn_args.train_steps:  # steps given at run time win
        fn_args.train_steps = steps_for_epochs(custom["epochs"], examples, config.batch_size)
        logging.info(
            "%g epochs of %d training examples in batches of %d: %d steps",
            custom["epochs"],
            examples,
            config.batch_size,
            fn_args.train_steps,
        )
    if not fn_args.train_steps:
        raise ValueError("the Trainer was given neither train_args.num_steps nor epochs")
    keras.utils.set_random_seed(int(custom["seed"]))
    return config, tft.TFTransformOutput(fn_args.transform_graph_path)


def count_examples(file_patterns: Sequence[str]) -> int:
    """The records in Transform's (gzipped) TFRecord files: one pass, in TensorFlow."""
    files = [f for pattern in file_patterns for f in tf.io.gfile.glob(pattern)]
    if not files:
        raise ValueError(f"no training files match {list(file_patterns)}")
    compression = "GZIP" if files[0].endswith(".gz") else None
    records = tf.data.TFRecordDataset(files, compression_type=compression)
    return int(records.reduce(tf.constant(0, tf.int64), lambda count, _: count + 1))


def steps_for_epochs(epochs: float, examples: int, global_batch: int) -> int:
    """Optimizer steps for `epochs` passes over `examples` in batches of `global_batch`."""
    if examples <= 0:
        raise ValueError("there are no training examples to train on")
    return max(1, math.ceil(round(epochs * examples / global_batch, 6)))


@dataclasses.dataclass(frozen=True)
class Prepared:
    """What training and tuning share: the run's config, its datasets, a model builder."""

    config: Any
    tf_transform_output: tft.TFTransformOutput
    train: tf.data.Dataset
    evaluation: tf.data.Dataset
    build: Callable[[Any], keras.Model]  # config -> compiled, built model
    objective: str  # the validation metric the Tuner maximises
    # (model, serving_model_dir) -> the exported SavedModel; the Tuner exports nothing.
    export: Optional[Callable[[keras.Model, str], None]] = None
    # (shuffle, epochs or None: repeated) -> batches of the training split, unsplit.
    datasets: Optional[Callable[..., tf.data.Dataset]] = None
    ngram_ratios: Any = None  # the wide path's, from Transform (preprocessing/ngrams.py)
    # model -> history.Fitted, for a family that trains in its own way (BERT's phases); None:
    # history.fit_with_evaluations, ending with the mean of the last `average_last` evaluations.
    fit: Optional[Callable[[keras.Model], Any]] = None
    average_last: int = 1
    # model -> None: readies a built model for its training steps when `build` does not
    # compile it (BERT compiles per phase); training/plan.py times those steps.
    ready_to_train: Optional[Callable[[keras.Model], None]] = None
    describe: Optional[Callable[[keras.Model], dict]] = None  # model -> more for history.json
