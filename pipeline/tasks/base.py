"""A Task: everything the pipeline factory needs to know about one dataset: how it is read, the
kind of model it needs, its TFMA EvalConfig and blessing, its data options and drift checks,
its model card."""

import dataclasses
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import tensorflow_model_analysis as tfma
from tensorflow_metadata.proto.v0 import path_pb2, schema_pb2
from tfx.dsl.components.base.base_component import BaseComponent
from tfx.proto import distribution_validator_pb2

from components.seeded_split import EVAL_PERCENT
from trainer_module import features
from trainer_module.families import FAMILIES, get_family
from trainer_module.family import ModelFamily, Option


def overall_gate(lower_bound: float) -> list:
    """per_slice_thresholds for a task's gating metric: on the whole eval split (slices are
    reported, not gated), at least `lower_bound` and no worse than the latest blessed model
    (the tiny slack absorbs float noise)."""
    threshold = tfma.MetricThreshold(
        value_threshold=tfma.GenericValueThreshold(lower_bound={"value": lower_bound}),
        change_threshold=tfma.GenericChangeThreshold(
            direction=tfma.MetricDirection.HIGHER_IS_BETTER, absolute={"value": -1e-10}
        ),
    )
    return [tfma.PerSliceMetricThreshold(slicing_specs=[tfma.SlicingSpec()], threshold=threshold)]


@dataclasses.dataclass(frozen=True)
class Gate:
    """The metric that blesses a model, in the units the user sets its bound in."""

    metric: str  # the TFMA metric name, e.g. binary_accuracy
    unit: str  # how its values read, e.g. "a fraction, 0-1" or "BLEU points, 0-100"
    default: float  # the default lower bound
    low: float  # the range a bound may take
    high: float
    # A classifier task's metric on more than two classes (the task's eval_config says which).
    multiclass_metric: Optional[str] = None

    def metric_for(self, classes: Sequence[str] = ()) -> str:
        """The gating metric on data of `classes` (none: the task's usual data)."""
        if len(classes) > 2 and self.multiclass_metric:
            return self.multiclass_metric
        return self.metric

    def check(self, bound: float) -> float:
        if not self.low <= bound <= self.high:
            raise ValueError(
                f"--blessing-threshold {bound:g} is outside {self.metric}'s range "
                f"({self.unit}); pass a value from {self.low:g} to {self.high:g}"
            )
        return bound


@dataclasses.dataclass(frozen=True)
class DriftCheck:
    """A feature whose distribution in new data is compared with the champion's data (TFX's
    DistributionValidator; TFDV's comparators), and how far it may move."""

    feature: str
    what: str  # what the comparison watches, e.g. "label balance"
    threshold: float  # the default; --drift-thresholds FEATURE=VALUE sets another
    # TFDV's measure: jensen_shannon_divergence (a numeric feature's histogram, 0 to 1) or
    # infinity_norm (a categorical feature's value shares: the largest change, 0 to 1).
    measure: str = "jensen_shannon_divergence"

    def comparator(self, threshold: float) -> distribution_validator_pb2.FeatureComparator:
        measure = {
            "jensen_shannon_divergence": schema_pb2.JensenShannonDivergence,
            "infinity_norm": schema_pb2.InfinityNorm,
        }[self.measure]
        return distribution_validator_pb2.FeatureComparator(
            path=path_pb2.Path(step=[self.feature]),
            distribution_comparator=schema_pb2.FeatureComparator(
                **{self.measure: measure(threshold=threshold)}
            ),
        )


def text_drift_checks(words: str, tokens: str, texts: str) -> Tuple[DriftCheck, ...]:
    """The checks of a text's profile (components/text_profile.py), by its feature names.

    Thresholds from TFDV on real and embedded data: the length's divergence between two random
    halves of the same data is 0.03-0.04 at 1,000 texts or more and up to 0.16 at 48; the token
    distribution's largest change is 0.003-0.011 between halves, and 0.09-0.15 between English
    and German texts.
    """
    return (
        DriftCheck(words, f"{texts} length in words", threshold=0.25),
        DriftCheck(
            tokens,
            f"{texts} word distribution (another language, topic or encoding moves it)",
            threshold=0.05,
            measure="infinity_norm",
        ),
    )


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A data set a task knows (its embedded sample, a public corpus), and what a model card
    says of a model trained on it; `recognises(folder)` tells it by its files."""

    name: str
    intended_use: str
    limitations: Tuple[str, ...] = ()
    recognises: Callable[[str], bool] = lambda folder: False


def readme_says(text: str, *names: str) -> Callable[[str], bool]:
    """A Corpus.recognises: a README (under the folder, or one of `names` below it) holding
    `text`, as the public release ships it."""

    def recognises(folder: str) -> bool:
        for name in ("", *names):
            path = os.path.join(folder, name, "README")
            if os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    if text in f.read(4096):
                        return True
        return False

    return recognises


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    description: str
    default_data_dir: str
    # (data_dir, eval_percent, **data_options, spans=1) -> the ExampleGen that reads it.
    example_gen: Callable[..., BaseComponent]
    model_kind: str  # trainer_module.family: TEXT_CLASSIFIER, TRANSLATOR, IMAGE_CLASSIFIER
    default_model: str  # a family of that kind
    # (The lower bound on the gating metric, the model family, the data's classes) -> the TFMA
    # EvalConfig; a family's own TFMA metrics are in its evaluator module.
    eval_config: Callable[[float, ModelFamily, Sequence[str]], tfma.EvalConfig]
    gate: Gate
    default_train_steps: int  # on the embedded corpus: a run of about a minute
    default_eval_steps: int
    # The raw input the served model takes (text, source, image): what bulk inference reads.
    raw_feature: str
    # On other data (unless --train-steps or --epochs): the benchmark's recipe, in passes over
    # the training split; the Trainer turns it into steps from the examples it is given.
    default_epochs: float = 1.0
    # With default_epochs, on other data and the default family (unless --preset): the preset
    # the benchmark measured; None: the family's default preset.
    recipe_preset: Optional[str] = None
    # Options of the ExampleGen (translation: the languages); flags and variables follow.
    data_options: Tuple[Option, ...] = ()
    # Compared between new data and the champion's (a drifted span stops before training).
    drift_checks: Tuple[DriftCheck, ...] = ()
    # The model card's prose (run report). What any model of the task does ("binary
    # sentiment (positive or negative)"), of what ("texts"), learned from what ("labels");
    # the caveats that hold on any data; the data sets it knows, whose card says more.
    purpose: str = ""
    examples_noun: str = "examples"
    targets_noun: str = "labels"
    limitations: Tuple[str, ...] = ()
    embedded: Optional[Corpus] = None  # the embedded corpus (default_data_dir)
    corpora: Tuple[Corpus, ...] = ()  # public data sets, recognised by their files
    # A classifier whose classes are the data's: data folder -> the class names in label
    # order, read when the pipeline is built (its EvalConfig and model head fit them).
    read_classes: Optional[Callable[[str], Tuple[str, ...]]] = None
    default_classes: Tuple[str, ...] = ()  # when the data cannot be read then
    # The share of the training data held out for validation (in percent, by a hash of the
    # example ids seeded with configs.SPLIT_SEED) when the data has no validation split.
    eval_percent: int = EVAL_PERCENT

    @property
    def model_families(self) -> Dict[str, ModelFamily]:
        """The families of this task's kind, by name; the default first."""
        names = [self.default_model] + sorted(
            n for n, f in FAMILIES.items() if f.kind == self.model_kind and n != self.default_model
        )
        return {name: FAMILIES[name] for name in names}

    def recipe_epochs(self, model: Optional[str] = None) -> float:
        """The epochs of the benchmark recipe of `model` (default: the task's default family):
        the family's own where it has them (a pretrained one's fine-tuning), else the task's."""
        family = self.model_family(model)
        return self.default_epochs if family.recipe_epochs is None else family.recipe_epochs

    def model_family(self, model: Optional[str]) -> ModelFamily:
        model = model or self.default_model
        if model not in self.model_families:
            get_family(model)  # an unknown name says so
            raise ValueError(
                f"task {self.name!r} has no model family {model!r}; "
                f"choose one of {sorted(self.model_families)}"
            )
        return self.model_families[model]

    def reading_options(self, given: Optional[Mapping[str, Any]] = None) -> dict:
        """The task's data options, as strings, with `given` applied; unknown names are an
        error."""
        given = {k: v for k, v in (given or {}).items() if v is not None}
        known = {option.name: option for option in self.data_options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(
                f"task {self.name!r} takes no data option(s) {unknown}; "
                f"known: {sorted(known) or 'none'}"
            )
        return {
            name: str(option.type(given.get(name, option.default)))
            for name, option in known.items()
        }

    def blessing_eval_config(
        self, family: ModelFamily, bound: Optional[float] = None, classes: Sequence[str] = ()
    ) -> tfma.EvalConfig:
        """The EvalConfig of `family`'s model on data of `classes` (none: the task's usual
        data) with the gate at `bound` (default: the task's), range-checked."""
        bound = self.gate.check(self.gate.default if bound is None else bound)
        return self.eval_config(bound, family, tuple(classes) or self.default_classes)

    def drift_thresholds(self, given: Optional[Mapping[str, float]] = None) -> Dict[str, float]:
        """Feature -> threshold: the task's defaults with `given` applied; a feature the task
        does not check is an error."""
        known = {check.feature: check.threshold for check in self.drift_checks}
        unknown = sorted(set(given or {}) - set(known))
        if unknown:
            raise ValueError(
                f"--drift-thresholds: task {self.name!r} checks no feature "
                f"{unknown[0]!r} for drift; it checks {sorted(known) or 'none'}"
            )
        return {**known, **(given or {})}

    def drift_descriptions(self, given: Optional[Mapping[str, float]] = None) -> list:
        """One line per drift check, at its threshold, for the run report."""
        thresholds = self.drift_thresholds(given)
        return [
            f"{check.feature}: {check.what}, {check.measure.replace('_', ' ')} at most "
            f"{thresholds[check.feature]:g}"
            for check in self.drift_checks
        ]

    def distribution_validator_config(
        self, given: Optional[Mapping[str, float]] = None
    ) -> Optional[distribution_validator_pb2.DistributionValidatorConfig]:
        """DistributionValidator's config: each drift check at its threshold; None when the
        task checks nothing."""
        thresholds = self.drift_thresholds(given)
        if not thresholds:
            return None
        config = distribution_validator_pb2.DistributionValidatorConfig()
        config.default_slice_config.feature.extend(
            check.comparator(thresholds[check.feature]) for check in self.drift_checks
        )
        return config

    def skew_validator_config(
        self, given: Optional[Mapping[str, float]] = None
    ) -> Optional[distribution_validator_pb2.DistributionValidatorConfig]:
        """The drift checks that serving data can be held to (its raw input's profile: no
        label), at their thresholds; None when there are none (images)."""
        config = self.distribution_validator_config(given)
        served = set(features.PROFILES.get(self.raw_feature, ()))
        if config is None or not served:
            return None
        checks = [c for c in config.default_slice_config.feature if c.path.step[0] in served]
        del config.default_slice_config.feature[:]
        config.default_slice_config.feature.extend(checks)
        return config

    def corpus_of(self, data_dir: Any) -> Optional[Corpus]:
        """The data set a local `data_dir` is, when the task knows it (its embedded corpus, or
        a public corpus by its files); None for other data, patterns and remote folders."""
        if not isinstance(data_dir, str) or not os.path.isdir(data_dir):
            return None
        if self.embedded and os.path.abspath(data_dir) == os.path.abspath(self.default_data_dir):
            return self.embedded
        return next((c for c in self.corpora if c.recognises(data_dir)), None)

    def model_card(
        self,
        model: str,
        preset: Optional[str] = None,
        data_dir: Any = None,
        classes: Sequence[str] = (),
    ) -> dict:
        """What the run report's model card says about this task trained with `model` on
        `data_dir` (None, or a runtime parameter: the job's data folder) of `classes` (none:
        the task's usual): the data set's own intended use and caveats when the task knows it,
        else the data's folder's."""
        corpus = self.corpus_of(data_dir)
        classes = tuple(classes)
        purpose = self.purpose
        if classes and classes != self.default_classes:
            corpus = None  # not the corpus the task knows, whatever its files
            purpose = f"text classification into {len(classes)} classes ({', '.join(classes)})"
        if corpus is not None:
            data, intended_use = corpus.name, corpus.intended_use
            limitations = corpus.limitations
        else:
            data = data_dir if isinstance(data_dir, str) and data_dir else "the job's data folder"
            nouns = self.examples_noun
            intended_use = (
                f"{purpose[:1].upper()}{purpose[1:]}, for {nouns} like those in "
                f"{data}, as this pipeline trained it. Check it on {nouns} from where it will "
                "be used before relying on it; not for decisions about people."
            )
            limitations = (
                f"Trained on {data} only: {nouns} from other sources, domains or languages "
                "are out of distribution.",
                f"Learned from the {self.targets_noun} in {data}, with whatever errors and "
                "biases they carry.",
            )
        return {
            "task": self.name,
            "model": model,
            "preset": preset or self.model_family(model).default_preset,
            "description": f"{purpose[:1].upper()}{purpose[1:]}, trained on {data}",
            "data": data,
            "corpus": corpus is not None,
            "intended_use": intended_use,
            "limitations": [*limitations, *self.limitations],
            "gating_metric": self.gate.metric_for(classes),
            **({"classes": list(classes)} if classes else {}),
        }
