"""The plots TFMA computed for the candidate model on the whole eval split, drawn: the
confusion matrix (MultiClassConfusionMatrixPlot) and the calibration (CalibrationPlot's
histogram, as a reliability diagram)."""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow_model_analysis as tfma

from components.evaluation_results import CANDIDATE_NAMES
from components.run_report.figures import data_uri, new_figure

CALIBRATION_BINS = 10  # TFMA's 10,000 histogram buckets, summed into tenths of probability

Bin = Tuple[float, float, float]  # mean prediction, fraction of positive labels, examples


def _overall_candidate_plots(evaluation_uri: str):
    for plots in tfma.load_plots(evaluation_uri):
        if plots.slice_key.single_slice_keys:
            continue
        for entry in plots.plot_keys_and_values:
            if entry.key.model_name in CANDIDATE_NAMES:
                yield entry.key, entry.value


def confusion_matrix(evaluation_uri: str) -> Optional[np.ndarray]:
    """(actual, predicted) counts of the candidate on the whole eval split, or None when
    TFMA computed no MultiClassConfusionMatrixPlot."""
    for _, value in _overall_candidate_plots(evaluation_uri):
        matrices = value.multi_class_confusion_matrix_at_thresholds.matrices
        if not matrices:
            continue
        entries = matrices[0].entries
        size = 1 + max(max(e.actual_class_id, e.predicted_class_id) for e in entries)
        counts = np.zeros((size, size))
        for e in entries:
            counts[e.actual_class_id, e.predicted_class_id] += e.num_weighted_examples
        return counts
    return None


def calibration(evaluation_uri: str, bins: int = CALIBRATION_BINS) -> Dict[str, List[Bin]]:
    """Curve name ("" for a binary model's P(class 1), "class_id=K" per class when binarized)
    -> its non-empty bins of predicted probability."""
    curves: Dict[str, List[Bin]] = {}
    for key, value in _overall_candidate_plots(evaluation_uri):
        buckets = value.calibration_histogram_buckets.buckets
        if not buckets:
            continue
        totals = np.zeros((bins, 3))  # examples, labels, predictions
        for bucket in buckets:
            count = bucket.num_weighted_examples.value
            if not count:
                continue
            low = max(0.0, bucket.lower_threshold_inclusive)
            index = min(bins - 1, int(low * bins))
            totals[index] += (
                count,
                bucket.total_weighted_label.value,
                bucket.total_weighted_refined_prediction.value,
            )
        name = (
            f"class_id={key.sub_key.class_id.value}"
            if key.HasField("sub_key") and key.sub_key.HasField("class_id")
            else ""
        )
        curves[name] = [(float(p / n), float(y / n), float(n)) for n, y, p in totals if n > 0]
    return dict(sorted(curves.items()))


def plot_confusion(counts: np.ndarray, class_names: Sequence[str]) -> str:
    """The matrix with each row normalised to the actual class's examples, counts written in
    the cells; a PNG data URI."""
    size = len(counts)
    names = [class_names[i] if i < len(class_names) else str(i) for i in range(size)]
    shares = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    side = max(3.2, 0.55 * size + 1.8)
    figure = new_figure(side + 0.8, side)
    axes = figure.add_subplot()
    image = axes.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
    for actual in range(size):
        for predicted in range(size):
            axes.text(
                predicted,
                actual,
                f"{int(counts[actual, predicted])}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if shares[actual, predicted] > 0.5 else "black",
            )
    axes.set_xticks(range(size), names, rotation=45, ha="right", fontsize=8)
    axes.set_yticks(range(size), names, fontsize=8)
    axes.set_xlabel("predicted")
    axes.set_ylabel("actual")
    figure.colorbar(image, ax=axes, label="share of the actual class", shrink=0.8)
    return data_uri(figure)


def plot_calibration(curves: Dict[str, List[Bin]], class_names: Sequence[str] = ()) -> str:
    """Reliability diagram: fraction of positive labels against mean predicted probability per
    bin, one line per curve, the diagonal for perfect calibration; a PNG data URI."""
    figure = new_figure(4.2, 3.6)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1, label="calibrated")
    for name, points in curves.items():
        label = "P(class 1)" if not name else name
        if name.startswith("class_id="):
            index = int(name.split("=", 1)[1])
            label = class_names[index] if index < len(class_names) else name
        predicted, observed, _ = zip(*points) if points else ((), (), ())
        axes.plot(predicted, observed, marker="o", markersize=3, linewidth=1.2, label=label)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_xlabel("mean predicted probability")
    axes.set_ylabel("fraction of that class")
    axes.legend(fontsize=7, loc="upper left")
    return data_uri(figure)
