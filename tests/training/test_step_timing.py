"""Timing a family's training step at a config's shapes (trainer_module/training/step_timing.py):
what the cost projection times on a CPU kind no benchmark measured."""

import keras
import pytest

from components.cost_estimate.component import timed_step
from trainer_module.families import FAMILIES
from trainer_module.training import step_timing


@pytest.mark.parametrize("family", ["text_encoder", "vit", "translator"])
def test_each_familys_step_trains_its_model_on_a_full_batch_of_the_configs_shapes(family):
    config = FAMILIES[family].config("tiny")
    model, inputs, labels, loss = step_timing.SYNTHETIC[family](config)
    first = inputs["source_ids"] if family == "translator" else inputs
    first = first["token_ids"] if isinstance(first, dict) else first
    assert first.shape[0] == config.batch_size
    times, (timed, *_) = step_timing.timed_steps(lambda: (model, inputs, labels, loss), steps=2)
    assert len(times) == 2 and all(t > 0 for t in times)
    assert timed.optimizer.iterations.numpy() == 2 + 2  # warm-up and timed steps all trained


def test_the_text_encoders_batch_is_full_length_with_the_wide_paths_ngrams():
    config = FAMILIES["text_encoder"].config("tiny")
    inputs = step_timing.text_encoder_inputs(config)
    assert inputs["token_ids"].shape == (config.batch_size, config.max_length)
    assert inputs["ngram_ids"].shape == (config.batch_size, config.max_ngrams)
    assert (inputs["token_ids"] > 0).all()  # no padding: every position costs


def test_berts_step_runs_over_the_configs_checkpoint_every_block_training(tiny_bert_preset):
    config = FAMILIES["bert"].config("tiny", {"backbone_preset": tiny_bert_preset})
    model, inputs, _, _ = step_timing.bert(config)
    assert inputs["padding_mask"].all() and "ngram_ids" not in inputs
    assert all(layer.trainable for layer in model.backbone.transformer_layers)
    assert step_timing.seconds_per_step("bert", config, steps=1) > 0


def test_the_policy_the_step_ran_under_is_restored():
    config = FAMILIES["text_encoder"].config("tiny")
    before = keras.mixed_precision.global_policy().name
    step_timing.seconds_per_step("text_encoder", config, "mixed_bfloat16", steps=1)
    assert keras.mixed_precision.global_policy().name == before


def test_cost_estimate_times_the_runs_own_model_from_its_plan():
    settings = {
        "family": "text_encoder",
        "preset": "tiny",
        "overrides": {"max_length": 16},
        "mixed_precision": "off",
    }
    assert timed_step(settings, gpus=0) > 0


def test_a_model_that_cannot_be_timed_leaves_the_plan_without_a_timing(caplog, tmp_path):
    settings = {
        "family": "bert",
        "preset": "tiny",
        "overrides": {"backbone_preset": str(tmp_path / "missing")},
        "mixed_precision": "off",
    }
    assert timed_step(settings, gpus=0) is None
    assert "could not be timed here" in caplog.text
