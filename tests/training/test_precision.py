import json

import pytest

from trainer_module.training import precision
from trainer_module.training.precision import cpu_bfloat16_flags, precision_policy

BF16_CPU, OLD_CPU = ["avx512_bf16"], []
ZEN4 = {"float32": 0.21, "bfloat16": 0.36}  # TFLOP/s: bfloat16 1.7x faster
XEON_207 = {"float32": 0.28, "bfloat16": 0.14}  # lists AVX512-BF16, bfloat16 half as fast


def timed(rates):
    def measure():
        measure.calls += 1
        return rates

    measure.calls = 0
    return measure


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
    assert precision_policy(setting, gpus, cpu, timed(ZEN4)) == policy


def test_auto_takes_float32_where_the_timed_bfloat16_matmul_is_slower_despite_the_flag():
    assert precision_policy("auto", 0, BF16_CPU, timed(XEON_207)) == "float32"
    barely = {"float32": 0.30, "bfloat16": 0.33}  # 1.1x: the casts would eat it
    assert precision_policy("auto", 0, BF16_CPU, timed(barely)) == "float32"
    assert precision_policy("on", 0, BF16_CPU, timed(XEON_207)) == "mixed_bfloat16"  # as asked


def test_auto_times_nothing_where_no_timing_can_change_its_answer():
    measure = timed(ZEN4)
    for setting, gpus, cpu in [("auto", 0, OLD_CPU), ("auto", 1, BF16_CPU), ("off", 0, BF16_CPU)]:
        precision_policy(setting, gpus, cpu, measure)
    assert measure.calls == 0


def test_the_matmul_rates_are_timed_once_per_cpu_and_cached(tmp_path):
    cache = tmp_path / "cache" / "rates.json"
    calls = []

    def measure(dtype):
        calls.append(dtype)
        return {"float32": 0.28, "bfloat16": 0.14}[dtype]

    assert precision.measured_rates(measure, str(cache)) == XEON_207
    assert precision.measured_rates(measure, str(cache)) == XEON_207
    assert calls == ["float32", "bfloat16"]
    assert json.loads(cache.read_text()) == {precision.cpu_signature(): XEON_207}
    cache.write_text(json.dumps({"another CPU": ZEN4}))  # another signature: timed again
    assert precision.measured_rates(measure, str(cache)) == XEON_207 and len(calls) == 4
    assert set(json.loads(cache.read_text())) == {"another CPU", precision.cpu_signature()}


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rates = precision.measured_rates(lambda dtype: 1.0, str(blocker / "rates.json"))
    assert rates == {"float32": 1.0, "bfloat16": 1.0}


def test_the_cpu_signature_names_the_cpu_its_bfloat16_flags_and_tensorflow(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Intel Xeon\ncpu family\t: 6\nmodel\t\t: 207\n"
        "flags\t\t: avx512f avx512_bf16\n\nprocessor\t: 1\nmodel name\t: other\n"
    )
    signature = precision.cpu_signature(str(cpuinfo))
    assert signature.startswith("Intel Xeon|family 6 model 207|avx512_bf16|")
    assert "tensorflow 2." in signature


def test_the_timed_matmul_measures_a_positive_rate():
    assert precision.matmul_tflops(64, "float32", 0.01) > 0


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


def test_cpu_fields_are_the_first_processors(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("\nprocessor\t: 0\ncpu family\t: 25\n\nprocessor\t: 1\ncpu family\t: 6\n")
    assert precision.cpu_fields(str(cpuinfo)) == {"processor": "0", "cpu family": "25"}
    assert precision.cpu_fields(str(tmp_path / "missing")) == {}
