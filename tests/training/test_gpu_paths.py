"""Training code as it runs on GPU workers, on this CPU, each family's real Trainer entry point
in a process of its own (tests/training/gpu_path_trainer.py): under MirroredStrategy over two
logical CPU devices (what two GPUs get) in float32 (`mixed_precision=off`), and every family
under MirroredStrategy with mixed_float16 at once (what a worker with two GPUs and
`mixed_precision=auto` runs: float16 compute, float32 variables, loss scaling inside each
replica). Each trains, exports, and its export answers raw input in float32.

What this does not show: CUDA kernels, NCCL all-reduce, float16 speed; those need a GPU."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a Trainer process per family and mode: about 3 minutes in all

FAMILIES = ["text_encoder", "vit", "translator", "bert"]


def run_trainer(mode, work_dir, *families) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "tests.training.gpu_path_trainer", mode, str(work_dir), *families],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {line["family"]: line for line in lines}


def check_answer(line):
    if line["family"] == "translator":
        assert line["answer"]["translation"][0]  # a sentence, whatever the tiny model says
        return
    assert line["answer_dtypes"]["probabilities"] == "float32"
    (probabilities,) = line["answer"]["probabilities"]
    assert abs(sum(probabilities) - 1.0) < 1e-4


def test_the_text_encoder_trains_and_exports_under_mirrored_strategy_in_float32(tmp_path):
    line = run_trainer("mirrored", tmp_path, "text_encoder")["text_encoder"]
    assert (line["strategy"], line["replicas"]) == ("MirroredStrategy", 2)
    assert line["policy"] == "float32"
    check_answer(line)


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_trains_under_mirrored_strategy_and_mixed_float16_at_once(tmp_path, family):
    """What a worker with two GPUs and mixed_precision=auto runs: both replicas scale their
    losses, the all-reduced gradients are unscaled, and the export answers in float32."""
    line = run_trainer("mirrored_float16", tmp_path, family)[family]
    assert (line["strategy"], line["replicas"]) == ("MirroredStrategy", 2)
    assert line["policy"] == "mixed_float16"
    assert line["optimizer"] == "LossScaleOptimizer"
    assert line["variable_dtypes"] == ["float32"]
    check_answer(line)
