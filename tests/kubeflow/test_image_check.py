"""What the pipeline image's build checks (pipeline/image_check.py): every module a compiled
job names, found in the jobs and imported here as the image's build imports them there."""

import os
import shutil
import subprocess
import sys

import pytest

from pipeline import configs, image_check
from tests.kubeflow.test_compile import ENVIRONMENT, compile_job


def test_a_compiled_job_names_its_entrypoints_executors_types_and_functions(tmp_path):
    vertex = image_check.named_by(compile_job(tmp_path, "imdb"))
    assert {
        "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor",
        "tfx.orchestration.kubeflow.v2.file_based_example_gen.driver",  # the pre-cache check
        "tfx.scripts.run_executor",  # what the Vertex AI training job's replicas start
    } <= vertex["modules"]
    assert (
        "tfx.extensions.google_cloud_ai_platform.trainer.executor.GenericExecutor"
        in (vertex["classes"])
    )
    assert {
        "trainer_module.text_encoder.training.run_fn",
        "trainer_module.text_encoder.preprocessing.preprocessing_fn",
    } <= vertex["functions"]
    environ = {k: v for k, v in ENVIRONMENT.items() if k != "TRAINER_ACCELERATOR_TYPE"}
    environ.update(VERTEX_TRAINING="0", BEAM_RUNNER="direct")
    kubeflow = image_check.named_by(
        compile_job(tmp_path, "imdb", environ=environ, target="kubeflow")
    )
    assert kubeflow["modules"] == {"pipeline.kubeflow_entrypoint"}
    assert "tfx.components.trainer.executor.GenericExecutor" in kubeflow["classes"]


def test_everything_every_job_names_imports_here(tmp_path):
    names = {k: set() for k in ("modules", "classes", "types", "functions")}
    jobs = list(image_check.compiled_jobs(str(tmp_path)))
    assert len(jobs) >= 2 * 4 + 1  # every task and family, both targets, bulk inference
    for _, job in jobs:
        for kind, found in image_check.named_by(job).items():
            names[kind] |= found
    assert image_check.check(names) == []
    assert {"trainer_module.vit.training.run_fn", "trainer_module.bert.training.run_fn"} <= (
        names["functions"]
    )


def test_what_does_not_import_is_named_with_why():
    failures = image_check.check(
        {
            "modules": {"tfx.orchestration.kubeflow.v2.container.no_such_entrypoint"},
            "classes": set(),
            "types": set(),
            "functions": {"trainer_module.text_encoder.training.no_such_fn"},
        }
    )
    assert len(failures) == 2
    assert failures[0].startswith("module tfx.orchestration.kubeflow.v2.container.no_such")
    assert "AttributeError" in failures[1] and "no_such_fn" in failures[1]


def test_no_boot_binary_is_named_as_what_the_runners_start_workers_through(tmp_path):
    (failure,) = image_check.check_beam_worker(str(tmp_path / "boot"))
    assert failure.startswith(f"no Beam boot binary at {tmp_path / 'boot'}")


@pytest.mark.slow
def test_a_beam_worker_starts_through_beams_boot_binary_and_runs_a_pipeline(monkeypatch, tmp_path):
    """scripts/beam_boot.sh's binary (built with the stand-in base, `make image`), as the
    image's build runs it: the worker pool starts it, it fetches the job's options and artifacts
    from the runner, and the SDK harness it starts (in this environment: the image sets the same
    variable) squares 1, 2, 3 with boot as its parent process."""
    boot = beam_boot()
    monkeypatch.setenv("RUN_PYTHON_SDK_IN_DEFAULT_ENVIRONMENT", "1")
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    assert image_check.check_beam_worker(boot) == []
    assert list(tmp_path.iterdir()) == []  # boot's pipeline_options.json left in its own folder


def beam_boot() -> str:
    """scripts/beam_boot.sh's binary at the lock's Beam version, built first where it is not
    (seconds with Go's caches warm, as after `make image` built the base)."""
    if not shutil.which("go"):
        pytest.skip("building Beam's boot binary needs Go")
    built = subprocess.run(
        [str(configs.REPO_ROOT / "scripts" / "beam_boot.sh")], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-2000:]
    return built.stdout.strip()
