"""MkDocs hooks (mkdocs.yml `hooks:`): what the documentation says about the code and about
measurements is generated from them when the site is built, so that it cannot drift.

In any page:
- `{{ tasks.cifar10.default_epochs }}`, `{{ presets.vit.cct.mixup_alpha }}`,
  `{{ configs.TUNER_TRIALS }}`, `{{ contract.MAX_ROWS }}`: a value read from the code (roots:
  `tasks`, `families`, `presets`, `configs`, `contract`; then keys or attributes);
- `{{ cli_reference }}`: every command of the CLI with its options, from its own parsers, and
  every pipeline option with its environment variable, from `PipelineOptions`;
- `{{ results BENCHMARK [FIELD=VALUE ...] }}`: every results file of a benchmark
  (benchmarks/results/BENCHMARK/) whose fields match, newest first: its figures beside their
  references and ratios, its tables and notes;
- `{{ result BENCHMARK/NAME key.path }}`: one figure of one results file;
- `{{ plot NAME }}`: a plot drawn from the results files (PLOTS below);
- `{{ config_table FAMILY }}`: a model family's config fields, each with its comment, its
  default and its value in every preset that changes it.

A Kubeflow Pipelines placeholder a page quotes (`{{$.pipeline_job_name}}`) is left as it is.
"""

import glob
import io
import json
import os
import re
import sys
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "benchmarks", "results")
PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")

# How a measured key reads in a table.
LABELS = {
    "accuracy": "validation accuracy (TFMA)",
    "bert_alone_accuracy": "validation accuracy of BERT's path alone (Keras)",
    "wide_alone_accuracy": "validation accuracy of the n-gram path alone (Keras)",
    "deep_alone_accuracy": "validation accuracy of the deep path alone (BERT or the encoder)",
    "wide_path_seconds": "the wide path's training and the combination (s)",
    "calibration": "calibration: mean prediction / mean label (TFMA)",
    "top3_accuracy": "top-3 accuracy (TFMA)",
    "bleu": "BLEU, cased, sacreBLEU 13a (TFMA)",
    "bleu_lowercase_tokenized": "BLEU, lower-cased tokenized (TFMA)",
    "token_accuracy": "token accuracy, teacher-forced",
    "wall_seconds": "whole pipeline, wall time (s)",
    "fit_seconds": "training, Keras fit (s)",
    "fit_minutes": "training, Keras fit (min)",
    "peak_memory_gb": "peak memory, this process and its children (GB)",
    "train_examples_per_second": "training examples per second (validation included)",
    "train_images_per_second": "training images per second (validation included)",
    "target_words_per_second": "training target words per second",
    "achieved_tflops": "training arithmetic (TFLOP/s)",
    "fraction_of_peak": "share of this CPU's matmul peak",
    "peak_tflops": "this CPU's matmul peak (TFLOP/s)",
    "step_gflop": "GFLOP per training step",
    "precision": "dtype policy",
    "parameters": "parameters",
    "latency_ms_batch_1": "serving, one input, in-process (ms)",
    "latency_ms_http": "serving, one input, over HTTP (ms)",
}


def _sys_path() -> None:
    for path in (REPO, os.path.join(REPO, "benchmarks")):
        if path not in sys.path:
            sys.path.insert(0, path)


# Values read from the code.


def code_roots() -> Dict[str, Any]:
    _sys_path()
    from components.model_registry import mlflow_registry
    from pipeline import configs
    from pipeline.tasks import TASKS
    from trainer_module.families import FAMILIES
    from trainer_module.serving import contract

    return {
        "tasks": TASKS,
        "families": FAMILIES,
        "configs": configs,
        "contract": contract,
        "mlflow_registry": mlflow_registry,
        "presets": {name: family.presets for name, family in FAMILIES.items()},
    }


def lookup(root: Any, path: List[str]) -> Any:
    value = root
    for part in path:
        if isinstance(value, dict):
            if part not in value:
                raise KeyError(f"no {part!r} in {sorted(value)}")
            value = value[part]
        elif isinstance(value, list) and part.isdigit():  # a table's row or cell, by index
            value = value[int(part)]
        elif hasattr(value, part):
            value = getattr(value, part)
        else:
            raise KeyError(f"{type(value).__name__} has no {part!r}")
    return value


def show(value: Any) -> str:
    """A value as the docs print it: 20,000; 0.0003; true; a string as it is."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def field_comments(config_class) -> Dict[str, str]:
    """Each dataclass field's comment: the comment lines just above it and the one after it, in
    the class that declares it (a config's own, or a mixin's such as WidePathConfig)."""
    import dataclasses
    import inspect

    comments = {}
    for field in dataclasses.fields(config_class):
        owner = next(
            c for c in config_class.__mro__ if field.name in getattr(c, "__annotations__", {})
        )
        lines = inspect.getsource(owner).splitlines()
        index = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{field.name}:"))
        above = []
        for line in reversed(lines[:index]):
            if not line.strip().startswith("#"):
                break
            above.insert(0, line.strip().lstrip("#").strip())
        after = lines[index].split("#", 1)[1].strip() if "#" in lines[index] else ""
        comments[field.name] = " ".join(above + ([after] if after else []))
    return comments


def config_table(family_name: str) -> str:
    import dataclasses

    family = code_roots()["families"][family_name]
    config_class = type(family.config())
    default = config_class()
    presets = family.presets
    comments = field_comments(config_class)
    rows = []
    for field in dataclasses.fields(config_class):
        values = [getattr(p, field.name) for p in presets.values()]
        rows.append(
            [f"`{field.name}`", comments[field.name], getattr(default, field.name)]
            + [v if v != getattr(default, field.name) else "" for v in values]
        )
    columns = ["field", "what it is, and why", "default"] + [
        f"`{name}`" + (" (the family's default)" if name == family.default_preset else "")
        for name in presets
    ]
    return _table(columns, rows)


# Results files.


def load_results(benchmark: str) -> List[dict]:
    """A benchmark's results files, newest first (then by name)."""
    records = []
    for path in glob.glob(os.path.join(RESULTS_DIR, benchmark, "*.json")):
        with open(path) as f:
            record = json.load(f)
        record.setdefault("name", os.path.splitext(os.path.basename(path))[0])
        records.append(record)
    if not records:
        raise FileNotFoundError(f"no results files in benchmarks/results/{benchmark}/")
    return sorted(records, key=lambda r: (r.get("date", ""), r["name"]), reverse=True)


def _machine(record: dict) -> str:
    machine = record.get("machine") or {}
    if isinstance(machine, str):
        return machine
    flags = machine.get("bfloat16_flags")
    parts = [
        machine.get("cpu"),
        f"CPU family {machine['cpu_family']} model {machine.get('cpu_model_number', '?')}"
        if machine.get("cpu_family")
        else "CPU family and model not recorded",
        ("bfloat16: " + "/".join(flags))
        if flags
        else "no bfloat16 instructions"
        if flags == []
        else None,
        f"{machine['cores']} cores" if machine.get("cores") else None,
        f"{machine['memory_gb']} GB" if machine.get("memory_gb") else None,
        f"Python {machine['python']}" if machine.get("python") else None,
    ]
    return ", ".join(p for p in parts if p)


def _short_machine(record: dict) -> str:
    """The CPU's name, and its family and model numbers where the record has them."""
    machine = record.get("machine") or {}
    if isinstance(machine, str):
        return machine
    cpu = (machine.get("cpu") or "?").replace("(R)", "").replace(" Processor", "")
    if machine.get("cpu_family"):
        cpu += f" ({machine['cpu_family']}/{machine.get('cpu_model_number', '?')})"
    return cpu


def _table(columns: List[str], rows: List[list]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    """A table cell: pipes escaped, and `<...>` kept as text rather than read as HTML."""
    if value is None:
        return ""
    text = show(value).replace("|", "\\|").replace("\n", " ")
    parts = text.split("`")  # outside code spans (the even parts), < and > are entities
    parts[::2] = [p.replace("<", "&lt;").replace(">", "&gt;") for p in parts[::2]]
    return "`".join(parts)


ABSOLUTE_PATH = re.compile(r"(?<![\w.])/[\w./\-{}+=@]+")


def portable(command: str) -> str:
    """A results file's command without the measuring machine's paths: the shared data as
    ../shared/data/..., any other absolute path as DIR/ and its last part."""

    def replace(match) -> str:
        path = match.group(0)
        if "/shared/data/" in path:
            return "../shared/data/" + path.split("/shared/data/", 1)[1]
        return "DIR/" + os.path.basename(path.rstrip("/"))

    return ABSOLUTE_PATH.sub(replace, command)


def nested_table(value: dict) -> tuple:
    """(columns, rows) of a dict nested by name (model, then way served or dtype): a row per
    path down to the innermost dicts, a column per figure; figures met higher up go in the
    row of their dict."""
    rows: Dict[str, dict] = {}

    def walk(node: dict, path: List[str]):
        scalars = {k: v for k, v in node.items() if not isinstance(v, dict)}
        children = {k: v for k, v in node.items() if isinstance(v, dict)}
        if scalars or not children:
            rows.setdefault(" / ".join(path) or "all", {}).update(scalars)
        for key, child in children.items():
            walk(child, path + [str(key)])

    walk(value, [])
    columns = list(dict.fromkeys(k for row in rows.values() for k in row))
    return ["", *[LABELS.get(c, c) for c in columns]], [
        [name, *[row.get(c) for c in columns]] for name, row in rows.items()
    ]


def render_record(record: dict, level: str = "###", title: str = "") -> str:
    title = title or record.get("title") or record["name"]
    out = [f"{level} {title}", ""]
    meta = [
        record.get("date"),
        _machine(record),
        f"commit `{record['commit']}`" if record.get("commit") else None,
    ]
    out += [" · ".join(m for m in meta if m), ""]
    if record.get("provenance"):
        out += [f"*{record['provenance']}*", ""]
    if record.get("command"):
        out += ["```bash", portable(record["command"]), "```", ""]
    measured = record.get("measured") or {}
    references = record.get("references") or []
    rows, referenced = [], set()
    for label, key, reference, kind in references:
        value = measured.get(key)
        if value is None:
            continue
        referenced.add(key)
        ratio = value / reference if isinstance(value, (int, float)) and reference else None
        rows.append([label, value, reference, None if ratio is None else round(ratio, 3), kind])
    if rows:
        out += [_table(["measure", "measured", "reference", "ratio", "the reference"], rows), ""]
    rest = [
        [LABELS.get(k, k), v]
        for k, v in measured.items()
        if k not in referenced and v is not None and not isinstance(v, (dict, list))
    ]
    if rest:
        out += [_table(["measure", "value"], rest), ""]
    components = record.get("components") or {}
    if components:
        out += [
            _table(
                ["component", "seconds"],
                [[node, info.get("seconds")] for node, info in components.items()],
            ),
            "",
        ]
    for key in ("results", "tflops"):  # serving, training steps: nested by model and path
        if isinstance(record.get(key), dict):
            columns, rows = nested_table(record[key])
            out += [_table(columns, rows), ""]
    for table in record.get("tables") or []:
        if table.get("title"):
            out += [f"**{table['title']}**", ""]
        out += [_table(table["columns"], table["rows"]), ""]
    for note in record.get("notes") or []:
        out += [note, ""]
    return "\n".join(out)


def headline_table(benchmark: str) -> str:
    """One row per pipeline results file of `benchmark`, newest first: the model, its
    validation figure, the whole pipeline's minutes and the machine (CPU, family/model)."""
    rows = []
    for record in sorted(load_results(benchmark), key=lambda r: r.get("date", ""), reverse=True):
        measured = record.get("measured") or {}
        keys = ("accuracy", "bleu", "bleu_lowercase_tokenized")
        figure = next((measured[k] for k in keys if k in measured), None)
        seconds = measured.get("wall_seconds")
        if figure is None or not seconds:
            continue
        rows.append(
            [
                f"`{record['name']}`",
                record.get("model", ""),
                figure,
                round(seconds / 60, 1),
                _short_machine(record),
                record.get("date", ""),
            ]
        )
    if not rows:
        raise FileNotFoundError(f"no results of {benchmark} with a figure and wall time")
    return _table(["run", "model", "validation", "pipeline minutes", "machine", "date"], rows)


def render_results(benchmark: str, filters=()) -> str:
    """Every results file of `benchmark` whose fields match `filters` (FIELD=VALUE strings)."""
    wanted = dict(f.split("=", 1) for f in filters)
    records = [
        r for r in load_results(benchmark) if all(str(r.get(k)) == v for k, v in wanted.items())
    ]
    if not records:
        raise FileNotFoundError(f"no results of {benchmark} match {wanted}")
    titles = [r.get("title") or r["name"] for r in records]
    return "\n".join(
        render_record(
            r,
            # A title two files share, or a bare file name, says whose it is.
            title=f"{title} ({r['name']})"
            if titles.count(title) > 1
            else title
            if r.get("title")
            else f"{benchmark}: {title}",
        )
        for r, title in zip(records, titles)
    )


def result_value(reference: str) -> str:
    """`BENCHMARK/NAME key.path` -> that figure."""
    name, path = reference.split()
    benchmark, record_name = name.split("/", 1)
    (record,) = [r for r in load_results(benchmark) if r["name"] == record_name]
    return show(lookup(record, path.split(".")))


# Plots, drawn from the results files when the site is built.


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # 1,276 pixels wide: the page's width at 1280, at a size where 7-point labels read.
    figure, axes = plt.subplots(figsize=(11.6, 5.4), dpi=110)
    return plt, figure, axes


def _tidy_labels(figure) -> None:
    """Point labels staggered up and down in the order of their points' x (neighbours never
    share a line), and written leftwards in an axes' right third (never past its edge)."""
    for axes in figure.axes:
        labels = [t for t in axes.texts if hasattr(t, "xyann") and t.xycoords == "data"]
        to_axes = axes.transData + axes.transAxes.inverted()
        for index, label in enumerate(sorted(labels, key=lambda t: tuple(t.xy))):
            right = to_axes.transform(label.xy)[0] > 0.66
            label.xyann = (-5 if right else 5, (-1) ** index * (4 + 6 * (index % 3)))
            label.set_horizontalalignment("right" if right else "left")


def _png(plt, figure) -> bytes:
    _tidy_labels(figure)
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


def _named_points(axes, points, named=None, **scatter) -> None:
    """(x, y, name) points, those in `named` (default: all) labelled with their name (a
    results file's; _tidy_labels places the labels)."""
    if points:
        axes.scatter([p[0] for p in points], [p[1] for p in points], **scatter)
        for x, y, name in points:
            if named is None or name in named:
                axes.annotate(
                    name, (x, y), fontsize=7, xytext=(5, 4), textcoords="offset points", va="center"
                )


def default_runs() -> set:
    """The results file names of the tasks' default runs (benchmarks/defaults.py): the points
    a plot names."""
    _sys_path()
    from benchmarks.defaults import DEFAULT_RESULTS

    return {name.split("/")[1] for names in DEFAULT_RESULTS.values() for name in names}


def plot_accuracy_against_time() -> bytes:
    """Validation accuracy against training minutes, one point per pipeline results file: a
    colour per task, a marker per machine (minutes compare within one machine only)."""
    plt, figure, axes = _figure()
    series = (("imdb_pipeline", "accuracy", "IMDB"), ("cifar10_pipeline", "accuracy", "CIFAR-10"))
    machines = sorted(
        {_short_machine(r) for benchmark, _, _ in series for r in load_results(benchmark)}
    )
    markers = dict(zip(machines, "osD^v<>PX*"))
    colours = dict(zip([label for _, _, label in series], ("tab:blue", "tab:orange")))
    defaults = default_runs()
    for benchmark, key, label in series:
        by_machine = {}
        for record in load_results(benchmark):
            measured = record.get("measured") or {}
            minutes = measured.get("fit_minutes") or (
                measured["fit_seconds"] / 60 if measured.get("fit_seconds") else None
            )
            if minutes and measured.get(key):
                by_machine.setdefault(_short_machine(record), []).append(
                    (minutes, measured[key], record["name"])
                )
        for machine, points in sorted(by_machine.items()):
            _named_points(
                axes,
                points,
                named=defaults,
                label=f"{label}, {machine}",
                marker=markers[machine],
                color=colours[label],
            )
    axes.set_xscale("log")
    axes.set_xlabel("training time (minutes, log scale); the defaults' runs are named")
    axes.set_ylabel("validation accuracy (TFMA)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="task, machine")
    return _png(plt, figure)


def plot_scaling() -> bytes:
    """Examples per second of each data component against the data's size."""
    plt, figure, axes = _figure()
    for record in load_results("scaling"):
        for row in record.get("rates") or []:
            component, scales, rates = row["component"], row["scales"], row["examples_per_second"]
            axes.plot(scales, rates, marker="o", label=f"{record['name']}: {component}")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("data size (multiples of the training set)")
    axes.set_ylabel("examples per second")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    return _png(plt, figure)


def plot_serving() -> bytes:
    """Median latency of one request per model and serving path: every model of every
    serving results file, labelled with its machine (compare bars of one machine only)."""
    plt, figure, axes = _figure()
    paths = ("saved_model", "pyfunc", "http")
    bars = [
        (f"{name}\n{_short_machine(record)}", result)
        for record in load_results("serving")
        for name, result in record["results"].items()
    ]
    width = 0.8 / len(paths)
    for i, path in enumerate(paths):
        axes.bar(
            [m + i * width for m in range(len(bars))],
            [result[path]["p50_ms"] for _, result in bars],
            width,
            label=path,
        )
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    axes.set_xticks(
        [m + width for m in range(len(bars))],
        [n for n, _ in bars],
        fontsize=7,
        rotation=35,
        ha="right",
    )
    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_ylabel("p50 latency, batch of 1 (ms, log scale)")
    axes.grid(alpha=0.3, axis="y")
    axes.legend(title="served through")
    return _png(plt, figure)


def plot_imdb_frontier() -> bytes:
    """IMDB: validation accuracy against the whole pipeline's minutes, one point per results
    file of the machine named in its file (a name ending in a machine tag), by family."""
    plt, figure, axes = _figure()
    for model, marker in (("text_encoder", "o"), ("bert", "s")):
        points = [
            (r["measured"]["wall_seconds"] / 60, r["measured"]["accuracy"], r["name"])
            for r in load_results("imdb_pipeline")
            if r.get("model") == model
            and (r.get("measured") or {}).get("accuracy")
            and (r.get("measured") or {}).get("wall_seconds")
            and (r.get("machine") or {}).get("cpu_family")  # the machine is identified
        ]
        _named_points(axes, points, named=default_runs(), label=model, marker=marker)
    for record in load_results("imdb_recipes"):  # the NBSVM anchor (imdb_recipes.py --anchor)
        for table in record.get("tables", []):
            if "val accuracy" not in table["columns"]:
                continue
            column = table["columns"].index("val accuracy")
            for row in table["rows"]:
                if row[0] == "ngram_anchor" and row[column] and "trigram" in record["name"]:
                    axes.axhline(row[column], color="gray", linestyle="--", linewidth=1)
                    axes.annotate(
                        f"NBSVM anchor ({record['name']})",
                        (0.01, row[column]),
                        xycoords=("axes fraction", "data"),
                        fontsize=7,
                        xytext=(0, 3),
                        textcoords="offset points",
                    )
    axes.set_xlabel("whole pipeline (minutes); the defaults' runs are named")
    axes.set_ylabel("validation accuracy (TFMA)")
    axes.grid(alpha=0.3)
    axes.legend()
    return _png(plt, figure)


def plot_label_sizes() -> bytes:
    """IMDB: validation accuracy against labelled training reviews, one line per family."""
    plt, figure, axes = _figure()
    for record in load_results("imdb_label_sizes")[:1]:
        for model in sorted({p["model"] for p in record["points"]}):
            points = sorted(
                (p["train_reviews"], p["accuracy"]) for p in record["points"] if p["model"] == model
            )
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=model)
    axes.set_xscale("log")
    axes.set_xlabel("labelled training reviews (log scale)")
    axes.set_ylabel("validation accuracy (TFMA)")
    axes.grid(alpha=0.3)
    axes.legend()
    return _png(plt, figure)


def _accuracy_against_pflop(record) -> list:
    """(training PFLOP, val accuracy, first cell) for each row of a results file's tables that
    have both columns."""
    points = []
    for table in record.get("tables", []):
        columns = table["columns"]
        if "training PFLOP" in columns and "val accuracy" in columns:
            x, y = columns.index("training PFLOP"), columns.index("val accuracy")
            points += [(r[x], r[y], r[0]) for r in table["rows"] if r[x] and r[y]]
    return points


def plot_cifar10_pflop() -> bytes:
    """CIFAR-10: validation accuracy against training PFLOP: each pipeline run's evaluations
    (a line), each GPU recipe (a point, its val accuracy), airbench94's published point and its
    point on the project's JPEGs (cifar10_anchor)."""
    plt, figure, axes = _figure()
    for record in load_results("cifar10_pipeline"):
        rows = _accuracy_against_pflop(record)
        if rows:
            axes.plot(
                [r[0] for r in rows],
                [r[1] for r in rows],
                marker=".",
                linewidth=1,
                label=f"pipeline run {record['name']}",
            )
    points = [p for r in load_results("cifar10_recipes") for p in _accuracy_against_pflop(r)]
    if points:
        axes.scatter(
            [p[0] for p in points], [p[1] for p in points], s=12, color="gray", label="GPU recipes"
        )
    _named_points(
        axes,
        [(0.36, 0.94, "airbench94, released pixels (published)")],
        marker="*",
        s=80,
        color="black",
        label="anchor",
    )
    for record in load_results("cifar10_anchor"):  # on these JPEGs: a line per script
        table, by_script = record["tables"][0], {}
        for row in (dict(zip(table["columns"], row)) for row in table["rows"]):
            by_script.setdefault(row.get("script", "airbench94.py"), []).append(
                (row["training PFLOP"], row["val accuracy: mean"])
            )
        for script, points in by_script.items():
            points.sort()
            axes.plot(
                *zip(*points),
                marker="*",
                markersize=9,
                linewidth=1,
                linestyle="--",
                label=f"{script.removesuffix('.py')} on these JPEGs ({record['name']})",
            )
    axes.set_xlabel("training arithmetic (PFLOP)")
    axes.set_ylabel("validation accuracy")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(plt, figure)


PLOTS = {
    "accuracy_against_time": plot_accuracy_against_time,
    "cifar10_pflop": plot_cifar10_pflop,
    "imdb_frontier": plot_imdb_frontier,
    "label_sizes": plot_label_sizes,
    "scaling": plot_scaling,
    "serving": plot_serving,
}


# The CLI reference.


def cli_default(default: Any, help_text: str) -> str:
    """A CLI option's default as the user would type it (5000, not 5,000; nothing for an empty
    list), or the default its help text states when it has no value of its own."""
    import argparse

    if default in (None, False, argparse.SUPPRESS) or default in ([], ()):
        stated = re.findall(r"\(default: ([^()]*(?:\([^()]*\)[^()]*)*)\)", help_text)
        return stated[-1] if stated else ""
    if isinstance(default, (list, tuple)):
        default = " ".join(str(d) for d in default)
    return f"`{default}`"


def cli_reference() -> str:
    _sys_path()
    import argparse

    from pipeline.cli import build_parser
    from pipeline.options import ENV_PREFIX, PipelineOptions, _declared_fields

    declared = {f.name: f.default for f in _declared_fields()}

    def subcommands(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    yield name, sub, helps.get(name)

    def section(title: str, sub, help_text) -> list:
        rows = []
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            flags = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            default = action.default
            if default is None and declared.get(action.dest) is not None and not action.required:
                default = declared[action.dest]  # resolved from PipelineOptions' declaration
            # argparse's own expansion (%(default)s, %(default)g, %(choices)s ...)
            text = sub._get_formatter()._expand_help(action) if action.help else ""
            value = "required" if action.required else cli_default(default, text) or "none"
            rows.append([flags, text or "(no help)", value])
        lines = [
            f"### `tfx-transformers {title}`",
            "",
            sub.description or help_text or "",
            "",
            "```text",
            sub.format_usage().strip(),
            "```",
            "",
        ]
        if rows:
            lines += [_table(["option", "what it does", "default"], rows), ""]
        for name, nested, nested_help in subcommands(sub):
            lines += section(f"{title} {name}", nested, nested_help)
        return lines

    out = []
    for name, sub, help_text in subcommands(build_parser()):
        out += section(name, sub, help_text)
    fields = list(_declared_fields())
    rows = [
        [f"`--{f.name.replace('_', '-')}`", f"`{ENV_PREFIX}{f.name.upper()}`", f.metadata["help"]]
        for f in fields
    ]
    rows.append(
        [
            "`--set KEY=VALUE`",
            f"`{ENV_PREFIX}SET`",
            PipelineOptions.__dataclass_fields__["overrides"].metadata["help"],
        ]
    )
    out += [
        "### Pipeline options and their environment variables",
        "",
        "`run` and `compile` take these as flags; the TFX CLI's DSL file "
        "(`pipeline/local_runner.py`) and the Kubeflow runners read the variables. A task's "
        "or a family's own options follow the same rule (`--bert-preset` is "
        f"`{ENV_PREFIX}BERT_PRESET`).",
        "",
        _table(["flag", "variable", "what it sets"], rows),
        "",
    ]
    return "\n".join(out)


def test_suite_table() -> str:
    """`make test`'s minutes per machine kind, newest first within each (benchmarks/results/
    test_suite/, benchmarks/test_suite.py)."""
    records = sorted(load_results("test_suite"), key=lambda r: (_machine(r), r.get("date", "")))
    rows = []
    for record in reversed(records):
        measured = record.get("measured") or {}
        rows.append(
            [
                _machine({"machine": {**record["machine"], "memory_gb": None, "python": None}}),
                record.get("date"),
                f"`{record['commit']}`" if record.get("commit") else "",
                measured.get("default tier, tests"),
                measured.get("default tier, minutes"),
                measured.get("slow tier, minutes"),
            ]
        )
    return _table(
        ["machine", "date", "commit", "tests", "`make test` minutes", "`make test-slow` minutes"],
        rows,
    )


TESTS, MINUTES = "default tier, tests", "default tier, minutes"


def _measured_when(record: dict) -> tuple:
    """A results file's place in time: its date, then the moment it was measured."""
    return record.get("date", ""), record.get("measured_at", ""), record["name"]


def test_suite_projection() -> str:
    """The newest default-tier run's minutes projected onto each other machine kind measured,
    at the ratio of that kind's newest run to the run here whose suite was nearest in size
    (a projection: the other kinds have not run this commit)."""
    records = [
        r
        for r in load_results("test_suite")
        if (r.get("measured") or {}).get(TESTS) and r["machine"].get("cpu_family")
    ]  # a machine whose family is not recorded is no kind to project onto
    newest = max(records, key=_measured_when)
    here = _short_machine(newest)
    rows = []
    for kind in sorted({_short_machine(r) for r in records} - {here}):
        theirs = max((r for r in records if _short_machine(r) == kind), key=_measured_when)
        size = theirs["measured"][TESTS]
        ours = min(
            (r for r in records if _short_machine(r) == here),
            key=lambda r: (abs(r["measured"][TESTS] - size), r.get("date", "")),
        )
        ratio = theirs["measured"][MINUTES] / ours["measured"][MINUTES]
        unnamed = {"cores": None, "memory_gb": None, "python": None}
        rows.append(
            [
                _machine({"machine": {**theirs["machine"], **unnamed}}),
                f"{theirs['measured'][MINUTES]} min, {size} tests (`{theirs['commit']}`)",
                f"{ours['measured'][MINUTES]} min, {ours['measured'][TESTS]} tests "
                f"(`{ours['commit']}`)",
                f"{ratio:.2f}",
                f"{newest['measured'][MINUTES] * ratio:.1f}",
            ]
        )
    return _table(
        [
            "machine kind",
            "its newest run",
            f"the run on the {here} nearest in size",
            "ratio",
            f"projected minutes for `{newest['commit']}` ({newest['measured'][MINUTES]} here)",
        ],
        rows,
    )


def cost_table() -> str:
    """The default recipes' pipeline minutes on the full data sets, per machine kind measured
    (components/cost_estimate/measured_speeds.json)."""
    path = os.path.join(REPO, "components", "cost_estimate", "measured_speeds.json")
    with open(path) as f:
        rows = json.load(f)["speeds"]
    return _table(
        ["`--task`", "`--model`", "preset", "training examples", "machine", "pipeline minutes"],
        [
            [
                f"`{r['task']}`",
                f"`{r['family']}`",
                f"`{r['preset']}`",
                r["train_examples"],
                _machine({"machine": {**r["machine"], "memory_gb": None}}),
                r["pipeline_minutes"],
            ]
            for r in rows
        ],
    )


# MkDocs events.


def expand(markdown: str, to_root: str = "") -> str:
    """`markdown` with its placeholders filled; `to_root`: the page's way back to the docs'
    root ("../" from docs/benchmarks/imdb.md), for the plots' paths."""
    roots = None

    def replace(match) -> str:
        nonlocal roots
        text = match.group(1)
        if text.startswith("$"):  # a KFP placeholder the page quotes ({{$.pipeline_job_name}})
            return match.group(0)
        if text == "cli_reference":
            return cli_reference()
        if text == "cost_table":
            return cost_table()
        if text == "test_suite_table":
            return test_suite_table()
        if text == "test_suite_projection":
            return test_suite_projection()
        if text == "defaults_table":
            _sys_path()
            from benchmarks.headline import table

            return table()
        if text.startswith("headline "):
            return headline_table(text.split()[1])
        if text.startswith("results "):
            _, benchmark, *filters = text.split()
            return render_results(benchmark, filters)
        if text.startswith("result "):
            return result_value(text[len("result ") :])
        if text.startswith("config_table "):
            return config_table(text.split()[1])
        if text.startswith("plot "):
            name = text.split()[1]
            if name not in PLOTS:
                raise KeyError(f"no plot {name!r}; known: {sorted(PLOTS)}")
            return f"![{name}]({to_root}plots/{name}.png)"
        roots = roots or code_roots()
        head, *path = text.split(".")
        if head not in roots or not path:
            raise KeyError(f"unknown placeholder {{{{ {text} }}}}")
        return show(lookup(roots[head], path))

    return PLACEHOLDER.sub(replace, markdown)


def on_files(files, config):
    from mkdocs.structure.files import File

    for name, draw in PLOTS.items():
        files.append(File.generated(config, f"plots/{name}.png", content=draw()))
    return files


def on_page_markdown(markdown, page, config, files):
    return expand(markdown, "../" * page.file.src_uri.count("/"))
