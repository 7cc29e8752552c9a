"""Each task's blessing gate, as TFMA's own validator applies it to the metrics the Evaluator
computes: a model under the bound, or worse than the champion, is refused on the gate's metric;
one at the bound and no worse passes. (The refusal's path through a pipeline, no push and no
registration, is the IMDB e2e run's.)"""

import pytest
import tensorflow_model_analysis as tfma
from tensorflow_model_analysis.evaluators import metrics_validator
from tensorflow_model_analysis.metrics import metric_specs

from pipeline.tasks import TASKS


def gated_keys(config: tfma.EvalConfig) -> dict:
    """{is_diff: metric key} of the metrics with thresholds."""
    thresholds = metric_specs.metric_thresholds_from_metrics_specs(
        config.metrics_specs, eval_config=config
    )
    return {key.is_diff: key for key, threshold in thresholds.items() if threshold}


def failures(result) -> list:
    return [
        (f.metric_key.name, f.metric_key.is_diff)
        for per_slice in result.metric_validations_per_slice
        for f in per_slice.failures
    ]


@pytest.mark.parametrize(
    "name, family",
    [(name, family) for name in sorted(TASKS) for family in TASKS[name].model_families],
)
def test_the_gate_refuses_a_model_under_its_bound_or_worse_than_the_champion(name, family):
    task = TASKS[name]
    bound = (task.gate.low + task.gate.high) / 2
    step = 0.01 * (task.gate.high - task.gate.low)
    config = task.blessing_eval_config(task.model_family(family), bound)
    keys = gated_keys(config)
    assert sorted(keys) == [False, True]  # its value, and its change from the champion
    assert {key.name for key in keys.values()} == {task.gate.metric}

    def validate(value, change):
        metrics = {keys[False]: value, keys[True]: change}
        return metrics_validator.validate_metrics(((), metrics), config)

    assert validate(bound, 0.0).validation_ok
    assert validate(task.gate.high, step).validation_ok
    under = validate(bound - step, 0.0)
    assert not under.validation_ok
    assert failures(under) == [(task.gate.metric, False)]
    (failure,) = under.metric_validations_per_slice[0].failures
    assert failure.metric_threshold.value_threshold.lower_bound.value == bound
    assert failures(validate(task.gate.high, -step)) == [(task.gate.metric, True)]
