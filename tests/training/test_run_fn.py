"""The run wrapper every family's Trainer entry point goes through (training/run_fn.py)."""

import json
import os
import types

import keras
import pytest
import tensorflow as tf
from tfx.components.trainer.fn_args_utils import DataAccessor

from trainer_module.training import run_fn
from trainer_module.training.inputs import TrainerOptions, TrainerRun


def trainer_options(mixed_precision: str) -> dict:
    """The custom_config the pipeline gives every Trainer (pipeline/options.py)."""
    return TrainerOptions(
        task="imdb",
        model="text_encoder",
        preset="tiny",
        overrides={},
        seed=7,
        mixed_precision=mixed_precision,
        epochs=None,
        time_budget_minutes=None,
    ).as_custom_config()


def fake_fn_args(mixed_precision="off", serving_model_dir="/out/serving"):
    dataset = tf.data.Dataset.range(4)
    return types.SimpleNamespace(
        custom_config=trainer_options(mixed_precision),
        train_files=["/out/train"],
        eval_files=["/out/eval"],
        transform_output="/out/tft",
        train_steps=4,
        eval_steps=1,
        hyperparameters=None,
        serving_model_dir=serving_model_dir,
        model_run_dir="/out/Trainer/model_run/5",
        data_accessor=DataAccessor(
            tf_dataset_factory=lambda *args, **kwargs: dataset,
            record_batch_factory=None,
            data_view_decode_fn=None,
        ),
    )


class FakeTraining:
    """A train_and_export that records what it was handed and returns a trained-looking model."""

    def __init__(self):
        self.seen = {}

    def __call__(self, run):
        dataset = run.data_accessor.tf_dataset_factory(["files"], None, None)
        self.seen = {
            "run": run,
            "policy": keras.mixed_precision.global_policy().name,
            "shard_policy": dataset.options().experimental_distribute.auto_shard_policy,
            "strategy": tf.distribute.get_strategy(),
        }
        return types.SimpleNamespace(optimizer=types.SimpleNamespace(iterations=tf.Variable(3)))


def test_run_calls_train_and_export_with_data_sharded_by_batch(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    fake, fn_args = FakeTraining(), fake_fn_args()
    model = run_fn.run(fn_args, fake)
    run = fake.seen["run"]
    assert isinstance(run, TrainerRun) and model.optimizer.iterations.numpy() == 3
    assert run.serving_model_dir == "/out/serving"  # the chief writes the outputs
    # training backs up beside the Trainer's executions, and the chief writes the backup
    assert run.backup_dir.startswith("/out/Trainer/backup/")
    assert run.backup_writer is True
    assert fn_args.custom_config == trainer_options("off")  # TFX's FnArgs untouched
    with pytest.raises(TypeError):
        run.custom_config["epochs"] = 3  # a record is read-only: a stage makes a new one
    assert fake.seen["shard_policy"] == tf.data.experimental.AutoShardPolicy.DATA
    assert fake.seen["policy"] == "float32"
    assert fake.seen["strategy"] is tf.distribute.get_strategy()  # the default


def test_mixed_precision_on_applies_while_training_only():
    fake = FakeTraining()
    run_fn.run(fake_fn_args("on"), fake)
    assert fake.seen["policy"] == "mixed_bfloat16"  # no GPU here: bfloat16
    assert keras.mixed_precision.global_policy().name == "float32"


def test_the_policy_is_restored_when_training_fails():
    def failing(run):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        run_fn.run(fake_fn_args("mixed_float16"), failing)
    assert keras.mixed_precision.global_policy().name == "float32"


def test_a_worker_that_is_not_the_chief_writes_to_a_scratch_folder(monkeypatch, tmp_path):
    # One task in TF_CONFIG, so no collective strategy starts; is_chief is tested on its own.
    monkeypatch.setattr(run_fn.distribution, "is_chief", lambda tf_config: False)
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1}}),
    )
    chiefs = tmp_path / "Trainer" / "model" / "5" / "Format-Serving"
    chiefs.mkdir(parents=True)  # the chief's export, which TFX checks on every worker
    fake, fn_args = FakeTraining(), fake_fn_args(serving_model_dir=str(chiefs))
    run_fn.run(fn_args, fake)
    assert "tfx-transformers-worker-" in fake.seen["run"].serving_model_dir
    assert fake.seen["run"].model_run_dir.endswith("/model_run")
    assert fn_args.serving_model_dir == str(chiefs)  # FnArgs untouched
    assert os.listdir(chiefs) == []  # and nothing written to the chief's folder


def test_a_worker_whose_chief_never_exports_fails_naming_the_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(run_fn.distribution, "is_chief", lambda tf_config: False)
    monkeypatch.setattr(run_fn, "CHIEF_EXPORT_SECONDS", 0)
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1}}),
    )
    missing = str(tmp_path / "never")
    with pytest.raises(RuntimeError, match=f"the chief's model did not appear at {missing}"):
        run_fn.run(fake_fn_args(serving_model_dir=missing), FakeTraining())
