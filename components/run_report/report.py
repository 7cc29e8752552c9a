"""Builds the run report page from the run's artifacts, following the model card convention:
model details, intended use, training and evaluation data, metrics, caveats; then training
curves, attention heatmaps, data statistics and lineage."""

import datetime
import json
import os
from typing import Mapping, Optional

import tensorflow as tf
from tfx.utils import path_utils

from components import evaluation_results as evaluation
from components.run_report import attention, curves, data
from components.run_report import evaluation_plots as plots
from components.run_report.artifacts import ArtifactRef
from components.run_report.page import badge, document, escape, image, number, section, table
from trainer_module.serving import runtimes
from trainer_module.training.history import HISTORY_FILE

REPORT_FILE = "index.html"
# Lineage rows, in pipeline order: role -> what the artifact is.
LINEAGE = {
    "examples": "data (ExampleGen)",
    "statistics": "statistics",
    "schema": "schema",
    "anomalies": "anomalies",
    "drift": "drift check",
    "transform_graph": "transform graph",
    "model": "model (Trainer)",
    "model_run": "training logs",
    "baseline_model": "baseline model",
    "evaluation": "evaluation",
    "blessing": "blessing",
    "pushed_model": "pushed model",
    "registered_model": "registry entry",
}


def _history(model_run: Optional[ArtifactRef]) -> dict:
    path = model_run and os.path.join(model_run.uri, HISTORY_FILE)
    if not path or not tf.io.gfile.exists(path):
        return {}
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def _parameters(model) -> int:
    return int(sum(v.shape.num_elements() for v in model.trainable_variables))


def _blessed(refs) -> Optional[bool]:
    blessing = refs.get("blessing")
    return None if blessing is None else bool(blessing.get("blessed"))


def _pushed(refs) -> Optional[ArtifactRef]:
    pushed = refs.get("pushed_model")
    return pushed if pushed is not None and pushed.get("pushed") else None


def _split_counts(statistics) -> dict:
    return {s["split"]: s["examples"] for s in statistics}


def training_length(history: dict) -> str:
    """ "1,250 steps of 32 (2.00 epochs of 20,000 examples)", from history.json."""
    steps, batch = history.get("train_steps"), history.get("batch_size")
    if not steps:
        return ""
    text = f"{steps:,} steps" + (f" of {batch:,}" if batch else "")
    if history.get("epochs") and history.get("train_examples"):
        text += f" ({history['epochs']:.2f} epochs of {history['train_examples']:,} examples)"
    if history.get("resumed_from_step"):
        text += f", resumed from step {history['resumed_from_step']:,} after an interruption"
    return escape(text)


def pretraining_done(history: dict) -> str:
    """ "88 steps of masked-token prediction over 70,000 texts (50,000 of them unlabelled), its
    last accuracy 0.12", or why it was skipped, from history.json; "" without pretraining."""
    from trainer_module.training.pretraining import WHAT

    record = history.get("pretraining") or {}
    if not record:
        return ""
    if "skipped" in record:
        return escape(f"skipped: {record['skipped']}")
    objective = (history.get("config") or {}).get("pretrain_objective", "masked")
    text = f"{record.get('steps', 0):,} steps of {WHAT.get(objective, objective)}"
    if record.get("texts"):
        text += f" over {record['texts']:,} texts"
        if record.get("unlabeled_texts"):
            text += f" ({record['unlabeled_texts']:,} of them unlabelled)"
    if record.get("last_accuracy") is not None:
        text += f", its last accuracy {record['last_accuracy']:g}"
    return escape(text)


def training_data(refs, train: str, history: dict) -> str:
    """What the model was trained on: the span(s) read, the examples and where they are."""
    examples = refs.get("training_examples") or refs.get("examples")
    if examples is None:
        return "unknown"
    spans, span = examples.get("spans"), examples.get("span")
    if spans:
        where = (
            f"spans {escape(spans)} (a rolling window; the newest, span {escape(span)}, "
            "alone was validated and is the evaluation data)"
        )
    else:
        where = f"span {escape(span)}" if span else "the data folder"
    source, layout = examples.get("data_source"), examples.get("data_layout")
    if source:
        where += f" of <code>{escape(source)}</code>"
    if layout:
        where += f" ({escape(layout)} layout)"
    count = (
        f"{history['train_examples']:,} training examples"
        if history.get("train_examples")
        else f"{escape(train) or 'unknown'} examples"
    )
    return f"{where}: {count}; <code>{escape(examples.uri)}</code>"


def as_trained(history: dict) -> tuple:
    """(the configuration training used, the learning-rate schedule in words): the preset's
    fields, with those the schedule resolved when training started (a rate the Tuner chose)
    as they were used; the schedule's warmup in steps (a preset's warmup_fraction of the steps
    that ran)."""
    config = dict(history.get("config", {}))
    schedule = dict(history.get("learning_rate") or {})
    name = schedule.pop("schedule", None)
    if not name:
        return config, ""
    config.update({key: value for key, value in schedule.items() if key in config})
    words = ", ".join(
        f"{key} {value:g}" if isinstance(value, (int, float)) else f"{key} {value}"
        for key, value in sorted(schedule.items())
        if value is not None and key != "name"
    )
    return config, escape(f"{name}: {words}")


def label_summary(statistics) -> str:
    """The training split's label (a class name's where there is one) as StatisticsGen saw
    it: a numeric label's mean (the share of positives for 0/1), or the most frequent names."""
    for split in statistics:
        if split["split"] == "train":
            rows = {row["feature"]: row for row in split["features"]}
            row = rows.get("label_name") or rows.get("label")
            return f"{row['feature']}: {row['summary']}" if row else ""
    return ""


def serving_runtimes(manifest: Optional[dict]) -> str:
    """The model card's line on what serves the model (trainer_module/serving/runtimes.py):
    each runtime's one-example time and agreement with the SavedModel, the chosen first."""
    if not manifest:
        return ""
    checked = manifest["checked_on"]["examples"]
    parts = []
    for entry in sorted(manifest["runtimes"], key=lambda e: e["name"] != manifest["chosen"]):
        name = entry["name"] + (" (serves)" if entry["name"] == manifest["chosen"] else "")
        parts.append(f"{name}: {runtimes.describe(entry, checked)}")
    return "; ".join(parts)


def model_card(refs, card, history, parameters, statistics, metrics, anomalies) -> str:
    counts = _split_counts(statistics)
    train = ", ".join(f"{split}: {n:,}" for split, n in counts.items() if split != "eval")
    config, schedule = as_trained(history)
    details = [
        ("task", escape(card.get("task"))),
        ("data", escape(card.get("data"))),
        ("model family", escape(card.get("model"))),
        ("preset", escape(card.get("preset"))),
        ("trainable parameters", number(parameters)),
        ("trained", training_length(history)),
        ("learning rate", schedule),
        ("configuration", "<code>" + escape(json.dumps(config, sort_keys=True)) + "</code>"),
    ]
    labels = label_summary(statistics)
    if labels:
        details.insert(2, ("labels (training split)", escape(labels)))
    if "model" in refs:
        model_dir = path_utils.serving_model_path(refs["model"].uri)
        served_by = serving_runtimes(runtimes.read_manifest(model_dir))
        if served_by:
            details.append(("serving runtimes (model part)", escape(served_by)))
    pretrained = pretraining_done(history)
    if pretrained:  # before the supervised steps, as it ran
        details.insert(
            details.index(("trained", training_length(history))), ("pretrained", pretrained)
        )
    caveats = list(card.get("limitations", []))
    if _blessed(refs) is False:
        caveats.insert(
            0,
            "This model was NOT blessed: it failed the evaluation thresholds "
            "below and was not pushed.",
        )
    if counts.get("eval", 0) < 1000:
        caveats.append(
            f"The evaluation split has {counts.get('eval', 0):,} examples: "
            "metrics this small carry wide confidence intervals."
        )
    if anomalies:
        caveats.append("ExampleValidator reported anomalies in the data (see Data).")
    gating = card.get("gating_metric")
    overall = metrics.get(evaluation.OVERALL, {})
    headline = overall.get(gating, {}).get("candidate") if gating else None
    return section(
        "model-card",
        "Model card",
        "<h3>Model details</h3>",
        table(None, details, "model-details"),
        f"<p>{escape(card.get('description'))}</p>",
        "<h3>Intended use</h3>",
        f"<p>{escape(card.get('intended_use'))}</p>",
        "<h3>Training data</h3>",
        f'<p id="training-data">{training_data(refs, train, history)}</p>',
        "<h3>Evaluation data</h3>",
        f"<p>eval: {counts.get('eval', 0):,} examples, held out from training; "
        "metrics are reported on the whole split and per slice (Evaluation).</p>",
        "<h3>Metrics</h3>",
        f"<p>{escape(gating)}: <b>{number(headline)}</b> (the blessing gate's metric)</p>"
        if headline is not None
        else "<p>no evaluation</p>",
        "<h3>Caveats and limitations</h3>",
        "<ul>" + "".join(f"<li>{escape(c)}</li>" for c in caveats) + "</ul>",
    )


def evaluation_plots(uri: str, class_names) -> list:
    """The confusion matrix and the calibration TFMA computed, drawn (those it computed)."""
    parts = []
    counts = plots.confusion_matrix(uri)
    if counts is not None:
        parts += [
            "<h3>Confusion matrix</h3>",
            image(
                plots.plot_confusion(counts, class_names),
                "confusion matrix: actual class by row, predicted by column",
                "plot confusion-matrix",
            ),
        ]
    calibration = plots.calibration(uri)
    if calibration:
        parts += [
            "<h3>Calibration</h3>",
            image(
                plots.plot_calibration(calibration, class_names),
                "calibration: observed fraction against predicted probability",
                "plot calibration",
            ),
        ]
    return parts


def evaluation_section(refs, metrics, class_names=()) -> str:
    if "evaluation" not in refs:
        return section("evaluation", "Evaluation", "<p>No evaluation in this run.</p>")
    uri = refs["evaluation"].uri
    blessed = _blessed(refs)
    baseline = refs.get("baseline_model")
    baseline_text = (
        f"the latest blessed model, MLMD artifact {baseline.id} "
        f"(<code>{escape(baseline.uri)}</code>)"
        if baseline
        else "none (no model had been blessed before): value thresholds only"
    )
    failures = evaluation.blessing_failures(uri)
    overall = metrics.get(evaluation.OVERALL, {})
    overall_rows = [
        (
            escape(name),
            number(v.get("candidate")),
            number(v.get("baseline")),
            number(v.get("change")),
        )
        for name, v in sorted(overall.items())
    ]
    slices = {name: row for name, row in metrics.items() if name != evaluation.OVERALL}
    names = sorted({metric for row in slices.values() for metric in row})
    slice_rows = [
        [escape(name)] + [number(row.get(m, {}).get("candidate")) for m in names]
        for name, row in slices.items()
    ]
    parts = [
        f"<p>Blessing: {badge('blessed' if blessed else 'not blessed', bool(blessed))} "
        f"against baseline: {baseline_text}.</p>",
        "<h3>Thresholds</h3>",
        table(
            ("metric", "slices", "threshold"),
            [
                (escape(t["metric"]), escape(t["slices"]), escape(t["threshold"]))
                for t in evaluation.thresholds(uri)
            ],
            "thresholds",
        ),
    ]
    if failures:
        parts.append(
            '<h3>Failed thresholds</h3><ul id="blessing-failures">'
            + "".join(f"<li>{escape(f)}</li>" for f in failures)
            + "</ul>"
        )
    parts += [
        "<h3>Overall</h3>",
        table(
            ("metric", "candidate", "baseline", "change"),
            overall_rows,
            "metrics-overall",
            numeric=(1, 2, 3),
        ),
    ]
    if slice_rows:
        parts += [
            "<h3>By slice</h3>",
            table(
                ["slice"] + names, slice_rows, "metrics-slices", numeric=range(1, len(names) + 1)
            ),
        ]
    parts += evaluation_plots(uri, list(class_names))
    return section("evaluation", "Evaluation (TFMA)", *parts)


def curves_section(refs) -> str:
    if "model_run" not in refs:
        return section("training", "Training curves", "<p>No training logs.</p>")
    result = curves.training_curves(refs["model_run"].uri)
    if result["plot"] is None:
        return section(
            "training",
            "Training curves",
            "<p>The Trainer's model run holds no TensorBoard scalars.</p>",
        )
    rows = [
        (escape(metric), *(number(splits.get(s)) for s in curves.SPLITS))
        for metric, splits in result["final"].items()
    ]
    return section(
        "training",
        "Training curves",
        f"<p>From the Trainer's TensorBoard logs "
        f"(<code>{escape(refs['model_run'].uri)}</code>).</p>",
        image(result["plot"], "training and validation curves"),
        "<h3>Final values</h3>",
        table(("metric", *curves.SPLITS), rows, "final-metrics", numeric=(1, 2)),
    )


def attention_section(model, refs) -> str:
    if model is None or "examples" not in refs:
        return section("attention", "Attention", "<p>No model.</p>")
    result = attention.attention_heatmaps(model, refs["examples"])
    if not result["examples"]:
        return section("attention", "Attention", f"<p>{escape(result['note'])}.</p>")
    explanation = {
        "text": "Each layer's and head's attention weights between the review's tokens "
        "(rows attend to columns; the first tokens of each example).",
        "translation": "Cross-attention: for each generated target token (rows), the weight "
        "on each source token (columns), per decoder layer and head.",
        "image": "Attention over the image patches per layer and head: what [CLS] attends to, "
        "or, with sequence pooling, the attention each patch receives.",
    }[result["kind"]]
    figures = []
    for index, shown in enumerate(result["examples"]):
        caption = " · ".join(
            f"<b>{escape(k)}</b>: {escape(v)}" for k, v in shown["caption"].items()
        )
        figures.append(
            f"<figure><figcaption>Example {index + 1}. {caption}</figcaption>"
            + image(
                shown["plot"],
                f"attention heatmaps, example {index + 1}",
                "plot attention-heatmap",
            )
            + "</figure>"
        )
    return section("attention", "Attention", f"<p>{escape(explanation)}</p>", *figures)


def drift_part(card, drift) -> list:
    """The drift check: what it compares, at which thresholds, and what it found."""
    checks = card.get("drift_checks") or []
    if not checks:
        return []
    parts = [
        "<h3>Drift from the champion's data (DistributionValidator)</h3>",
        "<p>Checked: " + "; ".join(escape(c) for c in checks) + ".</p>",
    ]
    if drift is None:
        parts.append('<p id="drift">No champion yet: nothing to compare with.</p>')
    elif drift:
        parts.append('<ul id="drift">' + "".join(f"<li>{escape(d)}</li>" for d in drift) + "</ul>")
    else:
        parts.append(
            '<p id="drift">Within every threshold of the data the champion was evaluated on.</p>'
        )
    return parts


def data_section(statistics, anomalies, drift_parts=()) -> str:
    parts = []
    for split in statistics:
        rows = [
            (
                escape(f["feature"]),
                escape(f["type"]),
                f"{100 * f['missing']:.1f}%",
                escape(f["summary"]),
            )
            for f in split["features"]
        ]
        parts += [
            f"<h3>Split {escape(split['split'])}: {split['examples']:,} examples</h3>",
            table(
                ("feature", "type", "missing", "summary"),
                rows,
                f"statistics-{split['split']}",
                numeric=(2,),
            ),
        ]
    parts.append("<h3>Anomalies (ExampleValidator)</h3>")
    parts.append(
        '<ul id="anomalies">' + "".join(f"<li>{escape(a)}</li>" for a in anomalies) + "</ul>"
        if anomalies
        else '<p id="anomalies">None found.</p>'
    )
    return section("data", "Data", *parts, *drift_parts)


def lineage_section(refs, pipeline_name, run_id) -> str:
    rows = [
        (
            escape(label),
            escape(refs[role].type_name),
            escape(refs[role].id),
            f"<code>{escape(refs[role].uri)}</code>",
        )
        for role, label in LINEAGE.items()
        if role in refs
    ]
    pushed = _pushed(refs)
    push = (
        f"version {escape(pushed.get('pushed_version'))} at "
        f"<code>{escape(pushed.get('pushed_destination'))}</code>"
        if pushed
        else "not pushed"
    )
    entry = refs.get("registered_model")
    registered = (
        f"{escape(entry.get('registry'))}: <code>{escape(entry.get('uri'))}</code>"
        + (f" (alias {escape(entry.get('alias'))})" if entry.get("alias") else "")
        if entry is not None and entry.get("registered")
        else "not registered"
    )
    return section(
        "lineage",
        "Lineage",
        table(
            None,
            [
                ("pipeline", escape(pipeline_name)),
                ("run id", escape(run_id)),
                ("pushed to", push),
                ("registered", registered),
            ],
            "run",
        ),
        table(("artifact", "type", "MLMD id", "URI"), rows, "lineage-artifacts", numeric=(2,)),
    )


def build_report(
    refs: Mapping[str, ArtifactRef], *, pipeline_name: str, run_id: str, card: Mapping
) -> str:
    """The page's HTML for one run; `refs` maps roles (see LINEAGE) to artifacts."""
    statistics = data.statistics_highlights(refs["statistics"]) if "statistics" in refs else []
    anomalies = data.anomalies(refs["anomalies"]) if "anomalies" in refs else []
    metrics = evaluation.metrics_by_slice(refs["evaluation"].uri) if "evaluation" in refs else {}
    model = attention.load_model(refs["model"]) if "model" in refs else None
    history = _history(refs.get("model_run"))
    blessed, pushed = _blessed(refs), _pushed(refs)
    status = " ".join(
        [
            badge("blessed" if blessed else "not blessed", bool(blessed)),
            badge(f"pushed as version {pushed.get('pushed_version')}", True)
            if pushed
            else badge("not pushed", False),
        ]
    )
    header = [
        f"run {escape(run_id)} · {escape(card.get('task'))} / {escape(card.get('model'))}",
        status,
        "generated "
        + escape(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
    ]
    sections = [
        model_card(
            refs,
            card,
            history,
            _parameters(model) if model is not None else None,
            statistics,
            metrics,
            anomalies,
        ),
        evaluation_section(refs, metrics, card.get("classes") or history.get("class_names") or ()),
        curves_section(refs),
        attention_section(model, refs),
        data_section(
            statistics,
            anomalies,
            drift_part(card, data.drift(refs["drift"]) if "drift" in refs else None),
        ),
        lineage_section(refs, pipeline_name, run_id),
    ]
    return document(f"Run report: {pipeline_name}", header, sections)


def write_report(path: str, refs: Mapping[str, ArtifactRef], **kwargs) -> str:
    """Writes the page to `path` (created with its folders); returns `path`."""
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(build_report(refs, **kwargs))
    return path
