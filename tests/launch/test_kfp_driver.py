"""The outputs launch's KubeflowShape hands each task of the compiled IMDB job, against those
Kubeflow Pipelines' own driver provisions for it (`provisionOutputs`, kubeflow/pipelines
`backend/src/v2/driver`) at four release tags, one from each range of releases.

The driver's answers are recorded under tests/launch/kfp_driver/, one file per release, each
naming its tag's commit: KFP's Go module is not on Go's module proxy (it refuses every version
and commit of github.com/kubeflow/pipelines), so the driver was built and run from that tag's
source in a checkout outside this repository, once, and its answer kept. What a release hands
a step's inputs (an MLMD id, an empty type) and its placeholders are tested beside the shapes
(tests/launch/test_shapes.py)."""

import json
import pathlib

import pytest
import yaml

from pipeline.launch.shapes import KfpBackend, KubeflowShape
from tests.kubeflow.test_compile import ENVIRONMENT, compile_job

RECORDED = pathlib.Path(__file__).parent / "kfp_driver"
RELEASES = sorted(p.stem.removeprefix("outputs-") for p in RECORDED.glob("outputs-*.json"))
ROOT, PIPELINE, RUN, SALT = "gs://bucket/root", "pipeline", "RUN", "SALT"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    environ = {k: v for k, v in ENVIRONMENT.items() if not k.startswith("TRAINER_ACCELERATOR")}
    environ.update(MODEL_REGISTRY="none", VERTEX_TRAINING="0", BEAM_RUNNER="direct")
    return compile_job(tmp_path_factory.mktemp("job"), "imdb", environ=environ, target="kubeflow")


def title(artifact_type: dict) -> str:
    if "schemaTitle" in artifact_type:
        return artifact_type["schemaTitle"]
    return yaml.safe_load(artifact_type["instanceSchema"])["title"]


def launched_outputs(job: dict, release: str, task: str) -> dict:
    """What launch hands `task` as its outputs, in the recorded files' terms."""
    shape = KubeflowShape(PIPELINE, "job", ROOT, "", KfpBackend.of(release))
    shape.run_id = RUN
    task_root = shape.task_root(task)
    if shape.backend.salts_outputs:
        task_root = task_root.rsplit("/", 1)[0] + f"/{SALT}"
    spec = job["pipelineSpec"]
    component = spec["components"][spec["root"]["dag"]["tasks"][task]["componentRef"]["name"]]
    artifacts = {}
    for key, declared in component.get("outputDefinitions", {}).get("artifacts", {}).items():
        given = {
            "instance_schema": declared["artifactType"]["instanceSchema"],
            "uri": shape.output_uri(task_root, key),
        }
        artifacts[key] = shape.output_artifact(given, key)
    artifacts.update(shape.launcher_outputs(task_root))
    return {
        "artifacts": {
            key: {
                **({"name": a["name"]} if "name" in a else {}),
                "type": title(a["type"]),
                "uri": a["uri"],
            }
            for key, a in sorted(artifacts.items())
        },
        "outputFile": shape.output_file(task_root, "/"),
    }


def test_a_release_from_each_range_is_recorded():
    ranges = {
        (b.salts_outputs, b.adds_executor_logs, b.names_outputs)
        for b in map(KfpBackend.of, RELEASES)
    }
    assert len(RELEASES) >= 3 and len(ranges) == len(RELEASES)


@pytest.mark.parametrize("release", RELEASES)
def test_launch_hands_each_task_the_outputs_kfps_own_driver_provisions(job, release):
    recorded = json.loads((RECORDED / f"outputs-{release}.json").read_text())
    assert recorded["release"] == release and len(recorded["commit"]) == 40
    tasks = set(job["pipelineSpec"]["root"]["dag"]["tasks"])
    assert set(recorded["tasks"]) == tasks  # recorded on the job this test compiles
    for task in sorted(tasks):
        assert launched_outputs(job, release, task) == recorded["tasks"][task], task
