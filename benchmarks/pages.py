"""The results files (benchmarks/results/, written by benchmarks/report.py) as the
documentation shows them: each file's figures beside their references and ratios, its tables
and notes (render_results), one figure (result_value), the headline and test-suite tables.
scripts/docs_macros.py puts them on the pages when the site is built."""

import glob
import json
import os
import re
from typing import Any, Dict, List

from benchmarks.defaults import default_names
from benchmarks.report import REPO, RESULTS_DIR

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


def short_machine(record: dict) -> str:
    """The CPU's name, and its family and model numbers where the record has them."""
    machine = record.get("machine") or {}
    if isinstance(machine, str):
        return machine
    cpu = (machine.get("cpu") or "?").replace("(R)", "").replace(" Processor", "")
    if machine.get("cpu_family"):
        cpu += f" ({machine['cpu_family']}/{machine.get('cpu_model_number', '?')})"
    return cpu


def table(columns: List[str], rows: List[list]) -> str:
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
        out += [table(["measure", "measured", "reference", "ratio", "the reference"], rows), ""]
    rest = [
        [LABELS.get(k, k), v]
        for k, v in measured.items()
        if k not in referenced and v is not None and not isinstance(v, (dict, list))
    ]
    if rest:
        out += [table(["measure", "value"], rest), ""]
    components = record.get("components") or {}
    if components:
        out += [
            table(
                ["component", "seconds"],
                [[node, info.get("seconds")] for node, info in components.items()],
            ),
            "",
        ]
    for key in ("results", "tflops"):  # serving, training steps: nested by model and path
        if isinstance(record.get(key), dict):
            columns, rows = nested_table(record[key])
            out += [table(columns, rows), ""]
    for extra in record.get("tables") or []:
        if extra.get("title"):
            out += [f"**{extra['title']}**", ""]
        out += [table(extra["columns"], extra["rows"]), ""]
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
                short_machine(record),
                record.get("date", ""),
            ]
        )
    if not rows:
        raise FileNotFoundError(f"no results of {benchmark} with a figure and wall time")
    return table(["run", "model", "validation", "pipeline minutes", "machine", "date"], rows)


def render_results(benchmark: str, filters=(), lab_notes: str = "") -> str:
    """Every results file of `benchmark` whose fields match `filters` (FIELD=VALUE strings),
    each under its title; a title several files share says which run it is (its date and
    machine, then its commit). With `lab_notes` (the lab notes page's link), only the tasks'
    defaults (benchmarks/defaults.py) in full, or without one among them the newest, and the
    others a row each of one table."""
    wanted = dict(f.split("=", 1) for f in filters)
    records = [
        r for r in load_results(benchmark) if all(str(r.get(k)) == v for k, v in wanted.items())
    ]
    if not records:
        raise FileNotFoundError(f"no results of {benchmark} match {wanted}")
    titles = [r.get("title") or f"{benchmark}: {r['name']}" for r in records]
    for describe in (
        lambda r: f"{r.get('date', '')}, {short_machine(r)}",
        lambda r: f"commit {r.get('commit') or r['name']}",
        lambda r: r["name"],
    ):
        titles = [
            f"{title} · {describe(r)}" if titles.count(title) > 1 else title
            for r, title in zip(records, titles)
        ]
    if not lab_notes:
        return "\n".join(render_record(r, title=title) for r, title in zip(records, titles))
    defaults = default_names()
    full = [i for i, r in enumerate(records) if r["name"] in defaults] or [0]
    out = [render_record(records[i], title=titles[i]) for i in full]
    rest = [(r, t) for i, (r, t) in enumerate(zip(records, titles)) if i not in full]
    if rest:
        figures = [headline_figure(r) for r, _ in rest]
        labels = {label for label, _ in figures if label}
        shared = labels.pop() if len(labels) == 1 else ""  # one label for the column
        out += [
            f"{len(rest)} earlier runs, each in full in the [lab notes]({lab_notes}):",
            "",
            table(
                ["run (newest first)", "machine", shared or "first figure"],
                [
                    [t, short_machine(r), (show(v) if shared else f"{k}: {show(v)}") if k else ""]
                    for (r, t), (k, v) in zip(rest, figures)
                ],
            ),
            "",
        ]
    return "\n".join(out)


def headline_figure(record: dict) -> tuple:
    """(label, value) of the first figure of a results file's comparison table, or of its
    measurements; ("", None) without one."""
    measured = record.get("measured") or {}
    for label, key, _, _ in record.get("references") or []:
        if isinstance(measured.get(key), (int, float)):
            return LABELS.get(key, label), measured[key]
    for key, value in measured.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return LABELS.get(key, key), value
    return "", None


def result_value(reference: str) -> str:
    """`BENCHMARK/NAME key.path` -> that figure (the path's keys may hold spaces)."""
    name, path = reference.split(" ", 1)
    benchmark, record_name = name.split("/", 1)
    (record,) = [r for r in load_results(benchmark) if r["name"] == record_name]
    return show(lookup(record, path.split(".")))


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
    return table(
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
    here = short_machine(newest)
    rows = []
    for kind in sorted({short_machine(r) for r in records} - {here}):
        theirs = max((r for r in records if short_machine(r) == kind), key=_measured_when)
        size = theirs["measured"][TESTS]
        ours = min(
            (r for r in records if short_machine(r) == here),
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
    return table(
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
    return table(
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
