import json
import types

import keras
import pytest
import tensorflow as tf
from tfx.components.trainer.fn_args_utils import DataAccessor

from trainer_module.training import run_fn


def fake_fn_args(module="trainer_module.training.fake"):
    dataset = tf.data.Dataset.range(4)
    return types.SimpleNamespace(
        custom_config={"training_module": module, "mixed_precision": "off"},
        serving_model_dir="/out/serving", model_run_dir="/out/run",
        data_accessor=DataAccessor(tf_dataset_factory=lambda *args, **kwargs: dataset,
                                   record_batch_factory=None, data_view_decode_fn=None))


class FakeTraining:
    """A training module that records what it was handed and returns a trained-looking model."""

    def __init__(self):
        self.seen = {}

    def train_and_export(self, fn_args):
        dataset = fn_args.data_accessor.tf_dataset_factory(["files"], None, None)
        self.seen = {"fn_args": fn_args, "policy": keras.mixed_precision.global_policy().name,
                     "shard_policy": dataset.options().experimental_distribute.auto_shard_policy,
                     "strategy": tf.distribute.get_strategy()}
        return types.SimpleNamespace(optimizer=types.SimpleNamespace(iterations=tf.Variable(3)))


@pytest.fixture
def fake_training(monkeypatch):
    fake = FakeTraining()
    monkeypatch.setattr(run_fn.importlib, "import_module",
                        lambda name: fake if name == "trainer_module.training.fake" else None)
    return fake


def test_run_fn_refuses_modules_outside_the_training_package():
    with pytest.raises(ValueError, match="training_module must be a module of trainer_module.training"):
        run_fn.run_fn(fake_fn_args(module="os"))


def test_run_fn_calls_the_named_training_module_with_data_sharded_by_batch(fake_training,
                                                                          monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    fn_args = fake_fn_args()
    run_fn.run_fn(fn_args)
    assert fake_training.seen["fn_args"] is fn_args
    assert fn_args.serving_model_dir == "/out/serving"  # the chief writes the outputs
    assert fake_training.seen["shard_policy"] == tf.data.experimental.AutoShardPolicy.DATA
    assert fake_training.seen["policy"] == "float32"
    assert fake_training.seen["strategy"] is tf.distribute.get_strategy()  # the default


def test_mixed_precision_on_applies_while_training_only(fake_training):
    fn_args = fake_fn_args()
    fn_args.custom_config["mixed_precision"] = "on"
    run_fn.run_fn(fn_args)
    assert fake_training.seen["policy"] == "mixed_float16"
    assert keras.mixed_precision.global_policy().name == "float32"


def test_a_worker_that_is_not_the_chief_writes_to_a_scratch_folder(fake_training, monkeypatch):
    # One task in TF_CONFIG, so no collective strategy starts; is_chief is tested on its own.
    monkeypatch.setattr(run_fn.distribution, "is_chief", lambda tf_config: False)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]},
                                                "task": {"type": "worker", "index": 1}}))
    fn_args = fake_fn_args()
    run_fn.run_fn(fn_args)
    assert "tfx-transformers-worker-" in fn_args.serving_model_dir
    assert fn_args.model_run_dir.endswith("/model_run")
