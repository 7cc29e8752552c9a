"""Submitting a compiled pipeline, checked at the SDK boundary (there is no cloud here)."""

import json
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
    assert calls == [
        ("init", {"project": "proj", "location": "europe-west4"}),
        (
            "job",
            {
                "display_name": "imdb-transformer",
                "template_path": template,
                "pipeline_root": "gs://bucket/tt/pipelines/imdb-transformer",
                "parameter_values": {"train_args": '{"num_steps": 900}'},
                "enable_caching": True,
            },
        ),
        ("submit", {"service_account": "runner@proj.iam.gserviceaccount.com"}),
    ]


def test_kubeflow_gets_the_pipeline_spec_as_yaml_with_the_default_parameters(tmp_path, monkeypatch):
    calls = []

    class Client:
        def __init__(self, host):
            calls.append(("client", host))

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
    )
    assert run_id == "run-42"
    spec_path = str(tmp_path / "imdb-transformer.yaml")
    assert calls == [
        ("client", "https://kfp.example"),
        (
            "run",
            spec_path,
            {
                "arguments": {"train_args": '{"num_steps": 100}', "eval_args": '{"num_steps": 9}'},
                "run_name": "imdb-transformer",
                "pipeline_root": "gs://bucket/tt/pipelines/imdb-transformer",
                "enable_caching": True,
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
