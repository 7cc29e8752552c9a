import types

import pytest

from trainer_module.training import run_fn


def test_run_fn_refuses_modules_outside_the_training_package():
    fn_args = types.SimpleNamespace(custom_config={"training_module": "os"})
    with pytest.raises(ValueError, match="training_module must be a module of trainer_module.training"):
        run_fn.run_fn(fn_args)


def test_run_fn_calls_the_named_training_module(monkeypatch):
    called = []
    fake = types.SimpleNamespace(train_and_export=called.append)
    monkeypatch.setattr(run_fn.importlib, "import_module",
                        lambda name: fake if name == "trainer_module.training.fake" else None)
    fn_args = types.SimpleNamespace(custom_config={"training_module": "trainer_module.training.fake"})
    run_fn.run_fn(fn_args)
    assert called == [fn_args]
