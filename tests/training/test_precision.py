import pytest

from trainer_module.training.precision import cpu_bfloat16_flags, precision_policy

BF16_CPU, OLD_CPU = ["avx512_bf16"], []


@pytest.mark.parametrize(
    "setting, gpus, cpu, policy",
    [
        ("auto", 0, BF16_CPU, "mixed_bfloat16"),  # this project's CPUs: bfloat16's fast path
        ("auto", 0, ["amx_bf16"], "mixed_bfloat16"),
        ("auto", 0, OLD_CPU, "float32"),  # no fast path: float32
        ("auto", 2, BF16_CPU, "mixed_float16"),  # GPUs: float16
        ("on", 0, OLD_CPU, "mixed_bfloat16"),
        ("on", 1, OLD_CPU, "mixed_float16"),
        ("off", 8, BF16_CPU, "float32"),
        ("mixed_float16", 0, BF16_CPU, "mixed_float16"),  # a policy name is taken as it is
    ],
)
def test_precision_policy(setting, gpus, cpu, policy):
    assert precision_policy(setting, gpus, cpu) == policy


def test_an_unknown_precision_setting_is_an_error():
    with pytest.raises(ValueError, match="mixed_precision must be one of"):
        precision_policy("fp16", 1)


def test_bfloat16_instructions_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n")
    assert cpu_bfloat16_flags(str(cpuinfo)) == ["avx512_bf16"]
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2\n")
    assert cpu_bfloat16_flags(str(cpuinfo)) == []
    assert cpu_bfloat16_flags(str(tmp_path / "missing")) == []
