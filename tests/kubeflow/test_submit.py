"""Submitting a compiled pipeline, checked at the SDK boundary (there is no cloud here)."""

import json
import re
import sys
import types

import google.cloud
import yaml

from pipeline.cloud import CloudConfig
from pipeline.kubeflow_runner import submit

CLOUD = CloudConfig(project="proj", region="europe-west4", root="gs://bucket/tt", image="img:1")
JOB = {
    "pipelineSpec": {"pipelineInfo": {"name": "imdb-transformer"}, "root": {}},
    "runtimeConfig": {
        "parameterValues": {"train_args": '{"num_steps": 100}', "eval_args": '{"num_steps": 5}'}
    },
}


def write_job(tmp_path):
    path = tmp_path / "imdb-transformer.json"
    path.write_text(json.dumps(JOB))
    return str(path)


def test_vertex_submits_a_pipeline_job_under_the_pipeline_root(tmp_path, monkeypatch):
    calls = []

    class PipelineJob:
        resource_name = "projects/proj/locations/europe-west4/pipelineJobs/imdb-transformer-1"

        def __init__(self, **kwargs):
            calls.append(("job", kwargs))

        def submit(self, **kwargs):
            calls.append(("submit", kwargs))

    fake = types.SimpleNamespace(
        init=lambda **kwargs: calls.append(("init", kwargs)), PipelineJob=PipelineJob
    )
    monkeypatch.setattr(google.cloud, "aiplatform", fake, raising=False)
    monkeypatch.setitem(sys.modules, "google.cloud.aiplatform", fake)
    template = write_job(tmp_path)
    name = submit(
        template,
        "imdb-transformer",
        CLOUD,
        parameter_values={"train_args": '{"num_steps": 900}'},
        service_account="runner@proj.iam.gserviceaccount.com",
    )
    assert name == PipelineJob.resource_name
    display_name = calls[1][1].pop("display_name")
    assert re.fullmatch(r"imdb-transformer-\d{8}-\d{6}", display_name)  # a run's own name
    assert calls == [
        ("init", {"project": "proj", "location": "europe-west4"}),
        (
            "job",
            {
                "template_path": template,
                "pipeline_root": "gs://bucket/tt/pipelines/imdb-transformer",
                "parameter_values": {"train_args": '{"num_steps": 900}'},
                "enable_caching": None,  # each task's compiled caching
            },
        ),
        ("submit", {"service_account": "runner@proj.iam.gserviceaccount.com"}),
    ]


def test_kubeflow_gets_the_pipeline_spec_as_yaml_with_the_default_parameters(tmp_path, monkeypatch):
    calls = []

    class Client:
        def __init__(self, host, **kwargs):
            calls.append(("client", host, kwargs))

        def create_run_from_pipeline_package(self, path, **kwargs):
            calls.append(("run", path, kwargs))
            return types.SimpleNamespace(run_id="run-42")

    monkeypatch.setitem(sys.modules, "kfp", types.SimpleNamespace(Client=Client))
    template = write_job(tmp_path)
    run_id = submit(
        template,
        "imdb-transformer",
        CLOUD,
        engine="kubeflow",
        host="https://kfp.example",
        parameter_values={"eval_args": '{"num_steps": 9}'},
        namespace="team-a",
    )
    assert run_id == "run-42"
    spec_path = str(tmp_path / "imdb-transformer.yaml")
    run_name = calls[1][2].pop("run_name")
    # Each run its own display name: the backend hands it to the steps as the job's name.
    assert re.fullmatch(r"imdb-transformer-\d{8}-\d{6}", run_name)
    assert calls == [
        ("client", "https://kfp.example", {"namespace": "team-a"}),
        (
            "run",
            spec_path,
            {
                "arguments": {"train_args": '{"num_steps": 100}', "eval_args": '{"num_steps": 9}'},
                "namespace": "team-a",
                "pipeline_root": "gs://bucket/tt/pipelines/imdb-transformer",
                "enable_caching": None,
                "service_account": None,
            },
        ),
    ]
    assert yaml.safe_load(open(spec_path)) == JOB["pipelineSpec"]


def test_the_submit_command_passes_runtime_parameters_as_strings(tmp_path, monkeypatch, capsys):
    from pipeline import cli, kubeflow_runner

    for name, value in {
        "GOOGLE_CLOUD_PROJECT": "proj",
        "PIPELINE_ROOT": "gs://bucket/tt",
        "PIPELINE_IMAGE": "img:1",
    }.items():
        monkeypatch.setenv(name, value)
    seen = {}
    monkeypatch.setattr(
        kubeflow_runner,
        "submit",
        lambda template, name, cloud, **kwargs: seen.update(template=template, name=name, **kwargs)
        or "job-1",
    )
    template = write_job(tmp_path)
    assert cli.main(["submit", template, "--param", 'train_args={"num_steps": 2000}']) == 0
    assert seen["name"] == "imdb-transformer" and seen["engine"] == "vertex"
    assert seen["parameter_values"] == {"train_args": '{"num_steps": 2000}'}
    assert json.loads(capsys.readouterr().out)["run"] == "job-1"


def compiled(tmp_path, target):
    from tests.kubeflow.test_compile import compile_job

    environ = {
        "GOOGLE_CLOUD_PROJECT": "proj",
        "PIPELINE_ROOT": "gs://bucket/tt",
        "PIPELINE_IMAGE": "img:1",
        "MODEL_REGISTRY": "none",
        **({"VERTEX_TRAINING": "0", "BEAM_RUNNER": "direct"} if target == "kubeflow" else {}),
    }
    job = compile_job(tmp_path, "imdb", environ=environ, target=target)
    path = tmp_path / f"job-{target}.json"
    path.write_text(json.dumps(job))
    return str(path)


def caching_of(spec: dict) -> dict:
    return {
        name: task.get("cachingOptions", {}).get("enableCache", False)
        for name, task in spec["root"]["dag"]["tasks"].items()
    }


def vertex_submitted_spec(tmp_path, monkeypatch, **options) -> dict:
    """The pipeline spec Vertex AI's own SDK (google-cloud-aiplatform's PipelineJob) would send
    for the compiled job, through `submit`, stopped where the request would leave."""
    import google.auth
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform
    from google.protobuf import json_format

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "proj"))
    sent = {}

    def capture(job, **kwargs):
        sent["spec"] = json_format.MessageToDict(job._gca_resource._pb.pipeline_spec)
        job._gca_resource.name = "projects/proj/locations/europe-west4/pipelineJobs/x"

    monkeypatch.setattr(aiplatform.PipelineJob, "submit", capture)
    submit(compiled(tmp_path, "vertex"), "imdb-text-encoder", CLOUD, **options)
    return sent["spec"]


def kubeflow_submitted_spec(tmp_path, monkeypatch, **options) -> dict:
    """The pipeline spec the kfp SDK's Client would send to a Kubeflow Pipelines API server
    for the compiled job, through `submit`, stopped where the request would leave."""
    import kfp
    import kfp_server_api

    sent = {}

    def create_run(api, body, **kwargs):
        sent["spec"] = body.pipeline_spec
        return kfp_server_api.V2beta1Run(run_id="run-1")

    monkeypatch.setattr(kfp_server_api.RunServiceApi, "run_service_create_run", create_run)
    monkeypatch.setattr(
        kfp.Client, "get_kfp_healthz", lambda *a, **k: types.SimpleNamespace(multi_user=False)
    )
    monkeypatch.setattr(
        kfp.Client, "create_experiment", lambda *a, **k: types.SimpleNamespace(experiment_id="e")
    )
    submit(
        compiled(tmp_path, "kubeflow"),
        "imdb-text-encoder",
        CLOUD,
        engine="kubeflow",
        host="http://127.0.0.1:9",
        **options,
    )
    return sent["spec"]


def test_submit_keeps_the_compiled_caching_through_both_sdks(tmp_path, monkeypatch):
    vertex = caching_of(vertex_submitted_spec(tmp_path, monkeypatch))
    assert vertex["ChampionModel"] is False  # the registry's champion, asked every run
    assert vertex["Transform"] is True
    kubeflow = caching_of(kubeflow_submitted_spec(tmp_path, monkeypatch))
    assert kubeflow["ChampionModel"] is False
    assert kubeflow["ReviewsExampleGen"] is False  # no driver: the data decides
    assert kubeflow["Transform"] is True


def test_an_explicit_cache_override_is_the_sdks_for_every_task(tmp_path, monkeypatch):
    # What `submit --cache` asks for, and why it is not the default: both SDKs then serve
    # ChampionModel from the cache, so every run would see the first run's champion.
    vertex = caching_of(vertex_submitted_spec(tmp_path, monkeypatch, enable_cache=True))
    assert set(vertex.values()) == {True}
    kubeflow = caching_of(kubeflow_submitted_spec(tmp_path, monkeypatch, enable_cache=False))
    assert set(kubeflow.values()) == {False}
