"""A Vertex AI custom job's worker pools as local processes: the environment each replica gets,
and the job's state from its replicas' exits."""

import json
import sys

from pipeline.launch import training_jobs


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


def test_each_replica_gets_the_cluster_spec_and_tf_config_vertex_sets():
    job = {"display_name": "tfx_1"}
    replicas = training_jobs.replica_environments(pools(1, 2), job)
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


def job_running(tmp_path, *scripts):
    """A custom job whose pool i runs `python -c scripts[i]`, one replica each."""
    specs = pools(*[1] * len(scripts))
    for spec, script in zip(specs, scripts):
        spec["container_spec"]["command"] = ["python", "-c", script]
    return {"display_name": "tfx_test", "job_spec": {"worker_pool_specs": specs}}


def test_the_job_succeeds_when_every_replica_does_and_each_sees_its_role(tmp_path):
    out = tmp_path / "roles"
    script = (
        "import json, os, sys; t = json.loads(os.environ['TF_CONFIG'])['task'];"
        f"open({str(out)!r} + t['type'], 'w').write(sys.executable)"
    )
    client = training_jobs.LocalJobServiceClient(client_options={"api_endpoint": "x"})
    created = client.create_custom_job(
        parent="projects/p/locations/l", custom_job=job_running(tmp_path, script, script)
    )
    from google.cloud.aiplatform_v1.types.job_state import JobState

    assert created.state == JobState.JOB_STATE_SUCCEEDED
    assert client.get_custom_job(name=created.name).state == JobState.JOB_STATE_SUCCEEDED
    # `python` is this environment's interpreter, as in the image.
    assert (tmp_path / "roleschief").read_text() == sys.executable
    assert (tmp_path / "rolesworker").read_text() == sys.executable


def test_a_failing_replica_fails_the_job_and_stops_the_others(tmp_path):
    from google.cloud.aiplatform_v1.types.job_state import JobState

    never_ends = "import time; time.sleep(600)"
    job = job_running(tmp_path, never_ends, "raise SystemExit(3)")
    created = training_jobs.LocalJobServiceClient().create_custom_job(
        parent="projects/p/locations/l", custom_job=job
    )
    assert created.state == JobState.JOB_STATE_FAILED
