"""The ExecutorInput each orchestrator builds (pipeline/launch/shapes.py), and what a Kubeflow
cluster's API server would refuse of a pod."""

import json

import pytest

from pipeline.launch.launcher import Launch, LaunchError
from pipeline.launch.shapes import (
    KFP_RANGES,
    LEGACY_OUTPUT_FILE,
    NEWEST_KFP,
    KfpBackend,
    KubeflowShape,
    ShapeError,
    VertexShape,
)
from tests.kubeflow.test_compile import ENVIRONMENT, compile_job

ARTIFACT = {
    "name": "projects/local/locations/local/metadataStores/default/artifacts/7",
    "sequence": 7,
    "instance_schema": "title: tfx.Examples\n",
    "uri": "/out/gs/bucket/root/x/examples",
    "metadata": {"span": 0.0},
    "output_key": "examples",
}


def test_vertex_names_artifacts_by_resource_name_and_sends_their_types():
    shape = VertexShape("p", "p-20261201-abc", "/out/gs/bucket/root")
    given = shape.input_artifact(ARTIFACT, "examples")
    assert given == {
        "name": ARTIFACT["name"],
        "type": {"instanceSchema": "title: tfx.Examples\n"},
        "uri": ARTIFACT["uri"],
        "metadata": {"span": 0.0},
    }
    root = shape.task_root("Trainer")
    assert root.startswith("/out/gs/bucket/root/p-20261201-abc/Trainer_")
    assert shape.output_file(root, "/pod") == f"{root}/executor_output.json"
    assert shape.parameter("run {{$.pipeline_job_name}}", "Trainer") == "run p-20261201-abc"


def test_kubeflow_sends_mlmd_ids_no_types_and_names_outputs_by_key():
    shape = KubeflowShape("p", "p-20261201-abc", "/out/gs/bucket/root", "/out/gs")
    given = shape.input_artifact(ARTIFACT, "examples")
    assert given["name"] == "7"  # the MLMD id
    assert given["type"] == {"instanceSchema": ""}  # the backend keeps no schema
    assert given["metadata"]["display_name"] == "examples"
    assert "store_session_info" in given["metadata"]
    assert shape.output_artifact(ARTIFACT, "examples")["name"] == "examples"
    root = shape.task_root("Trainer")
    prefix = f"/out/gs/bucket/root/p/{shape.run_id}/Trainer/"
    assert root.startswith(prefix)
    # The executor output on the pod's own disk, under /gcs/ and the task root's bucket path.
    assert shape.output_file(root, "/") == f"/gcs/{root[len('/out/gs/') :]}/output_metadata.json"
    # Only a constant that is exactly a placeholder is replaced; the job name: the display name.
    assert shape.parameter("{{$.pipeline_job_name}}", "Trainer") == "p-20261201-abc"
    assert shape.parameter("{{$.pipeline_job_uuid}}", "Trainer") == shape.run_id
    assert shape.parameter("run {{$.pipeline_job_name}}", "T") == "run {{$.pipeline_job_name}}"


# One release from each side of every change KfpBackend models (kubeflow/pipelines' tags).
RELEASES = ["2.0.5", "2.2.0", "2.3.0", "2.4.1", "2.5.0", "2.14.3", "2.15.0", "2.17.0"]


@pytest.mark.parametrize("release", RELEASES)
def test_each_kfp_release_builds_the_input_its_driver_and_launcher_build(release):
    backend = KfpBackend.of(release)
    version = backend.version
    shape = KubeflowShape("p", "p-20261201-abc", "/out/gs/bucket/root", "/out/gs", backend)
    root = shape.task_root("Trainer")
    parts = root[len(f"/out/gs/bucket/root/p/{shape.run_id}/") :].split("/")
    # From 2.4 a salt (a UUID) between the task and the outputs' keys.
    assert parts == ["Trainer", parts[1]] if version >= (2, 4, 0) else parts == ["Trainer"]
    output = shape.output_artifact(ARTIFACT, "examples")
    # From 2.15 outputs are named by their keys, and the executor output file lies under the
    # task root's /gcs/ path; before, no name, and one file for every task.
    assert ("name" in output) == (version >= (2, 15, 0))
    told = shape.output_file(root, "/")
    if version >= (2, 15, 0):
        assert told == f"/gcs/bucket/root/p/{shape.run_id}/{'/'.join(parts)}/output_metadata.json"
    else:
        assert told == LEGACY_OUTPUT_FILE
    # From 2.5 every task gets an executor-logs output it does not declare ...
    added = shape.launcher_outputs(root)
    if version >= (2, 5, 0):
        assert added["executor-logs"]["type"] == {"schemaTitle": "system.Artifact"}
        assert added["executor-logs"]["uri"] == f"{root}/executor-logs"
        assert ("name" in added["executor-logs"]) == (version >= (2, 15, 0))
    else:
        assert added == {}
    # ... and a constant that is exactly a job placeholder is filled in; before, none is.
    filled = shape.parameter("{{$.pipeline_job_name}}", "Trainer")
    assert filled == ("p-20261201-abc" if version >= (2, 5, 0) else "{{$.pipeline_job_name}}")
    # From 2.3 inputs carry the store session the launcher recorded.
    given = shape.input_artifact(ARTIFACT, "examples")
    assert ("store_session_info" in given["metadata"]) == (version >= (2, 3, 0))
    assert given["type"] == {"instanceSchema": ""} and given["name"] == "7"


def test_the_ranges_cover_every_release_and_each_changes_what_a_step_sees():
    starts = [KfpBackend.of(low) for low, _ in KFP_RANGES]
    assert starts[0].name == "2.0.0" and KFP_RANGES[-1][1] == NEWEST_KFP[:4]
    seen = [
        (b.salts_outputs, b.adds_executor_logs, b.fills_job_placeholders, b.names_outputs)
        for b in starts
    ]
    assert len(set(seen)) == len(seen)
    for (_, high), (low, _) in zip(KFP_RANGES, KFP_RANGES[1:]):  # no gap between ranges
        assert KfpBackend.of(low).version[1] == KfpBackend.of(high).version[1] + 1


@pytest.mark.parametrize("text", ["1.8.5", "3.0", "latest", "2"])
def test_a_kfp_version_that_is_not_a_kfp_2_release_is_refused(text):
    with pytest.raises(ShapeError, match="Kubeflow Pipelines 2"):
        KfpBackend.of(text)


def test_a_release_newer_than_the_newest_read_gets_its_shape_and_says_so():
    backend = KfpBackend.of("2.21.0")
    assert backend.newer_than_read and backend.names_outputs and backend.adds_executor_logs


@pytest.mark.parametrize(
    "resources, refused",
    [
        ({"accelerator": {"resourceType": "nvidia.com/gpu", "resourceCount": "1"}}, None),
        ({"resourceCpuLimit": "8", "resourceMemoryLimit": "32G"}, None),
        ({"cpuLimit": 8.0, "memoryLimit": 32.0}, None),
        ({"accelerator": {"type": "NVIDIA_TESLA_T4", "count": "1"}}, "not a Kubernetes resource"),
        ({"resourceMemoryLimit": "32 GB"}, "not a quantity"),
    ],
)
def test_a_pod_is_checked_as_the_api_server_checks_it(resources, refused):
    shape = KubeflowShape("p", "j", "/r", "/g")
    if refused:
        with pytest.raises(ShapeError, match=refused):
            shape.pod_resources({"resources": resources})
    else:
        pod = shape.pod_resources({"resources": resources})
        assert pod["limits"] or pod["requests"]


def test_a_kubeflow_job_asking_for_a_vertex_accelerator_name_is_refused_before_it_runs(tmp_path):
    """A job compiled before the kubeflow target named accelerators as Kubernetes does."""
    environ = {**ENVIRONMENT, "VERTEX_TRAINING": "0", "BEAM_RUNNER": "direct"}
    environ.update(MODEL_REGISTRY="none", TRAINER_ACCELERATOR_TYPE="nvidia.com/gpu")
    job = compile_job(tmp_path, "imdb", environ=environ, target="kubeflow")
    spec = job["pipelineSpec"]
    trainer = spec["components"][spec["root"]["dag"]["tasks"]["Trainer"]["componentRef"]["name"]]
    resources = spec["deploymentSpec"]["executors"][trainer["executorLabel"]]["container"][
        "resources"
    ]
    assert resources["accelerator"]["resourceType"] == "nvidia.com/gpu"
    resources["accelerator"].update(resourceType="NVIDIA_TESLA_T4", type="NVIDIA_TESLA_T4")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    with pytest.raises(LaunchError, match="task Trainer: the pod asks for NVIDIA_TESLA_T4"):
        Launch(str(path), str(tmp_path / "out"))
