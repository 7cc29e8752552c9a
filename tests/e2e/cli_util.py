"""Runs `tfx-transformers` commands in this process (the console script's main), capturing what
they print, as a user would see it."""

import contextlib
import dataclasses
import io
import json
import os
import shutil
from typing import List

from pipeline import cli


@dataclasses.dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> List[dict]:
        """The JSON lines printed on stdout."""
        return [json.loads(line) for line in self.stdout.strip().splitlines()]


def run_cli(*args, check: bool = True) -> Result:
    """`tfx-transformers ARGS...` in-process; with `check`, fails the test unless it exits 0."""
    import mlflow  # noqa: F401  (its logging set-up must not see the redirected streams)

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main([str(a) for a in args])
    result = Result(code, stdout.getvalue(), stderr.getvalue())
    assert not check or code == 0, result.stderr[-3000:]
    return result


def copy_output(output: str, destination) -> str:
    """A copy of a run's output directory to rerun in (cached artifacts stay where the first
    run wrote them, and are only read)."""
    shutil.copytree(output, destination)
    return str(destination)


def pipeline_components(
    example_gen: str, registry: bool = True, schema_gen: str = "SchemaGen", drift: bool = True
) -> set:
    """The node ids of a task's pipeline, whose ExampleGen is `example_gen`; `drift`: the task
    checks drift (a baseline resolver and DistributionValidator). Every local pipeline has a
    base-model resolver (warm start) and a CostEstimate (the plan before Transform)."""
    return (
        {
            example_gen,
            "StatisticsGen",
            schema_gen,
            "ExampleValidator",
            "AnomaliesGate",
            "CostEstimate",
            "Transform",
            "base_model_resolver",
            "Trainer",
            "latest_blessed_model_resolver",
            "Evaluator",
            "Pusher",
            "RunReport",
        }
        | ({"ModelRegistry"} if registry else set())
        | ({"baseline_statistics_resolver", "DistributionValidator"} if drift else set())
    )


def only_version(serving_dir) -> str:
    (version,) = [n for n in os.listdir(serving_dir) if not n.startswith(".")]
    return version
