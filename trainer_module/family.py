"""What a model family declares: its typed config and presets, its Tuner search space, its
pipeline options, and the one record (`ModelFamily`) naming its parts for the pipeline.

Pure data: nothing here imports TensorFlow or Keras, so the pipeline and the CLI can read every
family's declarations cheaply (trainer_module/families.py lists them by name).
"""

import dataclasses
from typing import Any, Callable, ClassVar, Mapping, Optional, Sequence, Tuple

# The learning rate after warmup (training/schedules.py: warmup_then): 1/sqrt(step) (Vaswani et
# al.), or linear or cosine to zero at the last step.
DECAYS = ("inverse_sqrt", "linear", "cosine")


def check_decay(decay: str) -> None:
    if decay not in DECAYS:
        raise ValueError(f"decay must be one of {DECAYS}, not {decay!r}")


class PresetConfig:
    """Mixed into each family's frozen dataclass config: overrides that refuse unknown names,
    and plain-dict round trips (Keras get_config, history.json, the Trainer's custom_config)."""

    # What the type checker knows of every family's config: a dataclass's, with a batch size
    # (per replica) and validation passes.
    __dataclass_fields__: ClassVar[dict]
    batch_size: int
    evaluations: int
    # Fields that follow a length unless set: {field: (the length's field, positions of it the
    # field cannot take)}. An override of the length alone keeps the field's share of it
    # (BERT's truncation_head of sequence_length - 2: 64 of 318 becomes 12 of 62).
    FOLLOWS_LENGTH: ClassVar[Mapping[str, Tuple[str, int]]] = {}

    def replace(self, **overrides: Any):
        """A copy with `overrides` applied; unknown names are an error, not silently ignored."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(
                f"unknown {type(self).__name__} fields: {unknown}; known: {sorted(known)}"
            )
        for name, (length, reserved) in self.FOLLOWS_LENGTH.items():
            new = overrides.get(length)
            if name not in overrides and isinstance(new, int) and new != getattr(self, length):
                old, room = getattr(self, length) - reserved, max(0, new - reserved)
                overrides[name] = min(room, round(getattr(self, name) * room / max(1, old)))
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]):
        return cls(**dict(values))


@dataclasses.dataclass(frozen=True)
class PretrainingConfig:
    """Mixed into the text families' configs: masked-token pretraining on the training split's
    own text (and the data's unlabelled texts) before the supervised phase
    (trainer_module/training/pretraining.py); for BERT, its backbone's continued
    (task-adaptive) pretraining."""

    pretrain_epochs: float = 0.0  # passes over the training texts; 0: no pretraining
    # "masked": predict masked tokens (BERT); "replaced": tell replaced tokens (ELECTRA, with a
    # Zipf sampler for its generator), cheaper per step (no softmax over the vocabulary).
    pretrain_objective: str = "masked"
    pretrain_learning_rate: float = 1e-3  # AdamW's peak, 10% warmup then linear to zero
    mask_rate: float = 0.15  # share of each text's tokens masked or replaced (BERT's)

    def check_pretraining(self) -> None:
        if self.pretrain_epochs < 0:
            raise ValueError(f"pretrain_epochs must be 0 or more, not {self.pretrain_epochs}")
        if self.pretrain_objective not in ("masked", "replaced"):
            raise ValueError(
                f"pretrain_objective must be 'masked' or 'replaced', not "
                f"{self.pretrain_objective!r}"
            )
        if not 0 < self.mask_rate < 1:
            raise ValueError(f"mask_rate must be between 0 and 1, not {self.mask_rate}")


# What the export's weights may be stored as (serving/quantization.py).
QUANTIZATION = (None, "int8")


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    """Mixed into the configs of the families whose export can be quantized (BERT, the text
    encoder, the translator)."""

    # "int8": before export, each Dense and EinsumDense kernel becomes int8 with one float scale
    # per output unit, and each call quantizes its inputs per row (Keras' Model.quantize, on
    # those layers only: embeddings, norms and the wide path stay as trained). The SavedModel,
    # MLflow's loader and `serve` answer with it unchanged. Off by default: under TensorFlow it
    # was slower than float32 on the Zen 4 (the text encoder's model alone: 1.65x the time per
    # review at the same accuracy; docs/benchmarks/systems.md#int8-exports-and-onnx-runtime).
    quantize: Optional[str] = None

    def check_quantize(self) -> None:
        if self.quantize not in QUANTIZATION:
            raise ValueError(f"quantize must be one of {QUANTIZATION}, not {self.quantize!r}")


# The runtimes a classifier's export gets beside its SavedModel (serving/onnx_export.py).
SERVING_RUNTIMES = ("onnx", "none")


@dataclasses.dataclass(frozen=True)
class RuntimesConfig:
    """Mixed into the classifiers' configs (BERT, the text encoder, the ViT)."""

    # "onnx": the Trainer also writes the model part in ONNX (float32, and int8), checks each
    # against the SavedModel on the evaluation split, and `serve`, `predict` and MLflow's
    # loader answer through the fastest that kept its answers (docs/serving.md#runtimes).
    # "none": the SavedModel alone (the translator's export is always that).
    serving_runtimes: str = "onnx"

    def check_serving_runtimes(self) -> None:
        if self.serving_runtimes not in SERVING_RUNTIMES:
            raise ValueError(
                f"serving_runtimes must be one of {SERVING_RUNTIMES}, not {self.serving_runtimes!r}"
            )


@dataclasses.dataclass(frozen=True)
class WidePathConfig:
    """Mixed into a text classifier's config: the wide path (NBSVM, Wang and Manning, 2012), a
    logistic regression over each review's distinct hashed word n-grams scaled by their
    naive-Bayes log-count ratios (one-vs-rest above two classes), beside the deep model; the
    served logits combine the two (trainer_module/training/wide_path.py)."""

    # Hashed buckets of the n-grams: IMDB's 20k training reviews hold 4.2 M distinct uni-, bi-
    # and trigrams, most seen once; 2^22 (32 MB of weights and ratios) keeps the collisions
    # among the rare ones. 0: no wide path.
    ngram_buckets: int = 2**22
    ngram_order: int = 3  # up to trigrams (Mesnil et al., 2014: NBSVM-uni-bi-tri)
    # Distinct n-grams kept per review, unigrams first: 98% of IMDB's reviews hold fewer.
    max_ngrams: int = 2048
    # The wide path trains alone, to convergence: plain SGD (the ratios scale each weight's
    # step, as NBSVM's features do), cosine-decayed from this rate over these epochs.
    ngram_epochs: float = 2.0
    ngram_learning_rate: float = 1.0  # the SGD rate: the scaled features are about unit size
    # Training reviews held out from both paths and from the naive-Bayes counts (by a hash of
    # each review's n-grams) to fit the combination of their logits on, so that the served
    # probabilities stay calibrated.
    holdout_percent: int = 10

    def check_wide_path(self) -> None:
        if self.ngram_buckets and not 0 < self.holdout_percent < 100:
            raise ValueError(
                f"holdout_percent must be between 1 and 99, not {self.holdout_percent}"
            )
        if self.ngram_order < 1:
            raise ValueError(f"ngram_order must be 1 or more, not {self.ngram_order}")

    def wide_transform_config(self, num_classes: int) -> dict:
        """What the preprocessing_fn reads of the wide path from Transform's custom_config (the
        classes only above two: the ratios are one-vs-rest then)."""
        return {
            "ngram_buckets": self.ngram_buckets,
            "ngram_order": self.ngram_order,
            "max_ngrams": self.max_ngrams,
            "holdout_percent": self.holdout_percent,
            **({"num_classes": num_classes} if self.ngram_buckets and num_classes != 2 else {}),
        }


@dataclasses.dataclass(frozen=True)
class Axis:
    """One dimension of the Tuner's search space, and the config fields a value sets.

    Discrete with `choices`; otherwise a float between `low` and `high` (with `step`, or
    log-uniform with `log`)."""

    name: str
    fields: Tuple[str, ...]
    choices: Tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    step: Optional[float] = None
    log: bool = False

    def overrides(self, value) -> dict:
        return dict.fromkeys(self.fields, value)


def default_search_space(depth_fields: Tuple[str, ...] = ("num_layers",)) -> Tuple[Axis, ...]:
    """The Tuner's space (--tune) of a from-scratch family: depth (the fields that hold it:
    one stack's, or both of an encoder-decoder's), width, peak learning rate and dropout.
    Every preset's head count divides each width."""
    return (
        Axis("num_layers", depth_fields, choices=(1, 2, 4)),
        Axis("d_model", ("d_model",), choices=(64, 128, 256)),
        Axis("peak_learning_rate", ("peak_learning_rate",), low=1e-4, high=3e-3, log=True),
        Axis("dropout", ("dropout",), low=0.0, high=0.3, step=0.1),
    )


@dataclasses.dataclass(frozen=True)
class Option:
    """A pipeline option a task or a family declares: a CLI flag (`--source-lang`) and an
    environment variable (`TFXT_SOURCE_LANG`) are generated from it.

    With `config_field`, the value becomes that field's override (BERT's `--bert-preset` sets
    `backbone_preset`); `is_path` marks values that may name a local path."""

    name: str
    type: Callable[[str], Any] = str
    default: Any = None
    help: str = ""
    config_field: Optional[str] = None
    is_path: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def environment_variable(self) -> str:
        return "TFXT_" + self.name.upper()


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    """The parts of one model family, by name; the pipeline holds no other family knowledge.

    Dotted paths are what TFX imports inside Transform, Trainer, Tuner and Evaluator.
    """

    name: str  # the CLI's --model, the folder trainer_module/<name>/
    kind: str  # what it predicts (TEXT_CLASSIFIER, ...): the tasks of that kind accept it
    description: str
    presets: Mapping[str, PresetConfig]
    default_preset: str
    # config -> what the family's preprocessing_fn reads from Transform's custom_config.
    transform_config: Callable[[Any], dict]  # the family's config -> Transform's custom_config
    preprocessing_fn: str
    run_fn: str
    tuner_fn: Optional[str] = None  # None: the family cannot be tuned
    search_space: Tuple[Axis, ...] = ()
    # Imported by the Evaluator before it loads the model: TFMA metrics, custom ops.
    evaluator_module: Optional[str] = None
    options: Tuple[Option, ...] = ()
    # Passes over the training split of the family's measured recipe on any task's data (a
    # pretrained model fine-tunes in a few, whatever the task); None: the task's own
    # (Task.default_epochs), which a model trained from scratch needs per task.
    recipe_epochs: Optional[float] = None

    @property
    def tunable(self) -> bool:
        return self.tuner_fn is not None

    def config(
        self, preset: Optional[str] = None, overrides: Optional[Mapping[str, Any]] = None
    ) -> PresetConfig:
        """The preset called `preset` (default: the family's) with `overrides` applied."""
        preset = preset or self.default_preset
        if preset not in self.presets:
            raise ValueError(
                f"unknown {self.name} preset {preset!r}; choose one of {sorted(self.presets)}"
            )
        return self.presets[preset].replace(**dict(overrides or {}))


# Kinds of model: a task names the kind it needs.
TEXT_CLASSIFIER = "text_classifier"
TRANSLATOR = "translator"
IMAGE_CLASSIFIER = "image_classifier"


def search_overrides(search_space: Sequence[Axis], values: Mapping[str, Any]) -> dict:
    """Config overrides for axis `values` (a trial's, or the best ones the Tuner wrote)."""
    unknown = sorted(set(values) - {axis.name for axis in search_space})
    if unknown:
        raise ValueError(
            f"values for unknown search axes {unknown}; the space has "
            f"{[axis.name for axis in search_space]}"
        )
    overrides = {}
    for axis in search_space:
        if axis.name in values:
            overrides.update(axis.overrides(values[axis.name]))
    return overrides
