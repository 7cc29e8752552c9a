import pytest

from trainer_module.training.precision import precision_policy


@pytest.mark.parametrize("setting, gpus, policy", [
    ("auto", 0, "float32"), ("auto", 2, "mixed_float16"), ("on", 0, "mixed_float16"),
    ("off", 8, "float32")])
def test_precision_policy(setting, gpus, policy):
    assert precision_policy(setting, gpus) == policy


def test_an_unknown_precision_setting_is_an_error():
    with pytest.raises(ValueError, match="mixed_precision must be one of"):
        precision_policy("fp16", 1)
