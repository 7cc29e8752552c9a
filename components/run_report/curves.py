"""Training and validation curves from the TensorBoard logs the Trainer wrote to its model run
directory (Keras' TensorBoard callback: `train/` and `validation/` event files)."""

import collections
import os
from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from components.run_report.figures import data_uri, new_figure

SPLITS = ("train", "validation")
EPOCH_PREFIX = "epoch_"  # Keras logs each metric per evaluation round as epoch_<metric>
STEPS_TAG = "evaluation_loss_vs_iterations"  # validation loss by training step

Series = List[Tuple[int, float]]


def read_scalars(model_run_uri: str) -> Dict[str, Dict[str, Series]]:
    """split -> tag -> [(step, value)], sorted by step, from every event file under the run."""
    scalars: Dict[str, Dict[str, Series]] = {}
    for split in SPLITS:
        tags: Dict[str, Dict[int, float]] = collections.defaultdict(dict)
        for path in sorted(tf.io.gfile.glob(os.path.join(model_run_uri, split, "events.out.*"))):
            for event in tf.compat.v1.train.summary_iterator(path):
                for value in event.summary.value:
                    if value.HasField("tensor"):
                        number = float(tf.make_ndarray(value.tensor))
                    else:
                        number = float(value.simple_value)
                    tags[value.tag][event.step] = number  # a later write of a step wins
        if tags:
            scalars[split] = {tag: sorted(points.items()) for tag, points in tags.items()}
    return scalars


def _training_steps(scalars) -> Optional[Dict[int, int]]:
    """Evaluation round -> training step, from the validation loss logged against steps."""
    by_step = scalars.get("validation", {}).get(STEPS_TAG)
    if not by_step:
        return None
    return {round_: step for round_, (step, _) in enumerate(by_step)}


def curves(scalars, steps: Dict[int, int]) -> Dict[str, Dict[str, Series]]:
    """metric -> split -> [(training step, else round, value)] for the per-round metrics."""
    table: Dict[str, Dict[str, Series]] = collections.defaultdict(dict)
    for split, tags in scalars.items():
        for tag, points in tags.items():
            if tag.startswith(EPOCH_PREFIX):
                table[tag[len(EPOCH_PREFIX) :]][split] = [(steps.get(r, r), v) for r, v in points]
    return dict(sorted(table.items(), key=lambda item: (item[0] != "loss", item[0])))


def plot_curves(table: Dict[str, Dict[str, Series]], x_label: str) -> Optional[str]:
    """One panel per metric, train and validation lines; a PNG data URI (None if no data)."""
    if not table:
        return None
    figure = new_figure(3.6 * len(table), 3.0)
    for index, (metric, splits) in enumerate(table.items()):
        axes = figure.add_subplot(1, len(table), index + 1)
        for split, points in splits.items():
            axes.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                markersize=3,
                label=split,
            )
        axes.set_title(metric.replace("_", " "))
        axes.set_xlabel(x_label)
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small")
    return data_uri(figure)


def training_curves(model_run_uri: str) -> dict:
    """{"plot": data URI or None, "final": metric -> split -> last value, "x_label"}."""
    scalars = read_scalars(model_run_uri)
    steps = _training_steps(scalars)
    table = curves(scalars, steps or {})
    x_label = "training step" if steps else "evaluation round"
    final = {
        metric: {split: points[-1][1] for split, points in splits.items()}
        for metric, splits in table.items()
    }
    return {"plot": plot_curves(table, x_label), "final": final, "x_label": x_label}
