"""The one options object: every setting of a pipeline run, built once from CLI flags
(`tfx-transformers run|compile`) or from TFXT_* environment variables (the TFX CLI's DSL file
and the Kubeflow runner scripts, same names everywhere), and consumed by the factory.

Flags and variables are generated from the declarations: the fields below, each task's data
options and each model family's options (trainer_module/family.py: Option). A field `beam_mode`
is the flag `--beam-mode` and the variable `TFXT_BEAM_MODE`.
"""

import argparse
import dataclasses
import json
import os
import re
import shlex
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from components.reviews_example_gen.classes import format_classes, parse_classes
from pipeline import configs
from pipeline.configs import flag
from pipeline.tasks import TASKS, Task, get_task, task_name
from trainer_module.families import FAMILIES
from trainer_module.family import ModelFamily, Option, PresetConfig, PretrainingConfig
from trainer_module.training import precision
from trainer_module.training.inputs import TrainerOptions

ENV_PREFIX = "TFXT_"


def positive_int(text) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(f"must be a positive integer, not {text}")
    return value


def positive_float(text) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(f"must be a positive number, not {text}")
    return value


def parse_override(text: str) -> Tuple[str, Any]:
    """KEY=VALUE with VALUE read as JSON when it parses (numbers, booleans), else a string."""
    if "=" not in text:
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parse_thresholds(text: str) -> Tuple[Tuple[str, float], ...]:
    """FEATURE=VALUE[,FEATURE=VALUE...] -> ((feature, value), ...), each value above 0."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        feature, value = parse_override(item)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise ValueError(f"{item!r}: expected FEATURE=NUMBER with a number above 0")
        pairs.append((feature, float(value)))
    return tuple(pairs)


def by_task(describe: Callable[[Task], str], separator: str = "; ") -> str:
    """What each task says in an option's help, by task name (tasks that say nothing left out)."""
    said = (describe(t) for t in sorted(TASKS.values(), key=lambda t: t.name))
    return separator.join(text for text in said if text)


def _field(default, help: str, parse: Callable = str, local: bool = False, metavar=None):
    """A declared option: its default, help, parser and whether only local runs take it."""
    return dataclasses.field(
        default=default, metadata={"help": help, "parse": parse, "local": local, "metavar": metavar}
    )


@dataclasses.dataclass(frozen=True)
class PipelineOptions:
    """What to run and how; where it runs (paths, Beam, the cloud) is the runners' business."""

    task: str = _field(
        "imdb",
        "a task the factory knows: "
        + ", ".join(sorted(TASKS))
        + "; or the alias text (texts in any classes: imdb) or images (images in any classes: "
        "cifar10), each with the task's sample as its default data",
        task_name,
    )
    model: Optional[str] = _field(
        None, "the model family (default: the task's first): " + ", ".join(sorted(FAMILIES))
    )
    data: Optional[str] = _field(
        None,
        "input data directory (default: the task's embedded corpus; compile: <DATA_ROOT>/<task>)",
        metavar="DIR",
    )
    pipeline_name: str = _field(
        "",
        "the pipeline's name: its folders, ML Metadata, registered model and serving folder, so "
        "runs under two names share no warm start, drift baseline or champion (default: on "
        "the embedded corpus <task>-<family>, e.g. imdb-text-encoder; with --data DIR, "
        "<DIR's name>-<family>, e.g. shop-reviews-text-encoder)",
        configs.check_pipeline_name,
        metavar="NAME",
    )
    preset: Optional[str] = _field(
        None,
        "the family's preset (default: on your data with the task's default family, the task's "
        "benchmark recipe, "
        + by_task(lambda t: f"{t.name}: {t.recipe_preset}" if t.recipe_preset else "")
        + "; otherwise the family's default)",
    )
    overrides: Mapping[str, Any] = _field(
        None,
        "override a preset field, e.g. d_model=128 (repeatable; TFXT_SET: space-separated)",
        metavar="KEY=VALUE",
    )
    data_options: Mapping[str, Any] = _field(None, "the task's data options")
    epochs: Optional[float] = _field(
        None,
        "passes over the training split; the Trainer computes its steps from the number "
        "of training examples (default on your data: the task's benchmark recipe, "
        + by_task(lambda t: f"{t.name}: {t.default_epochs:g}")
        + "; "
        + "; ".join(
            f"--model {f.name}: {f.recipe_epochs:g} on any task"
            for f in sorted(FAMILIES.values(), key=lambda f: f.name)
            if f.recipe_epochs is not None
        )
        + "; on the embedded corpus: the "
        "task's steps)",
        positive_float,
    )
    train_steps: Optional[int] = _field(None, "optimizer steps, instead of --epochs", positive_int)
    time_budget: Optional[float] = _field(
        None,
        "minutes of training at most: the Trainer times a few steps on this machine first and "
        "trains only the steps that fit, with the learning-rate schedule over them (the n-gram "
        "path, Transform and evaluation come on top)",
        positive_float,
        metavar="MINUTES",
    )
    eval_steps: Optional[int] = _field(
        None,
        "validation batches per evaluation (default: the task's, "
        + by_task(lambda t: f"{t.name} {t.default_eval_steps}", ", ")
        + ")",
        positive_int,
    )
    blessing_threshold: Optional[float] = _field(
        None,
        "lower bound on the task's gating metric, in its unit: "
        + by_task(
            lambda t: f"{t.name}: {t.gate.metric} ({t.gate.unit}, default {t.gate.default:g})"
        ),
        float,
    )
    schema: Optional[str] = _field(
        None,
        "a curated schema (text proto) to validate the data "
        "against, e.g. data/imdb/schema.pbtxt (default: "
        "inferred from the data)",
        metavar="PATH",
    )
    drift_thresholds: Tuple[Tuple[str, float], ...] = _field(
        (),
        "how far a checked feature's distribution may move from the champion's data before "
        "the run stops, e.g. label=0.2 (comma-separated; "
        + by_task(
            lambda t: f"{t.name}: "
            + (", ".join(f"{c.feature} {c.threshold:g}" for c in t.drift_checks) or "none")
        )
        + ")",
        parse_thresholds,
        metavar="FEATURE=VALUE",
    )
    spans: int = _field(
        1,
        "with a {SPAN} in --data: train on the newest span and the spans before it, N in "
        "all (a rolling window); the newest span alone is validated, checked for drift and "
        "evaluated on",
        positive_int,
        metavar="N",
    )
    tune: bool = _field(
        False,
        "search the family's space with a Tuner first; the Trainer uses the best values",
        flag,
    )
    tuner_trials: int = _field(configs.TUNER_TRIALS, "KerasTuner trials with --tune", positive_int)
    mixed_precision: str = _field(
        configs.MIXED_PRECISION,
        "the Trainer's dtype policy: auto (mixed precision where the "
        "hardware has a fast path: float16 on GPUs, bfloat16 on CPUs with AMX/AVX512-BF16), on, "
        "off, or a Keras policy name (" + ", ".join(precision.POLICIES) + ")",
    )
    no_cache: bool = _field(False, "rerun every component", flag)
    dry_run: bool = _field(
        False,
        "read, count and check the data, print the plan and the projected minutes, and stop "
        "before Transform (nothing is trained or pushed)",
        flag,
        local=True,
    )
    # Local runs only.
    output: str = _field(
        configs.DEFAULT_OUTPUT_DIR,
        "pipeline roots, MLMD, logs and pushed models",
        local=True,
        metavar="DIR",
    )
    beam_mode: str = _field(
        configs.DEFAULT_BEAM_MODE,
        "Beam on this machine: " + ", ".join(sorted(configs.BEAM_MODES)),
        local=True,
    )
    registry: str = _field(
        configs.DEFAULT_REGISTRY,
        "register pushed models in MLflow (MLFLOW_TRACKING_URI, else a "
        "local registry under the output) or not: mlflow, none",
        local=True,
    )
    metadata_uri: str = _field(
        "",
        "ML Metadata on a MySQL or MariaDB server, mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE "
        "(default: a SQLite file under the output)",
        configs.check_metadata_uri,
        local=True,
        metavar="URI",
    )

    def __post_init__(self):
        object.__setattr__(self, "task", task_name(self.task))  # `text` is imdb, and so on
        object.__setattr__(self, "overrides", dict(self.overrides or {}))
        object.__setattr__(self, "data_options", dict(self.data_options or {}))

    # What the options name.

    @property
    def task_spec(self) -> Task:
        return get_task(self.task)

    @property
    def family(self) -> ModelFamily:
        return self.task_spec.model_family(self.model)

    def training_epochs(self, data_dir: str) -> Optional[float]:
        """The epochs the Trainer trains, or None when it trains a number of steps: --epochs;
        else --train-steps; else the task's steps on its embedded corpus (`data_dir` is the
        task's default) and the task's epochs on any other data."""
        if self.epochs is not None or self.train_steps is not None:
            return self.epochs
        task = self.task_spec
        embedded = os.path.abspath(data_dir) == os.path.abspath(task.default_data_dir)
        return None if embedded else task.recipe_epochs(self.family.name)

    @property
    def preset_name(self) -> str:
        """--preset; else, on data other than the embedded corpus with the task's default family,
        the task's recipe preset (the one its benchmark measured) where it has one; else the
        family's default preset."""
        task = self.task_spec
        data = os.path.abspath(self.data or task.default_data_dir)
        recipe = (
            task.recipe_preset
            and self.family.name == task.default_model
            and data != os.path.abspath(task.default_data_dir)
        )
        if self.preset:
            return self.preset
        return task.recipe_preset if recipe and task.recipe_preset else self.family.default_preset

    @property
    def name(self) -> str:
        """The pipeline's name: its folders, its ML Metadata context, its registered model and
        serving folder, hence what its warm start, drift baseline and champion are looked up
        under: --pipeline-name; else, on data other than the task's embedded corpus, the data
        folder's name and the family (a folder `shop-reviews`: shop-reviews-text-encoder), so
        that a new source never meets another source's champion; else <task>-<family>
        (imdb-text-encoder)."""
        family = self.family.name.replace("_", "-")
        if self.pipeline_name:
            return self.pipeline_name
        if self.named_after_data:
            return f"{data_name(self.data or '', len(family) + 1)}-{family}"
        return f"{self.task}-{family}"

    @property
    def named_after_data(self) -> bool:
        """Whether the pipeline's name comes from --data: no --pipeline-name, and data other
        than the task's embedded corpus."""
        return bool(
            not self.pipeline_name
            and self.data
            and not _same_path(self.data, self.task_spec.default_data_dir)
        )

    def model_config(self, classes: Sequence[str] = ()) -> PresetConfig:
        """The family's preset with the overrides (and what `classes` set: model_overrides);
        raises on an unknown preset or field."""
        return self.family.config(self.preset_name, self.model_overrides(classes))

    def data_classes(self, reading: Mapping[str, str]) -> Tuple[str, ...]:
        """A classifier task's classes, in label order: the `classes` data option, else read
        from --data (or the embedded corpus) now, where it is a local folder; else the task's
        usual classes. () for tasks whose model fixes its outputs (translation) or reads them
        in the Trainer (images)."""
        task = self.task_spec
        if task.read_classes is None:
            return ()
        given = parse_classes(reading.get("classes", ""))
        if given:
            return given
        data = self.data or task.default_data_dir
        folder = os.path.dirname(data.split("{SPAN}")[0]) if "{SPAN}" in data else data
        if "://" in data or not os.path.isdir(folder or "."):
            return task.default_classes
        return task.read_classes(data)

    def model_overrides(self, classes: Sequence[str] = ()) -> Dict[str, Any]:
        """The overrides with what the data's `classes` set first: the head's num_classes (and
        with it the n-gram path's, one-vs-rest above two), unless --set gives it."""
        config: Any = self.family.config(self.preset_name)
        fitted: Dict[str, Any] = {}
        if classes and getattr(config, "num_classes", len(classes)) != len(classes):
            fitted["num_classes"] = len(classes)
        return {**fitted, **self.overrides}

    def resolve(self) -> "ResolvedRun":
        """The options checked, once, into the plain values the factory consumes; raises
        ValueError naming the first setting that cannot work."""
        task, family = self.task_spec, self.family
        reading = task.reading_options(self.data_options)
        classes = self.data_classes(reading)
        if classes:
            reading["classes"] = format_classes(classes)
        resolved = ResolvedRun(
            options=self,
            task=task,
            family=family,
            preset=self.preset_name,
            model_config=self.model_config(classes),
            overrides=self.model_overrides(classes),
            classes=classes,
            reading=reading,
            drift_thresholds=task.drift_thresholds(dict(self.drift_thresholds)),
            blessing_threshold=task.gate.check(
                task.gate.default if self.blessing_threshold is None else self.blessing_threshold
            ),
            name=self.name,
            spans=self.spans,
            schema=self.schema,
            time_budget=self.time_budget,
            tuner_trials=self.tuner_trials if self.tune else 0,
            enable_cache=not self.no_cache,
        )
        if self.tune and not self.family.tunable:
            raise ValueError(
                f"the {self.family.name!r} model family has no search space; run it without --tune"
            )
        precision.check_setting(self.mixed_precision)
        if self.epochs is not None and self.train_steps is not None:
            raise ValueError(
                f"give epochs ({self.epochs:g}) or train_steps ({self.train_steps}), not both"
            )
        if self.beam_mode not in configs.BEAM_MODES:
            raise ValueError(
                f"beam_mode must be one of {sorted(configs.BEAM_MODES)}, not {self.beam_mode!r}"
            )
        if self.registry not in configs.REGISTRIES:
            raise ValueError(f"registry must be one of {configs.REGISTRIES}, not {self.registry!r}")
        configs.check_pipeline_name(self.pipeline_name)
        configs.check_metadata_uri(self.metadata_uri)
        return resolved

    def check(self) -> "PipelineOptions":
        """Raises ValueError naming the first setting that cannot work; returns self."""
        self.resolve()
        return self

    def local_paths(self) -> "PipelineOptions":
        """The options with local paths made absolute (data, schema, path-valued fields)."""
        overrides = dict(self.overrides)
        for option in self.family.options:
            field = option.config_field
            value = overrides.get(field) if field else None
            if not (field and option.is_path and isinstance(value, str)):
                continue
            if os.path.exists(value):
                overrides[field] = os.path.abspath(value)
            elif _is_local_path(value):
                raise FileNotFoundError(f"{option.flag} {value}: no such file or folder")
        if self.schema and not os.path.isfile(self.schema):
            raise FileNotFoundError(f"schema file not found: {self.schema}")
        return dataclasses.replace(
            self,
            overrides=overrides,
            data=os.path.abspath(self.data or self.task_spec.default_data_dir),
            schema=os.path.abspath(self.schema) if self.schema else None,
        )

    def check_cloud_paths(self) -> "PipelineOptions":
        """Refuses local paths a cloud job could not read: a local BERT preset directory, a
        local schema file."""
        for field in _path_fields(self.family):
            value = self.overrides.get(field) or ""
            if isinstance(value, str) and _is_local_path(value):
                option = next(o for o in self.family.options if o.config_field == field)
                raise ValueError(
                    f"{option.flag} {value} is a local path, which a cloud pipeline cannot "
                    f"read: copy it to a bucket and pass its gs:// path, or pass a preset name"
                )
        if self.schema and _is_local_path(self.schema):
            raise ValueError(
                f"--schema {self.schema} is a local path, which a cloud pipeline "
                "cannot read: copy it to a bucket and pass its gs:// path"
            )
        return self

    # Building it.

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "PipelineOptions":
        """From the flags `add_arguments` declared (absent local ones keep their defaults)."""
        values = {
            f.name: getattr(args, f.name)
            for f in _declared_fields()
            if getattr(args, f.name, None) is not None
        }
        values["overrides"] = dict(getattr(args, "overrides", None) or [])
        values["data_options"] = {
            o.name: getattr(args, o.name)
            for o in _task_options()
            if getattr(args, o.name, None) is not None
        }
        family_values = {
            o: getattr(args, o.name)
            for o in _family_options()
            if getattr(args, o.name, None) is not None
        }
        return cls(**values)._with_family_options(family_values)

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] = os.environ, **defaults
    ) -> "PipelineOptions":
        """From TFXT_* variables (unset or empty ones keep `defaults`, then the defaults)."""

        def get(name: str) -> Optional[str]:
            value = environ.get(ENV_PREFIX + name.upper(), "")
            return value if value.strip() else None

        values = dict(defaults)
        for field in _declared_fields():
            text = get(field.name)
            if text is not None:
                values[field.name] = _parse(
                    field.metadata["parse"], text, ENV_PREFIX + field.name.upper()
                )
        text = get("set")
        if text is not None:
            values["overrides"] = dict(
                _parse(parse_override, item, ENV_PREFIX + "SET") for item in shlex.split(text)
            )
        values["data_options"] = {
            o.name: _parse(o.type, text, o.environment_variable)
            for o in _task_options()
            if (text := get(o.name)) is not None
        }
        family_values = {o: get(o.name) for o in _family_options() if get(o.name) is not None}
        return cls(**values)._with_family_options(family_values)

    def _with_family_options(self, given: Dict[Option, Any]) -> "PipelineOptions":
        """Family options (--bert-preset) become overrides of the fields they name."""
        overrides = dict(self.overrides)
        for option, value in given.items():
            if option not in self.family.options:
                owners = [f.name for f in FAMILIES.values() if option in f.options]
                raise ValueError(f"{option.flag} goes with --model {' or '.join(owners)}")
            if option.config_field is None:
                raise ValueError(f"{option.flag} names no field of the model's config")
            overrides[option.config_field] = option.type(value)
        return dataclasses.replace(self, overrides=overrides)


@dataclasses.dataclass(frozen=True)
class ResolvedRun:
    """What the pipeline factory consumes: the options, checked once (PipelineOptions.resolve),
    and the values they resolve to."""

    options: PipelineOptions
    task: Task
    family: ModelFamily
    preset: str  # the family's preset (its default when none was named)
    model_config: PresetConfig  # the preset with the overrides
    overrides: Mapping[str, Any]  # --set's, with what the data's classes set (model_overrides)
    classes: Tuple[str, ...]  # a text classifier's, in label order (data_classes); else ()
    reading: Mapping[str, str]  # the ExampleGen's data options
    drift_thresholds: Mapping[str, float]  # every drift check's threshold
    blessing_threshold: float  # the lower bound on the task's gating metric
    name: str  # the pipeline's
    spans: int  # spans read for training (1: the newest)
    schema: Optional[str]  # a curated schema file, or None (SchemaGen infers one)
    time_budget: Optional[float]  # minutes, or None
    tuner_trials: int  # 0: no Tuner
    enable_cache: bool

    @property
    def reads_unlabeled(self) -> bool:
        """Whether the run pretrains (the config's pretrain_epochs): its ExampleGen then reads
        the data's unlabelled texts too, into a split that Transform transforms and only
        pretraining reads (pipeline/factory.py)."""
        config = self.model_config
        return isinstance(config, PretrainingConfig) and config.pretrain_epochs > 0

    def trainer_settings(self, data_dir: str) -> "TrainerSettings":
        """What the Trainer (and the Tuner) are given for data in `data_dir`: steps, or none
        and the epochs in the custom_config (the Trainer counts its examples)."""
        options, task = self.options, self.task
        epochs = options.training_epochs(data_dir)
        return TrainerSettings(
            train_steps=None if epochs else options.train_steps or task.default_train_steps,
            eval_steps=options.eval_steps or task.default_eval_steps,
            # The Trainer reads these strictly (trainer_module/training/inputs.py).
            custom_config=TrainerOptions(
                task=task.name,
                model=self.family.name,
                preset=self.preset,
                overrides=self.overrides,
                seed=configs.TRAINING_SEED,
                mixed_precision=options.mixed_precision,
                epochs=epochs,
                time_budget_minutes=options.time_budget,
            ).as_custom_config(),
        )


@dataclasses.dataclass(frozen=True)
class TrainerSettings:
    """The Trainer's arguments, resolved (ResolvedRun.trainer_settings)."""

    train_steps: Optional[int]  # None: custom_config["epochs"] sets them
    eval_steps: int
    custom_config: Mapping[str, Any]


def _declared_fields():
    """The fields with a flag and a variable of their own."""
    return [
        f
        for f in dataclasses.fields(PipelineOptions)
        if f.name not in ("overrides", "data_options")
    ]


def _task_options() -> list:
    """Every task's data options, once per name."""
    return list({o.name: o for t in TASKS.values() for o in t.data_options}.values())


def _family_options() -> list:
    return list({o.name: o for f in FAMILIES.values() for o in f.options}.values())


def _path_fields(family: ModelFamily) -> list:
    return [o.config_field for o in family.options if o.is_path and o.config_field]


def data_name(data: str, room: int = 0) -> str:
    """The part of a pipeline name that `data` gives: its folder's name (the folder above a
    {SPAN} pattern; a file's name without its extension) in lower-case letters, digits and
    hyphens, at most 63 - `room` characters; "data" when nothing is left."""
    parts = [p for p in re.split(r"[/\\]+", str(data)) if p not in ("", ".")]
    span = next((i for i, p in enumerate(parts) if "{SPAN}" in p), None)
    if span is not None:
        parts = parts[:span]
    if not parts and str(data).startswith("/"):  # the root folder
        base = ""
    elif not parts or parts[-1] == "..":  # a folder known only by where it is
        base = os.path.basename(os.path.abspath(os.path.join(*parts) if parts else "."))
    else:
        base = parts[-1]
    base = re.sub(r"\.(csv|tsv|jsonl?|txt|tfrecords?|gz|zip|tar)$", "", base.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", base).strip("-")[: 63 - room].strip("-")
    return slug or "data"


def _same_path(a: str, b: str) -> bool:
    return os.path.abspath(str(a)).rstrip("/") == os.path.abspath(str(b)).rstrip("/")


def _is_local_path(value: str) -> bool:
    """A file-system path rather than a URI (gs://, hf://, kaggle://) or a preset name."""
    return "://" not in value and (
        os.sep in value or value.startswith(".") or os.path.exists(value)
    )


def _parse(parse: Callable, text: str, name: str):
    try:
        return parse(text)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}={text!r}: {error}") from None


# The options `infer` takes: which pipeline's champion scores, and how Beam runs the scoring.
INFER_OPTIONS = ("task", "model", "pipeline_name", "beam_mode", "metadata_uri", "no_cache")


def add_arguments(
    parser: argparse.ArgumentParser, local: bool, only: Optional[Sequence[str]] = None
) -> None:
    """Every option's flag (the local-only ones with `local`), `--set`, the tasks' and the
    families'; with `only`, the flags of those options alone."""
    for field in _declared_fields():
        if only is not None and field.name not in only:
            continue
        meta = field.metadata
        if meta["local"] and not local:
            continue
        name = "--" + field.name.replace("_", "-")
        help_text = meta["help"]
        if meta["parse"] is flag:
            parser.add_argument(name, action="store_true", default=None, help=help_text)
            continue
        default = field.default if meta["local"] else None
        if default is not None and default != "" and "(default:" not in help_text:
            help_text += f" (default: {default})"
        parser.add_argument(
            name,
            type=_argparse_type(meta["parse"]),
            default=default,
            metavar=meta["metavar"],
            help=help_text,
        )
    if only is not None:
        return
    parser.add_argument(
        "--set",
        dest="overrides",
        type=_argparse_type(parse_override),
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=PipelineOptions.__dataclass_fields__["overrides"].metadata["help"],
    )
    for option in _task_options():
        tasks = [t.name for t in TASKS.values() if option in t.data_options]
        parser.add_argument(
            option.flag,
            type=_argparse_type(option.type),
            help=(f"{'/'.join(tasks)}: {option.help} (default: {option.default})"),
        )
    for option in _family_options():
        families = [f.name for f in FAMILIES.values() if option in f.options]
        parser.add_argument(
            option.flag,
            type=_argparse_type(option.type),
            metavar="VALUE",
            help=f"with --model {'/'.join(families)}: {option.help}",
        )


def _argparse_type(parse: Callable) -> Callable:
    def convert(text):
        try:
            return parse(text)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert
