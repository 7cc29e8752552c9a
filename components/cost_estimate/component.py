"""CostEstimate: what the run will train and how long it will take on this machine, said as
soon as StatisticsGen has counted the data and before Transform starts (the factory makes
Transform wait on it). The projection is recorded on its output for the run summary."""

import json
import logging
import os
from typing import Optional

from tfx.dsl.component.experimental.annotations import InputArtifact, OutputArtifact, Parameter
from tfx.dsl.component.experimental.decorators import component
from tfx.types import standard_artifacts

from components.artifact_types import CostEstimate as CostEstimateArtifact
from components.cost_estimate import estimate
from components.cost_estimate.estimate import ESTIMATE_PROPERTY
from trainer_module.features import UNLABELED_SPLIT
from trainer_module.training.inputs import steps_for_epochs
from trainer_module.training.progress import LOGGER


def split_examples(statistics, split: str = "train") -> int:
    """The training split's examples (or another split's: 0 when there is none), as
    StatisticsGen counted them."""
    from tensorflow_metadata.proto.v0 import statistics_pb2
    from tfx.dsl.io import fileio
    from tfx.types import artifact_utils

    if split not in artifact_utils.decode_split_names(statistics.split_names):
        if split == "train":
            raise ValueError(f"{statistics.uri}: the statistics have no training split")
        return 0
    path = os.path.join(statistics.uri, f"Split-{split}", "FeatureStats.pb")
    with fileio.open(path, "rb") as f:
        stats = statistics_pb2.DatasetFeatureStatisticsList.FromString(f.read())
    return int(sum(d.num_examples for d in stats.datasets))


def timed_step(settings: dict, gpus: int) -> Optional[float]:
    """Seconds of one training step of the run's model (its family and config, under its
    mixed precision) on this machine: a few steps on random inputs; None, said in the log,
    where they cannot run here (a checkpoint out of reach): the projection then does without."""
    from trainer_module.families import FAMILIES
    from trainer_module.training import step_timing
    from trainer_module.training.precision import precision_policy

    family = FAMILIES[settings["family"]]
    config = family.config(settings["preset"], settings["overrides"])
    policy = precision_policy(settings["mixed_precision"], gpus)
    logging.getLogger(LOGGER).info(
        "plan: this CPU kind was not measured: timing %s's training steps here (%s)",
        family.name,
        policy,
    )
    try:
        return step_timing.seconds_per_step(family.name, config, policy)
    except Exception as error:  # a plan without a timing, never a failed run
        logging.getLogger(LOGGER).warning(
            "plan: the training steps could not be timed here (%s: %s)",
            type(error).__name__,
            str(error).splitlines()[0] if str(error) else "",
        )
        return None


@component  # type: ignore[call-overload]  # TFX's annotations read as Any (pyproject.toml)
def CostEstimate(
    statistics: InputArtifact[standard_artifacts.ExampleStatistics],
    cost: OutputArtifact[CostEstimateArtifact],
    plan: Parameter[str],
) -> None:
    """`plan` (pipeline/factory.py: cost_plan): batch_size, train_steps or epochs,
    time_budget_minutes, tuner_trials, pretrain_epochs, spans, the measured speeds of the
    run's family and preset (`rows`), and the run's family, model config and mixed precision
    (for timing its steps on a CPU kind no row measured)."""
    import tensorflow as tf

    settings = json.loads(plan)
    gpus = len(tf.config.list_physical_devices("GPU"))
    examples = split_examples(statistics)
    steps = settings["train_steps"] or steps_for_epochs(
        settings["epochs"], examples, settings["batch_size"]
    )
    projected = estimate.project(
        settings["rows"],
        train_examples=examples,
        train_steps=steps,
        batch_size=settings["batch_size"],
        gpus=gpus,
        time_budget_minutes=settings.get("time_budget_minutes"),
        changed=settings.get("changed", ()),
        timed_step=lambda: timed_step(settings, gpus),
    )
    lines = estimate.plan_lines(
        projected, settings, unlabeled=split_examples(statistics, UNLABELED_SPLIT)
    )
    for line in lines:
        logging.getLogger(LOGGER).info("plan: %s", line)
    cost.set_string_custom_property(ESTIMATE_PROPERTY, json.dumps(projected.as_dict()))
