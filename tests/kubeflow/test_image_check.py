"""What the pipeline image's build checks (pipeline/image_check.py): every module a compiled
job names, found in the jobs and imported here as the image's build imports them there."""

from pipeline import image_check
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
