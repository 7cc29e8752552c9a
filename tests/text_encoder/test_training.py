"""The text encoder's Trainer entry point, run for real on in-memory reviews."""

import json
import os

import attr
import pytest

from trainer_module.text_encoder import FAMILY
from trainer_module.text_encoder.preprocessing import vocabulary_size
from trainer_module.training.inputs import start_run


def test_run_fn_trains_the_steps_and_exports_with_the_vocabulary_transform_kept(text_encoder_run):
    model, fn_args = text_encoder_run.model, text_encoder_run.fn_args
    trained = text_encoder_run.trained.optimizer.iterations
    assert int(trained.numpy()) == fn_args.train_steps == 30
    # The model embeds the words Transform kept (fewer than the top-k on a tiny corpus).
    kept = vocabulary_size(text_encoder_run.output)
    assert kept < 100 and model.config.vocab_size == kept
    assert model.config.num_layers == 2 and model.config.pooling == "cls"  # the overrides
    history = json.load(open(os.path.join(fn_args.model_run_dir, "history.json")))
    assert history["config"]["vocab_size"] == kept
    assert history["precision"] == "mixed_bfloat16" and history["train_steps"] == 30
    assert set(history["history"]) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert history["history"]["val_accuracy"][-1] >= 0.75  # 16 reviews, 30 steps
    assert os.path.exists(os.path.join(fn_args.serving_model_dir, "saved_model.pb"))
    assert os.listdir(fn_args.model_run_dir) != ["history.json"]  # TensorBoard logs too


def test_the_tuners_best_values_override_the_preset(text_encoder_run):
    fn_args = attr.evolve(
        text_encoder_run.fn_args,
        hyperparameters={
            "values": {"num_layers": 4, "d_model": 64, "peak_learning_rate": 0.002, "dropout": 0.2}
        },
    )
    config, _, _ = start_run(fn_args, FAMILY)
    assert (config.num_layers, config.d_model, config.peak_learning_rate, config.dropout) == (
        4,
        64,
        0.002,
        0.2,
    )
    assert (config.max_length, config.pooling) == (12, "cls")  # the overrides stay
    fn_args = attr.evolve(fn_args, hyperparameters={"values": {"depth": 2}})
    with pytest.raises(ValueError, match=r"unknown search axes \['depth'\]"):
        start_run(fn_args, FAMILY)
