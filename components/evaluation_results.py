"""What TFMA wrote for one evaluation: metrics per slice, candidate vs baseline, the thresholds
in force and the validation result (read by the run summary, the report and the registry)."""

import json
import math
import os
from typing import Dict, List, Optional

import tensorflow_model_analysis as tfma
from google.protobuf import json_format
from tfx.dsl.io import fileio

OVERALL = "overall"
CANDIDATE_NAMES = ("", "candidate")
EVAL_CONFIG_FILE = "eval_config.json"  # TFMA writes the effective config beside its results


def slice_name(slice_key) -> str:
    parts = []
    for key in slice_key.single_slice_keys:
        value = getattr(key, key.WhichOneof("kind"))
        parts.append(f"{key.column}={value.decode() if isinstance(value, bytes) else value}")
    return ", ".join(parts) or OVERALL


def metric_name(key) -> str:
    """The metric's name with its sub key (k, class id), e.g.
    `sparse_top_k_categorical_accuracy`."""
    name = key.name
    if key.HasField("sub_key"):
        sub = key.sub_key
        for field in ("top_k", "k", "class_id"):
            if sub.HasField(field):
                name += f" ({field}={getattr(sub, field).value})"
    return name


def _number(value) -> Optional[float]:
    if not value.HasField("double_value"):
        return None
    number = value.double_value.value
    return None if math.isnan(number) else number


# Binary metrics with no meaning on a slice of one class, where TFMA still reports a number
# (AUC 0.0): by the slice's mean label, the values of mean_label that leave them undefined.
UNDEFINED_ON_ONE_CLASS = {"auc": (0.0, 1.0), "auc_precision_recall": (0.0, 1.0), "recall": (0.0,)}


def _drop_undefined(row: Dict[str, Dict[str, float]]) -> None:
    """Removes the values UNDEFINED_ON_ONE_CLASS names when the slice holds one class."""
    mean_label = row.get("mean_label", {}).get("candidate")
    for name, undefined_at in UNDEFINED_ON_ONE_CLASS.items():
        if mean_label is not None and mean_label in undefined_at:
            row.pop(name, None)


def metrics_by_slice(evaluation_uri: str) -> Dict[str, Dict[str, Dict[str, float]]]:
    """slice name -> metric name -> {"candidate", "baseline", "change"} (those present).

    Metrics a slice leaves undefined (NaN, or AUC and recall on a slice of one class) are
    absent."""
    table: Dict[str, Dict[str, Dict[str, float]]] = {}
    for slice_metrics in tfma.load_metrics(evaluation_uri):
        row = table.setdefault(slice_name(slice_metrics.slice_key), {})
        for entry in slice_metrics.metric_keys_and_values:
            number = _number(entry.value)
            if number is None:
                continue
            key = entry.key
            role = (
                "change"
                if key.is_diff
                else "candidate"
                if key.model_name in CANDIDATE_NAMES
                else "baseline"
            )
            row.setdefault(metric_name(key), {})[role] = number
    for row in table.values():
        _drop_undefined(row)
    return dict(sorted(table.items(), key=lambda item: (item[0] != OVERALL, item[0])))


def overall_metrics(evaluation_uri: str) -> dict:
    """The candidate model's metrics on the whole eval split (no slice), by name."""
    overall = metrics_by_slice(evaluation_uri).get(OVERALL, {})
    return {
        name: round(values["candidate"], 6)
        for name, values in sorted(overall.items())
        if "candidate" in values
    }


def _threshold_text(threshold) -> str:
    parts = []
    if threshold.HasField("value_threshold"):
        bound = threshold.value_threshold
        if bound.HasField("lower_bound"):
            parts.append(f"value ≥ {bound.lower_bound.value:g}")
        if bound.HasField("upper_bound"):
            parts.append(f"value ≤ {bound.upper_bound.value:g}")
    if threshold.HasField("change_threshold"):
        change = threshold.change_threshold
        direction = tfma.MetricDirection.Name(change.direction).lower().replace("_", " ")
        amounts = [
            f"{kind} {getattr(change, kind).value:g}"
            for kind in ("absolute", "relative")
            if change.HasField(kind)
        ]
        parts.append(f"change vs baseline ({direction}; {', '.join(amounts)})")
    return "; ".join(parts)


def eval_config(evaluation_uri: str) -> Optional[tfma.EvalConfig]:
    path = os.path.join(evaluation_uri, EVAL_CONFIG_FILE)
    if not fileio.exists(path):  # fileio: a gs:// pipeline root too
        return None
    with fileio.open(path) as f:
        return json_format.ParseDict(
            json.load(f)["evalConfig"], tfma.EvalConfig(), ignore_unknown_fields=True
        )


def thresholds(evaluation_uri: str) -> List[dict]:
    """The thresholds the Evaluator applied: metric, slices and bounds."""
    config = eval_config(evaluation_uri)
    rows = []
    for spec in config.metrics_specs if config else ():
        for metric in spec.metrics:
            for per_slice in metric.per_slice_thresholds:
                slices = ", ".join(slice_name_of_spec(s) for s in per_slice.slicing_specs)
                rows.append(
                    {
                        "metric": metric.class_name,
                        "slices": slices,
                        "threshold": _threshold_text(per_slice.threshold),
                    }
                )
            if metric.HasField("threshold"):
                rows.append(
                    {
                        "metric": metric.class_name,
                        "slices": "every slice",
                        "threshold": _threshold_text(metric.threshold),
                    }
                )
    return rows


def slice_name_of_spec(spec) -> str:
    if not spec.feature_keys and not spec.feature_values:
        return OVERALL
    return ", ".join(list(spec.feature_keys) + [f"{k}={v}" for k, v in spec.feature_values.items()])


def blessing_failures(evaluation_uri: str) -> List[str]:
    """Why the model was not blessed: metric, slice, value and the bound it missed."""
    result = tfma.load_validation_result(evaluation_uri)
    lines = []
    for per_slice in result.metric_validations_per_slice:
        for failure in per_slice.failures:
            key = failure.metric_key
            kind = "change vs baseline" if key.is_diff else "value"
            value = failure.metric_value.double_value.value
            threshold = " ".join(str(failure.metric_threshold).split())
            lines.append(
                f"{key.name} {kind} on {slice_name(per_slice.slice_key)}: "
                f"{value:.4f} misses {threshold}"
            )
    return lines
