"""The ExecutorInput each orchestrator builds (pipeline/launch/shapes.py), and what a Kubeflow
cluster's API server would refuse of a pod."""

import json

import pytest

from pipeline.launch.launcher import Launch, LaunchError
from pipeline.launch.shapes import KubeflowShape, ShapeError, VertexShape
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
