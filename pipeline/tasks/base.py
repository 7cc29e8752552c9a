"""A Task: everything the pipeline factory needs to know about one dataset and its models."""
import dataclasses
from typing import Any, Callable, Mapping, Optional

import tensorflow_model_analysis as tfma
from tfx.dsl.components.base.base_component import BaseComponent


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    description: str
    default_data_dir: str
    # data_dir -> the ExampleGen component that reads it.
    example_gen: Callable[[str], BaseComponent]
    # Dotted path of the tf.Transform preprocessing_fn.
    preprocessing_fn: str
    # Model family -> its default preset; the first is the task's default family.
    model_families: Mapping[str, str]
    # (model family, preset, overrides) -> Transform's custom_config (lengths, vocabulary size).
    transform_config: Callable[[str, str, Mapping[str, Any]], dict]
    # Lower bound on the gating metric (None: the task's default) -> the TFMA EvalConfig.
    eval_config: Callable[[Optional[float]], tfma.EvalConfig]
    gating_metric: str
    default_train_steps: int
    default_eval_steps: int

    @property
    def default_model(self) -> str:
        return next(iter(self.model_families))

    def check_model(self, model: str) -> None:
        if model not in self.model_families:
            raise ValueError(f"task {self.name!r} has no model family {model!r}; "
                             f"choose one of {sorted(self.model_families)}")
