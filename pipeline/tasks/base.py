"""A Task: everything the pipeline factory needs to know about one dataset and its models."""
import dataclasses
from typing import Callable, Mapping, Optional, Tuple

import tensorflow_model_analysis as tfma
from tfx.dsl.components.base.base_component import BaseComponent

from pipeline.model_families import ModelFamily


def overall_gate(lower_bound: float) -> list:
    """per_slice_thresholds for a task's gating metric: on the whole eval split (slices are
    reported, not gated), at least `lower_bound` and no worse than the latest blessed model
    (the tiny slack absorbs float noise)."""
    threshold = tfma.MetricThreshold(
        value_threshold=tfma.GenericValueThreshold(lower_bound={"value": lower_bound}),
        change_threshold=tfma.GenericChangeThreshold(
            direction=tfma.MetricDirection.HIGHER_IS_BETTER, absolute={"value": -1e-10}),
    )
    return [tfma.PerSliceMetricThreshold(slicing_specs=[tfma.SlicingSpec()], threshold=threshold)]


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    description: str
    default_data_dir: str
    # (data_dir, **data_options) -> the ExampleGen component that reads it.
    example_gen: Callable[..., BaseComponent]
    # The model families it can train, by name; the first is the default.
    model_families: Mapping[str, ModelFamily]
    # Lower bound on the gating metric (None: the task's default) -> the TFMA EvalConfig.
    eval_config: Callable[[Optional[float]], tfma.EvalConfig]
    gating_metric: str
    default_train_steps: int
    default_eval_steps: int
    # Options of the ExampleGen and their defaults (translation: the languages).
    data_options: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The model card's prose (run report): what the model is for, and what it is not.
    intended_use: str = ""
    limitations: Tuple[str, ...] = ()

    @property
    def default_model(self) -> str:
        return next(iter(self.model_families))

    def reading_options(self, overrides: Optional[Mapping[str, str]] = None) -> dict:
        """The task's data options with `overrides` applied; unknown names are an error."""
        overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        unknown = sorted(set(overrides) - set(self.data_options))
        if unknown:
            raise ValueError(f"task {self.name!r} takes no data option(s) {unknown}; "
                             f"known: {sorted(self.data_options) or 'none'}")
        return {**self.data_options, **overrides}

    def model_card(self, model: str, preset: Optional[str] = None) -> dict:
        """What the run report's model card says about this task trained with `model`."""
        return {"task": self.name, "model": model,
                "preset": preset or self.model_family(model).default_preset,
                "description": self.description, "intended_use": self.intended_use,
                "limitations": list(self.limitations), "gating_metric": self.gating_metric}

    def model_family(self, model: str) -> ModelFamily:
        if model not in self.model_families:
            raise ValueError(f"task {self.name!r} has no model family {model!r}; "
                             f"choose one of {sorted(self.model_families)}")
        return self.model_families[model]
