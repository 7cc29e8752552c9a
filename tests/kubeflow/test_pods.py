"""The kubeflow target's pods as a cluster schedules them (pipeline/pods.py): secrets as
environment variables in every step, the Trainer's node selector and tolerations, compiled as a
Kubernetes platform spec that kfp-kubernetes' own proto and KFP's PlatformSpec take, sent by
`submit` through the kfp SDK's own Client to a stand-in API server, with a token where the
cluster asks for one; and launched with each pod's secrets, as the pod would get them."""

import json

import pytest
from google.protobuf import json_format
from kfp.kubernetes import kubernetes_executor_config_pb2 as pb

from pipeline.cloud import CloudConfig
from pipeline.kubeflow_runner import PLATFORM_SPEC, submit
from pipeline.launch.job import CompiledJob, LaunchError
from tests.kubeflow.kfp_api import KfpApiServer
from tests.kubeflow.test_compile import ENVIRONMENT, compile_job

PODS = {
    **{k: v for k, v in ENVIRONMENT.items() if not k.startswith("TRAINER_ACCELERATOR")},
    "VERTEX_TRAINING": "0",
    "BEAM_RUNNER": "direct",
    "MODEL_REGISTRY": "mlflow",
    "MLFLOW_TRACKING_URI": "http://mlflow.kubeflow.svc.cluster.local:5000",
    "TRAINER_ACCELERATOR_TYPE": "nvidia.com/gpu",
    "KUBERNETES_SECRET_ENV": "mlflow-auth/token=MLFLOW_TRACKING_TOKEN,gcs-key/key.json=GCS_KEY",
    "KUBERNETES_SERVICE_ACCOUNT": "pipeline-runner",
    "TRAINER_NODE_SELECTOR": "cloud.google.com/gke-accelerator=nvidia-l4",
    "TRAINER_TOLERATIONS": "nvidia.com/gpu:NoSchedule,dedicated=ml:NoExecute",
}


def executors(job) -> dict:
    return job[PLATFORM_SPEC]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]


def label_of(job, task: str) -> str:
    spec = job["pipelineSpec"]
    return spec["components"][spec["root"]["dag"]["tasks"][task]["componentRef"]["name"]][
        "executorLabel"
    ]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return compile_job(tmp_path_factory.mktemp("job"), "imdb", environ=PODS, target="kubeflow")


def test_every_step_takes_the_secrets_and_the_trainer_its_pool(job):
    configs = executors(job)
    assert set(configs) == {label_of(job, t) for t in job["pipelineSpec"]["root"]["dag"]["tasks"]}
    for label, config in configs.items():
        parsed = json_format.ParseDict(config, pb.KubernetesExecutorConfig())  # kfp-kubernetes'
        secrets = {
            (s.secret_name, k.secret_key, k.env_var)
            for s in parsed.secret_as_env
            for k in s.key_to_env
        }
        assert secrets == {
            ("mlflow-auth", "token", "MLFLOW_TRACKING_TOKEN"),
            ("gcs-key", "key.json", "GCS_KEY"),
        }, label
        # Both spellings of the name: older backends read one, newer ones the other.
        assert {
            s.secret_name_parameter.runtime_value.constant.string_value
            for s in parsed.secret_as_env
        } == {"mlflow-auth", "gcs-key"}
        is_trainer = label == label_of(job, "Trainer")
        assert bool(parsed.node_selector.labels) == is_trainer, label
        assert bool(parsed.tolerations) == is_trainer, label
    trainer = json_format.ParseDict(
        configs[label_of(job, "Trainer")], pb.KubernetesExecutorConfig()
    )
    assert dict(trainer.node_selector.labels) == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    assert [(t.key, t.operator, t.value, t.effect) for t in trainer.tolerations] == [
        ("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        ("dedicated", "Equal", "ml", "NoExecute"),
    ]


@pytest.mark.parametrize(
    "variable, value, refused",
    [
        ("KUBERNETES_SECRET_ENV", "MLflow/token=TOKEN", "not a Kubernetes secret's name"),
        ("KUBERNETES_SECRET_ENV", "mlflow/token=2TOKEN", "not an environment variable's name"),
        ("KUBERNETES_SECRET_ENV", "a/x=TOKEN,b/y=TOKEN", "sets a variable twice"),
        ("TRAINER_NODE_SELECTOR", "cloud.google.com/gke-accelerator", "not a Kubernetes label"),
        ("TRAINER_TOLERATIONS", "nvidia.com/gpu:NoRun", "not a toleration"),
        ("KUBERNETES_SERVICE_ACCOUNT", "Pipeline Runner", "not a Kubernetes service account"),
    ],
)
def test_a_setting_a_cluster_would_refuse_is_refused_at_compile_naming_it(variable, value, refused):
    with pytest.raises(ValueError, match=f"{variable}.*{refused}|{refused}"):
        CloudConfig.from_environment({**PODS, variable: value}, target="kubeflow")


def test_a_vertex_job_refuses_the_settings_of_a_kubeflow_clusters_pods():
    with pytest.raises(
        ValueError, match="TRAINER_TOLERATIONS: settings of a Kubeflow cluster's pods"
    ):
        CloudConfig.from_environment(
            {**ENVIRONMENT, "TRAINER_TOLERATIONS": "nvidia.com/gpu:NoSchedule"}, target="vertex"
        )


def test_without_settings_the_job_carries_no_platform_spec(tmp_path):
    environ = {k: v for k, v in ENVIRONMENT.items() if not k.startswith("TRAINER_ACCELERATOR")}
    environ.update(VERTEX_TRAINING="0", BEAM_RUNNER="direct", MODEL_REGISTRY="none")
    assert PLATFORM_SPEC not in compile_job(tmp_path, "imdb", environ=environ, target="kubeflow")


def submitted(tmp_path, job, server: KfpApiServer, **options) -> dict:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    cloud = CloudConfig.from_environment(PODS, target="kubeflow")
    run = submit(
        str(path), "imdb-text-encoder", cloud, engine="kubeflow", host=server.url, **options
    )
    assert run == "run-1"
    (created,) = server.created_runs()
    return created


def test_submit_sends_the_platform_spec_and_the_service_account_through_the_kfp_client(
    tmp_path, job
):
    server = KfpApiServer()
    try:
        created = submitted(tmp_path, job, server)
    finally:
        server.close()
    body = created["body"]
    assert body["pipeline_spec"]["platform_spec"] == job[PLATFORM_SPEC]
    assert body["pipeline_spec"]["pipeline_spec"]["pipelineInfo"]["name"] == "imdb-text-encoder"
    assert body["service_account"] == "pipeline-runner"  # KUBERNETES_SERVICE_ACCOUNT


@pytest.mark.parametrize("source", ["file", "environment", "service account token"])
def test_submit_carries_a_token_to_a_cluster_that_asks_for_one(tmp_path, job, monkeypatch, source):
    server = KfpApiServer(token="s3cret")
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    options = {}
    if source == "file":
        options["token_file"] = str(token_file)
    elif source == "environment":
        monkeypatch.setenv("KF_PIPELINES_TOKEN", "s3cret")
    else:  # the projected token the kubelet refreshes, read for each request
        monkeypatch.setenv("KF_PIPELINES_SA_TOKEN_PATH", str(token_file))
    try:
        submitted(tmp_path, job, server, **options)
    finally:
        server.close()
    assert {r["authorization"] for r in server.requests} == {"Bearer s3cret"}


def test_without_a_token_a_multi_user_cluster_refuses_the_run(tmp_path, job, monkeypatch):
    for variable in ("KF_PIPELINES_TOKEN", "KF_PIPELINES_SA_TOKEN_PATH"):
        monkeypatch.delenv(variable, raising=False)
    server = KfpApiServer(token="s3cret")
    try:
        with pytest.raises(ValueError, match="refused no token \\(401\\).*--token-file"):
            submitted(tmp_path, job, server)
    finally:
        server.close()
    assert server.created_runs() == []


def test_a_launch_gives_each_pod_its_secrets_and_refuses_one_it_lacks(tmp_path, job):
    given = {"mlflow-auth/token": "t", "gcs-key/key.json": "{}"}
    launched = CompiledJob(job, str(tmp_path), parameters={})
    assert launched.pod_environment("Trainer", given) == {
        "MLFLOW_TRACKING_TOKEN": "t",
        "GCS_KEY": "{}",
    }
    with pytest.raises(LaunchError, match="pass --secret gcs-key/key.json=VALUE"):
        launched.pod_environment("Transform", {"mlflow-auth/token": "t"})
