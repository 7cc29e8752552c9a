"""A Vertex AI custom job, sent by the task's client to the launch's job service: what the
client refuses before anything leaves the process (as Vertex AI's gapic client does), what the
service refuses before any replica starts (as Vertex AI's service does), the environment each
replica gets, and the job's state from its replicas' exits."""

import json
import sys

import pytest
from google.api_core import exceptions

from pipeline.launch import job_service, training_jobs
from pipeline.launch.runners import LocalRunner


def pools(*counts):
    return [
        {
            "machine_spec": {
                "machine_type": "g2-standard-24",
                "accelerator_type": "NVIDIA_L4",
                "accelerator_count": 2,
            },
            "replica_count": count,
            "container_spec": {"image_uri": "i", "command": []},
        }
        for count in counts
    ]


def as_sent(job: dict) -> dict:
    """The job as the client sends it: the CustomJob proto's JSON."""
    from google.cloud.aiplatform_v1.types import CustomJob

    return json.loads(CustomJob.to_json(CustomJob(job), use_integers_for_enums=False))


def test_each_replica_gets_the_cluster_spec_and_tf_config_vertex_sets():
    job = as_sent({"display_name": "tfx_1", "job_spec": {"worker_pool_specs": pools(1, 2)}})
    replicas = job_service.replica_environments(job["jobSpec"]["workerPoolSpecs"], job)
    assert [(pool, index) for pool, index, _ in replicas] == [(0, 0), (1, 0), (1, 1)]
    specs = [json.loads(env["CLUSTER_SPEC"]) for _, _, env in replicas]
    configs = [json.loads(env["TF_CONFIG"]) for _, _, env in replicas]
    hosts = specs[0]["cluster"]
    assert list(hosts) == ["workerpool0", "workerpool1"]
    assert len(hosts["workerpool0"]) == 1 and len(hosts["workerpool1"]) == 2
    assert len({h for listed in hosts.values() for h in listed}) == 3  # distinct ports
    assert [s["task"] for s in specs] == [
        {"type": "workerpool0", "index": 0},
        {"type": "workerpool1", "index": 0},
        {"type": "workerpool1", "index": 1},
    ]
    assert configs[0]["cluster"] == {"chief": hosts["workerpool0"], "worker": hosts["workerpool1"]}
    assert [c["task"] for c in configs] == [
        {"type": "chief", "index": 0},
        {"type": "worker", "index": 0},
        {"type": "worker", "index": 1},
    ]


@pytest.fixture
def service(tmp_path):
    runner = LocalRunner({}, str(tmp_path / "forkserver.log"), fresh=True)
    started = job_service.JobService(runner)
    started.log_file = str(tmp_path / "task.log")
    training_jobs.install(started.url)
    yield started
    started.close()


def job_running(*scripts):
    """A custom job whose pool i runs `python -c scripts[i]`, one replica each."""
    specs = pools(*[1] * len(scripts))
    for spec, script in zip(specs, scripts):
        spec["container_spec"]["command"] = ["python", "-c", script]
    return {"display_name": "tfx_test", "job_spec": {"worker_pool_specs": specs}}


def client():
    return training_jobs.LocalJobServiceClient(client_options={"api_endpoint": "x"})


def test_the_job_succeeds_when_every_replica_does_and_each_sees_its_role(service, tmp_path):
    from google.cloud.aiplatform_v1.types.job_state import JobState

    out = tmp_path / "roles"
    script = (
        "import json, os, sys; t = json.loads(os.environ['TF_CONFIG'])['task'];"
        f"open({str(out)!r} + t['type'], 'w').write(sys.executable)"
    )
    created = client().create_custom_job(
        parent="projects/p/locations/l", custom_job=job_running(script, script)
    )
    assert created.state == JobState.JOB_STATE_SUCCEEDED
    assert client().get_custom_job(name=created.name).state == JobState.JOB_STATE_SUCCEEDED
    # `python` is this environment's interpreter, as the image's is there.
    assert (tmp_path / "roleschief").read_text() == sys.executable
    assert (tmp_path / "rolesworker").read_text() == sys.executable
    log = (tmp_path / "task.log").read_text()
    assert "worker pool 0: 1 x g2-standard-24 with 2 NVIDIA_L4: replica 0 runs" in log
    assert "worker pool 1: 1 x g2-standard-24 with 2 NVIDIA_L4: replica 0 runs" in log


def test_a_failing_replica_fails_the_job_and_stops_the_others(service):
    from google.cloud.aiplatform_v1.types.job_state import JobState

    never_ends = "import time; time.sleep(600)"
    job = job_running(never_ends, "raise SystemExit(3)")
    created = client().create_custom_job(parent="projects/p/locations/l", custom_job=job)
    assert created.state == JobState.JOB_STATE_FAILED


@pytest.mark.parametrize(
    "change, error, message",
    [
        # What the proto refuses, in the client, as Vertex AI's own client would.
        (lambda pool: pool["machine_spec"].update(machine_typ="n1"), ValueError, "machine_typ"),
        (
            lambda pool: pool["machine_spec"].update(accelerator_type="NVIDIA_TESLA_T5"),
            KeyError,
            "NVIDIA_TESLA_T5",
        ),
        # What the service refuses.
        (lambda pool: pool.update(replica_count=2), exceptions.InvalidArgument, "must be 1"),
        (
            lambda pool: pool["machine_spec"].pop("machine_type"),
            exceptions.InvalidArgument,
            "machine_type is required",
        ),
        (
            lambda pool: pool["machine_spec"].pop("accelerator_type"),
            exceptions.InvalidArgument,
            "accelerator_count 2",
        ),
    ],
)
def test_a_job_vertex_ai_would_refuse_fails_before_any_replica_starts(
    service, tmp_path, change, error, message
):
    marker = tmp_path / "started"
    job = job_running(f"open({str(marker)!r}, 'w').write('1')")
    change(job["job_spec"]["worker_pool_specs"][0])
    with pytest.raises(error, match=message):
        client().create_custom_job(parent="projects/p/locations/l", custom_job=job)
    assert not marker.exists()
