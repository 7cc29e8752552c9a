"""TFX's Evaluator executor, dropping a baseline that ChampionModel found empty."""

from typing import Any, Dict, List

from tfx import types
from tfx.components.evaluator import executor as evaluator_executor
from tfx.types import standard_component_specs

from components.champion_model.executor import is_empty

BASELINE = standard_component_specs.BASELINE_MODEL_KEY


class Executor(evaluator_executor.Executor):
    def Do(
        self,
        input_dict: Dict[str, List[types.Artifact]],
        output_dict: Dict[str, List[types.Artifact]],
        exec_properties: Dict[str, Any],
    ) -> None:
        input_dict = dict(input_dict)
        kept = [a for a in input_dict.get(BASELINE, []) if not is_empty(a)]
        if kept:
            input_dict[BASELINE] = kept
        else:
            input_dict.pop(BASELINE, None)
        super().Do(input_dict, output_dict, exec_properties)
