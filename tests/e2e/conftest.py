"""One tiny IMDB run per test session, through the CLI, that the CLI, report, registry,
browser, schema, cache, threshold and tuning tests read (reruns happen on copies)."""

import contextlib
import dataclasses
import os
import pathlib

import pytest

from pipeline import configs
from tests.conftest import write_aclimdb
from tests.e2e.cli_util import run_cli

SCHEMA = str(configs.EMBEDDED_DATA_DIR / "imdb" / "schema.pbtxt")


@dataclasses.dataclass
class ImdbRun:
    summary: dict
    progress: str  # what the command printed on stderr
    data: pathlib.Path  # the first span's folder
    output: pathlib.Path
    args: list  # the run's arguments after `--output DIR`

    @property
    def serving_dir(self) -> pathlib.Path:
        return self.output / "serving_model" / "imdb-text-encoder"


@pytest.fixture(scope="session")
def imdb_run(tmp_path_factory) -> ImdbRun:
    """`tfx-transformers run --task imdb` on 96 reviews (48 held out), preset tiny, validated
    against the curated schema, registered in the local MLflow registry. The reviews are the
    first span of `reviews/span-{SPAN}`."""
    return tiny_imdb_run(tmp_path_factory.mktemp("imdb"))


def tiny_imdb_run(root: pathlib.Path) -> ImdbRun:
    """The session run's command, under `root` (tests/e2e/test_faults.py makes its own)."""
    data = write_aclimdb(root / "imdb" / "span-1", copies=3)
    # A budget of an hour: the Trainer times its steps first, and keeps all 60.
    args = tiny_imdb_args(root / "imdb" / "span-{SPAN}") + ["--time-budget", "60"]
    with progress_every_step():
        result = run_cli("run", "--output", root / "out", *args)
    (summary,) = result.lines
    return ImdbRun(summary, result.stderr, data, root / "out", args)


def tiny_imdb_args(data, steps: int = 60) -> list:
    """`run`'s arguments after `--output DIR` for the tiny IMDB run: preset tiny, `steps`
    training steps, validated against the curated schema."""
    return [
        "--task",
        "imdb",
        "--data",
        data,
        "--preset",
        "tiny",
        "--train-steps",
        str(steps),
        "--set",
        "peak_learning_rate=0.003",
        "--eval-steps",
        "3",
        "--schema",
        SCHEMA,
    ]


@contextlib.contextmanager
def progress_every_step():
    """The Trainer's progress line after every step (trainer_module/training/progress.py)."""
    saved = os.environ.get("TFXT_PROGRESS_SECONDS")
    os.environ["TFXT_PROGRESS_SECONDS"] = "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TFXT_PROGRESS_SECONDS"]
        else:
            os.environ["TFXT_PROGRESS_SECONDS"] = saved


@dataclasses.dataclass
class Reruns:
    output: str  # a copy of the next span's run's output, rerun twice
    args: list  # that run's arguments after `--output DIR`
    second: dict  # the summaries of the two reruns
    third: dict
    third_progress: str  # what the fully cached rerun printed on stderr


@pytest.fixture(scope="session")
def imdb_reruns(imdb_next_span, tmp_path_factory) -> Reruns:
    """The next span's run (a window of two spans) rerun twice with the same options, on a copy
    of its output: the first rerun evaluates against the newly blessed baseline, the second is
    served from cache."""
    from tests.e2e.cli_util import copy_output

    args = imdb_next_span.args
    output = copy_output(imdb_next_span.output, tmp_path_factory.mktemp("reruns") / "out")
    (second,) = run_cli("run", "--output", output, *args).lines
    with progress_every_step():
        third = run_cli("run", "--output", output, *args)
    return Reruns(output, args, second, *third.lines, third.stderr)


@dataclasses.dataclass
class CopiedRun:
    summary: dict
    output: str
    args: list = None  # the run's arguments after `--output DIR`, when not the session run's


@pytest.fixture(scope="session")
def imdb_tuned(imdb_run, tmp_path_factory) -> CopiedRun:
    """The session's run rerun on a copy of its output with a two-trial Tuner, three training
    steps and a wide path that does not learn (it trains for its own steps, whatever the
    encoder's: a model near chance) and an accuracy bar of 0.99: searched, trained, refused."""
    from tests.e2e.cli_util import copy_output

    output = copy_output(imdb_run.output, tmp_path_factory.mktemp("tuned") / "out")
    args = list(imdb_run.args)
    args[args.index("--train-steps") + 1] = "3"
    args += ["--set", "ngram_learning_rate=1e-9"]  # the Trainer's alone: Transform is cached
    (summary,) = run_cli(
        "run",
        "--output",
        output,
        *args,
        "--tune",
        "--tuner-trials",
        "2",
        "--blessing-threshold",
        "0.99",
    ).lines
    return CopiedRun(summary, output)


@pytest.fixture(scope="session")
def imdb_next_span(imdb_run, tmp_path_factory) -> CopiedRun:
    """The session's run rerun on a copy of its output and of its spans, with a second span
    of 128 reviews added and a window of two spans (`--spans 2`): the pipeline validates span
    2, trains on spans 1 and 2, evaluates on span 2 and pushes a second version."""
    import shutil

    from tests.e2e.cli_util import copy_output

    root = tmp_path_factory.mktemp("next_span")
    output = copy_output(imdb_run.output, root / "out")
    spans = shutil.copytree(imdb_run.data.parent, root / "imdb")
    write_aclimdb(spans / "span-2", copies=4)
    args = list(imdb_run.args)
    args[args.index("--data") + 1] = spans / "span-{SPAN}"
    args += ["--spans", "2"]
    (summary,) = run_cli("run", "--output", output, *args).lines
    return CopiedRun(summary, output, args)
