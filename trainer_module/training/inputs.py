"""Input functions over Transform's output, and what every model family's run starts from."""

import dataclasses
import math
import types
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Optional, Sequence

import keras
import tensorflow as tf
import tensorflow_transform as tft
from absl import logging
from tfx_bsl.public import tfxio

from trainer_module import features
from trainer_module.family import ModelFamily, search_overrides
from trainer_module.training import distribution

if TYPE_CHECKING:
    from trainer_module.training.history import Fitted
    from trainer_module.training.pretraining import Pretraining

# Training batches are drawn from a shuffle buffer of the whole training split, up to this many
# examples (a few hundred MB of serialized examples for the text families). ExampleGen writes
# examples in the order it reads them (a local Beam's Reshuffle keeps it), and aclImdb's folders
# are sorted by label: tf.data's customary 10,000 over IMDB's 20,000 training reviews fed
# SGD runs of one class, which cost the n-gram path 0.5 points alone.
SHUFFLE_EXAMPLES = 50_000


def shuffle_buffer(run: "TrainerRun") -> int:
    """The whole training split (start_run counted it), SHUFFLE_EXAMPLES at most."""
    return max(1, min(SHUFFLE_EXAMPLES, run.train_examples))


def make_dataset(
    run: "TrainerRun",
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
    run.train_examples counted by start_run)."""
    dataset = run.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(
            batch_size=batch_size,
            label_key=features.LABEL,
            shuffle=shuffle,
            shuffle_buffer_size=shuffle_buffer(run),
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


def feature_batches(
    run: "TrainerRun",
    file_pattern,
    tf_transform_output: tft.TFTransformOutput,
    key: str,
    batch_size: int,
) -> tf.data.Dataset:
    """Endless shuffled batches of one transformed feature (`key`) of the files, labels
    unread (masked-token pretraining's input)."""
    dataset = run.data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(
            batch_size=batch_size,
            shuffle=True,
            shuffle_buffer_size=shuffle_buffer(run),
            shuffle_seed=0,
            num_epochs=None,
            drop_final_batch=True,
        ),
        tf_transform_output.transformed_metadata.schema,
    )
    return dataset.map(lambda x: x[key], num_parallel_calls=tf.data.AUTOTUNE)


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


@dataclasses.dataclass(frozen=True)
class TrainerRun:
    """A Trainer's or Tuner's inputs, read once from TFX's FnArgs at the entry point (its
    field names are FnArgs') and passed explicitly. What a stage resolves (the examples
    counted, the steps after the plan) it returns in a new record (`replace`); nothing is
    written back to FnArgs or to a record."""

    train_files: Sequence[str]
    eval_files: Sequence[str]
    transform_output: str  # Transform's output folder
    transform_graph_path: str
    serving_model_dir: str  # "": none (the Tuner's)
    model_run_dir: str  # "": none (the Tuner's)
    working_dir: str
    data_accessor: Any  # TFX's DataAccessor (run_fn.run shards it by worker)
    train_steps: int  # 0 until start_run resolves epochs into steps
    eval_steps: int  # 0: not given (one validation batch)
    custom_config: Mapping[str, Any]  # TrainerOptions' keys (pipeline/options.py), as given
    hyperparameters: Optional[Mapping[str, Any]] = None  # the Tuner's best values
    base_model: Optional[str] = None  # the model to warm-start from (training/warm_start.py)
    # The unlabelled texts' files (Transform's UNLABELED_SPLIT), which only pretraining reads.
    unlabeled_files: Sequence[str] = ()
    # What the stages resolve (0 or "" until they do):
    train_examples: int = 0  # the labelled training examples, counted by start_run
    unlabeled_examples: int = 0  # the unlabelled texts, counted by start_run
    backup_dir: str = ""  # where training backs up (run_fn.run; training/backup.py); "": none
    backup_writer: bool = True  # whether this worker writes the backups there (the chief)

    @classmethod
    def from_fn_args(cls, fn_args) -> "TrainerRun":
        """The record of `fn_args` (a record already is one). FnArgs' train_files are one
        pattern per split of train_args.splits (pipeline/factory.py names the unlabelled split
        there when the run pretrains): the unlabelled split's go to `unlabeled_files`, so that
        no supervised phase ever reads a text without a label."""
        if isinstance(fn_args, cls):
            return fn_args
        values: dict[str, Any] = {name: getattr(fn_args, name, None) for name in FN_ARGS_FIELDS}
        values["custom_config"] = dict(fn_args.custom_config or {})
        patterns = list(fn_args.train_files or [])
        values["unlabeled_files"] = [p for p in patterns if is_unlabeled_split(p)]
        values["train_files"] = [p for p in patterns if not is_unlabeled_split(p)]
        if not values["train_files"]:
            raise ValueError(f"the Trainer was given no labelled training split: {patterns}")
        for name in (
            "transform_output",
            "transform_graph_path",
            "serving_model_dir",
            "model_run_dir",
            "working_dir",
        ):
            values[name] = values[name] or ""
        for name in ("train_steps", "eval_steps"):
            values[name] = int(values[name] or 0)
        return cls(**values)

    @property
    def options(self) -> TrainerOptions:
        """The pipeline's settings (custom_config's TrainerOptions keys), typed; a missing one
        is an error that names it."""
        custom = check_trainer_keys(self.custom_config)
        return TrainerOptions(**{key: custom[key] for key in TRAINER_KEYS})

    def replace(self, **changes) -> "TrainerRun":
        if "custom_config" in changes:
            changes["custom_config"] = dict(changes["custom_config"])
        return dataclasses.replace(self, **changes)

    def __post_init__(self):  # read-only: a stage that resolves a value makes a new record
        object.__setattr__(self, "custom_config", types.MappingProxyType(self.custom_config))


# The fields TrainerRun reads of FnArgs (the others, the stages resolve).
FN_ARGS_FIELDS = (
    "train_files",
    "eval_files",
    "transform_output",
    "transform_graph_path",
    "serving_model_dir",
    "model_run_dir",
    "working_dir",
    "data_accessor",
    "train_steps",
    "eval_steps",
    "custom_config",
    "hyperparameters",
    "base_model",
)


def is_unlabeled_split(pattern: str) -> bool:
    """Whether a file pattern of FnArgs is in the unlabelled split's folder (TFX writes split
    NAME of an Examples artifact to `<uri>/Split-NAME/`)."""
    return f"Split-{features.UNLABELED_SPLIT}" in pattern.replace("\\", "/").split("/")


def check_trainer_keys(custom_config) -> dict:
    """`custom_config`, after checking that it holds every TRAINER_KEYS key."""
    missing = [key for key in TRAINER_KEYS if key not in (custom_config or {})]
    if missing:
        raise ValueError(
            f"the Trainer's custom_config lacks {missing} (pipeline/factory.py writes "
            f"{list(TRAINER_KEYS)}); it has {sorted(custom_config or {})}"
        )
    return custom_config


def start_run(run, family: ModelFamily):
    """(config, TFTransformOutput, run) for one Trainer or Tuner run (`run`: a TrainerRun, or
    TFX's FnArgs), and Keras' random seed set.

    The config is the family's preset named in custom_config with its overrides, then the
    Tuner's best values when the Trainer was given them, with the global batch size of the
    current strategy (the preset's batch is per replica).

    The returned run holds the examples counted (train_examples, unlabeled_examples) and its
    steps: train_args.num_steps when given (a cloud run can set it as a runtime
    parameter), else ceil(epochs x examples / global batch) of custom_config["epochs"].
    """
    run = TrainerRun.from_fn_args(run)
    options = run.options
    config = family.config(options.preset, options.overrides)
    if run.hyperparameters:
        overrides = search_overrides(family.search_space, run.hyperparameters["values"])
        logging.info("Applying the Tuner's best values: %s", overrides)
        config = config.replace(**overrides)
    config = config.replace(batch_size=distribution.global_batch_size(config.batch_size))
    examples = count_examples(run.train_files)
    # Pretraining's extra texts (none: the training split alone).
    unlabeled = count_examples(run.unlabeled_files, at_least_one=False)
    steps = run.train_steps
    if options.epochs and not steps:  # steps given at run time win
        steps = steps_for_epochs(options.epochs, examples, config.batch_size)
        logging.info(
            "%g epochs of %d training examples in batches of %d: %d steps",
            options.epochs,
            examples,
            config.batch_size,
            steps,
        )
    if not steps:
        raise ValueError("the Trainer was given neither train_args.num_steps nor epochs")
    keras.utils.set_random_seed(int(options.seed))
    run = run.replace(
        train_examples=examples,
        unlabeled_examples=unlabeled,
        train_steps=steps,
    )
    return config, tft.TFTransformOutput(run.transform_graph_path), run


def count_examples(file_patterns: Sequence[str], at_least_one: bool = True) -> int:
    """The records in Transform's (gzipped) TFRecord files: one pass, in TensorFlow; a pattern
    that matches no file is an error when `at_least_one`."""
    files = [f for pattern in file_patterns for f in tf.io.gfile.glob(pattern)]
    if not files:
        if not at_least_one:
            return 0
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
    """What a family prepares for training and tuning (its `prepare(run)` returns one): the
    run as start_run resolved it, the config, Transform's output and the datasets; then what
    run_fn.fit_and_export calls, in order, as methods. A family subclasses it: `build` and
    `export` it must define; the other phases have defaults a family overrides when it has
    them (BERT's phases, the text classifiers' wide path, the text encoder's pretraining)."""

    run: TrainerRun
    config: Any
    tf_transform_output: tft.TFTransformOutput
    train: tf.data.Dataset
    evaluation: tf.data.Dataset

    objective: ClassVar[str] = "val_accuracy"  # the validation metric the Tuner maximises

    def build(self, config: Any, train_steps: int) -> keras.Model:
        """The built model, compiled with its schedule over `train_steps` (or left to
        `ready_to_train` to compile)."""
        raise NotImplementedError(f"{type(self).__name__} builds no model")

    def ready_to_train(self, model: keras.Model) -> None:
        """Readies a built model for its training steps when `build` does not compile it
        (BERT compiles per phase); training/plan.py times the steps after it. Default: none."""

    @property
    def pretrain_epochs(self) -> float:
        """Passes of masked-token pretraining over the training texts before the fit (the
        config's, for a family that can pretrain). Default: 0, none."""
        return 0.0

    def pretraining(self, model: keras.Model) -> "Pretraining":
        """What masked-token pretraining of the model's encoder needs (training/pretraining.py),
        for a family whose pretrain_epochs can be more than 0."""
        raise NotImplementedError(f"{type(self).__name__} does not pretrain")

    def fit(
        self,
        model: keras.Model,
        run: TrainerRun,
        before_training: Optional[Callable[[], dict]] = None,
    ) -> "Fitted":
        """Trains for run.train_steps, after `before_training` (pretraining). Default:
        history.fit_with_evaluations, ending with the mean of the last `average_last`
        evaluations."""
        from trainer_module.training.history import fit_with_evaluations

        return fit_with_evaluations(
            model,
            self.train,
            self.evaluation,
            run,
            self.config.evaluations,
            self.config.batch_size,
            average_last=self.average_last,
            before_training=before_training,
        )

    @property
    def average_last(self) -> int:
        """Evaluations whose weights the model ends with the mean of (training/averaging.py)."""
        return 1

    def after_fit(self, model: keras.Model, run: TrainerRun) -> dict:
        """What trains after the model's own fit (the text classifiers' wide path and the
        combination: training/wide_path.py); returns what history.json records of it under
        `paths`. Default: nothing."""
        return {}

    def describe(self, model: keras.Model) -> dict:
        """More for history.json. Default: nothing."""
        return {}

    def served(self, model: keras.Model) -> keras.Model:
        """The model to export of the one `build` returned (the text classifiers train through
        a view of theirs: layers/ngram.py, PathTraining). Default: itself."""
        return model

    def export(self, model: keras.Model, serving_model_dir: str) -> None:
        """Exports the trained model (`served`'s) as the serving SavedModel (the Tuner exports
        nothing)."""
        raise NotImplementedError(f"{type(self).__name__} exports no model")
