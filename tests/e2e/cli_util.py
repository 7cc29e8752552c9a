"""Runs `tfx-transformers` as a user does: a subprocess from the repository root."""
import json
import os
import subprocess
import sys

from pipeline import configs

BIN = os.path.dirname(sys.executable)


def cli(*args) -> list:
    """The JSON lines the command printed; fails the test with its stderr if it failed."""
    result = subprocess.run([os.path.join(BIN, "tfx-transformers"), *args], capture_output=True,
                            text=True, cwd=str(configs.REPO_ROOT), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.strip().splitlines()]


def pipeline_components(example_gen: str, registry: bool = True) -> set:
    """The node ids of a task's pipeline, whose ExampleGen is `example_gen`."""
    return {example_gen, "StatisticsGen", "SchemaGen", "ExampleValidator", "AnomaliesGate",
            "Transform", "Trainer", "latest_blessed_model_resolver", "Evaluator", "Pusher",
            "RunReport"} | ({"ModelRegistry"} if registry else set())
