"""Compiles a task's pipeline for Kubeflow Pipelines v2 / Vertex AI Pipelines, and submits it.

The pipeline is the one the local runner builds (pipeline/factory.py); here it gets gs://
paths, the pipeline image, Dataflow arguments for the Beam components, Vertex AI training jobs
for the Trainer (and Tuner), the Vertex AI model registry, and the runtime parameters
`train_args` and `eval_args`. Settings: pipeline/cloud.py.
"""

import json
import os
from typing import Any, Mapping, Optional

from components.model_registry.backends import TRACKING_URI_ENV, mlflow_config, vertex_config
from pipeline import configs
from pipeline.cloud import ENGINES, TARGET_LABEL, CloudConfig
from pipeline.factory import Deployment, create_pipeline
from pipeline.options import PipelineOptions

# Tracking URIs a job's steps, each in a container of its own, reach: an MLflow tracking server,
# Databricks, or a database server MLflow's store talks to directly.
SERVER_URI_SCHEMES = ("http", "https", "databricks", "postgresql", "mysql", "mssql")


def registry_config(cloud: CloudConfig, registry_dir: str) -> Optional[str]:
    if cloud.registry == "vertex":
        return vertex_config(cloud.project, cloud.region, parent_model=cloud.parent_model or None)
    if cloud.registry == "mlflow":
        check_tracking_server(cloud.mlflow_tracking_uri)
        return mlflow_config(registry_dir, tracking_uri=cloud.mlflow_tracking_uri)
    return None


def check_tracking_server(uri: str) -> None:
    """Refuses a tracking URI that is not a server: every step of a cloud job runs in a
    container of its own, so a SQLite file or a folder would be a new, empty store in each (no
    baseline ever found, every run registering a "version 1" that is thrown away)."""
    # "databricks" alone is MLflow's own spelling of its default Databricks profile.
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower() if ":" in uri else uri.lower()
    if scheme in SERVER_URI_SCHEMES:
        host = loopback_host(uri)
        if host:
            raise ValueError(
                f"{TRACKING_URI_ENV}={uri!r} names {host}, this machine's own loopback, which "
                "no step of a cloud job reaches (each runs in a pod or machine of its own): use "
                "the tracking server's address on the cluster or the network, such as "
                "http://mlflow.kubeflow.svc.cluster.local:5000 (a Kubernetes Service) or "
                "http://10.0.0.5:5000 (docs/team.md)"
            )
        return
    what = f"{TRACKING_URI_ENV}={uri!r}" if uri else f"no {TRACKING_URI_ENV}"
    raise ValueError(
        f"MODEL_REGISTRY=mlflow on the cloud needs a tracking server, and {what} is "
        "not one: each step of a compiled job runs in its own container, which a SQLite file "
        "or a folder does not outlive. Start a server every step can reach (`mlflow server "
        "--backend-store-uri postgresql://... --artifacts-destination gs://...`) and set "
        f"{TRACKING_URI_ENV}=http://HOST:5000 (docs/team.md)"
    )


def loopback_host(uri: str) -> Optional[str]:
    """The host of `uri` when it is a loopback one (localhost, 127.0.0.0/8, ::1, 0.0.0.0), else
    None. Only what the URI says: a name is not resolved, a cluster's names mean nothing
    here."""
    import ipaddress
    import urllib.parse

    host = (urllib.parse.urlsplit(uri).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return host if address.is_loopback or address.is_unspecified else None


def build_cloud_pipeline(options: PipelineOptions, cloud: CloudConfig):
    """The pipeline `options` describe, on `cloud`; its data defaults to <DATA_ROOT>/<task>.

    Local paths a cloud job cannot read are refused: the schema and a family's path options
    (a BERT preset directory) must be gs:// paths (or preset names)."""
    run = options.check_cloud_paths().resolve()
    paths = cloud.paths(options.name, options.task)
    deployment = Deployment(
        pipeline_root=paths["pipeline_root"],
        data_dir=options.data or paths["data_dir"],
        serving_model_dir=paths["serving_model_dir"],
        beam_pipeline_args=cloud.beam_pipeline_args(options.name),
        registry_config=registry_config(cloud, paths["registry_dir"]),
        vertex_training=cloud.vertex_training_config(),
        runtime_parameters=True,
        # No drift check or warm start: their resolvers follow MLMD lineage, which the KFP v2
        # compiler cannot express (it compiles TFX's two built-in resolver strategies only).
        lineage_resolvers=False,
        # The baseline from the registry (components/champion_model says why not a resolver).
        baseline="champion",
        run_id=JOB_NAME_PLACEHOLDER,
        backup_root=cloud.backup_root(options.name),
    )
    pipeline = create_pipeline(run, deployment)
    for component in pipeline.components:
        role = step_role(component)
        spec = cloud.step_resources(role) if role else None
        if spec is not None:
            component.with_platform_config(spec)
    return pipeline


# Where the kubeflow target's compiled job keeps its Kubernetes platform spec (pods.py).
PLATFORM_SPEC = "platformSpec"

# KFP's placeholder for the job's name, which the orchestrator substitutes in a parameter's
# constant (`tfx-transformers launch` too): the run id the registry and the report record.
JOB_NAME_PLACEHOLDER = "{{$.pipeline_job_name}}"


def step_role(component) -> Optional[str]:
    """ "trainer" for the Trainer and Tuner, "beam" for the steps that run Beam pipelines,
    else None: which resources (CloudConfig.step_resources) a step gets."""
    from tfx.components import Trainer, Tuner
    from tfx.dsl.components.base.base_beam_component import BaseBeamComponent

    if isinstance(component, (Trainer, Tuner)):
        return "trainer"
    if isinstance(component, BaseBeamComponent):
        return "beam"
    return None


def runtime_parameter_defaults(pipeline) -> dict:
    """{name: default} of the pipeline's runtime parameters."""
    from tfx.orchestration import data_types

    return {
        value.name: value.default
        for component in pipeline.components
        for value in component.exec_properties.values()
        if isinstance(value, data_types.RuntimeParameter)
    }


def default_job_path(pipeline) -> str:
    """kubeflow/build/<pipeline>.json, under the working directory."""
    return os.path.join(configs.KUBEFLOW_BUILD_DIR, f"{pipeline.pipeline_info.pipeline_name}.json")


def compile_pipeline(pipeline, cloud: CloudConfig, output_file: str) -> dict:
    """Writes the KFP v2 PipelineJob JSON (pipeline spec schema 2.1, with the runtime
    parameters' defaults as its parameter values) to `output_file`; returns it as a dict.

    `cloud.target` "vertex": Vertex AI Pipelines, which runs TFX's ExampleGen driver as the task's
    pre-cache check (span, version and a fingerprint of the data, so that changed data is
    never served from the cache). "kubeflow": the open-source Kubeflow Pipelines 2 backend,
    which implements neither pre-cache checks nor resolver tasks: the ExampleGen resolves
    the span itself and is never cached, and a resolver task is refused (compiled jobs have
    none: their baseline comes from ChampionModel), and every step runs TFX's entrypoint through
    pipeline/kubeflow_entrypoint.py, which fills in the input types that backend leaves out.
    Either way ChampionModel is never cached: its inputs are constants, its answer (the
    registry's champion) is not."""
    if not output_file.endswith(".json"):
        raise ValueError(f"the compiled pipeline is a PipelineJob JSON file, not {output_file}")
    target = cloud.target
    # Imported here: the compiler needs kfp's protos, which only this path uses.
    from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner as v2

    runner = v2.KubeflowV2DagRunner(
        config=v2.KubeflowV2DagRunnerConfig(default_image=cloud.image, use_pipeline_spec_2_1=True),
        output_dir=os.path.dirname(os.path.abspath(output_file)),
        output_filename=os.path.basename(output_file),
    )
    job = runner.run(
        pipeline, parameter_values=runtime_parameter_defaults(pipeline), write_out=False
    )
    job = for_target(job, target)
    keep_resources(job, pipeline)
    if target == "kubeflow":
        from pipeline.pods import PodSettings

        platform = PodSettings.of(cloud).platform_spec(job)
        if platform:
            job[PLATFORM_SPEC] = platform
    os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
    with open(output_file, "w") as f:
        json.dump(job, f, sort_keys=True)
    return job


def keep_resources(job: dict, pipeline) -> None:
    """Gives every step the resources its component was given (with_platform_config), which
    TFX's compiler drops for file-based ExampleGens."""
    from google.protobuf import json_format

    spec = job["pipelineSpec"]
    tasks, executors = spec["root"]["dag"]["tasks"], spec["deploymentSpec"]["executors"]
    for component in pipeline.components:
        if getattr(component, "platform_config", None) is None or component.id not in tasks:
            continue
        label = spec["components"][tasks[component.id]["componentRef"]["name"]]["executorLabel"]
        container = executors[label].get("container")
        if container is not None and "resources" not in container:
            container["resources"] = json_format.MessageToDict(component.platform_config)


def uncached_tasks(job: dict) -> list:
    """The tasks a run must never take from the cache: ChampionModel (constants in, the
    registry's current champion out)."""
    tasks = job["pipelineSpec"]["root"]["dag"]["tasks"]
    return [name for name, task in tasks.items() if name.startswith("ChampionModel")]


# TFX's KFP v2 container entrypoint, and the Kubeflow target's, which runs it with the input
# types an open-source backend leaves out filled in (tensorflow/tfx#7768).
TFX_ENTRYPOINT = "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"
KUBEFLOW_ENTRYPOINT = "pipeline.kubeflow_entrypoint"


def for_target(job: dict, target: str) -> dict:
    """The compiled `job` as `target` runs it (compile_pipeline's docstring)."""
    job.setdefault("labels", {})[TARGET_LABEL] = target
    spec = job["pipelineSpec"]
    tasks, executors = spec["root"]["dag"]["tasks"], spec["deploymentSpec"]["executors"]
    for name in uncached_tasks(job):
        tasks[name].setdefault("cachingOptions", {})["enableCache"] = False
    if target == "kubeflow":
        for name, task in tasks.items():
            label = spec["components"][task["componentRef"]["name"]]["executorLabel"]
            executor = executors[label]
            if "resolver" in executor:
                raise ValueError(
                    f"task {name} is a resolver, which Kubeflow Pipelines 2 does not run"
                )
            container = executor.get("container", {})
            if TFX_ENTRYPOINT in container.get("command", []):
                container["command"] = [
                    KUBEFLOW_ENTRYPOINT if part == TFX_ENTRYPOINT else part
                    for part in container["command"]
                ]
                declared = sorted(
                    spec["components"][task["componentRef"]["name"]]
                    .get("outputDefinitions", {})
                    .get("artifacts", {})
                )
                container["args"] = declare_outputs(container.get("args", []), declared)
            if container.pop("lifecycle", None) is not None:
                # No driver: the executor resolves the span; the data decides, not a cache.
                task.setdefault("cachingOptions", {})["enableCache"] = False
    return job


def declare_outputs(args: list, declared: list) -> list:
    """`args` with the kubeflow entrypoint's `--declared_outputs_args` (the output keys the
    component declares) after the inputs' spec: the outputs a backend adds are set aside."""
    from pipeline.kubeflow_entrypoint import DECLARED_OUTPUTS, INPUTS_SPEC

    at = args.index(INPUTS_SPEC) + 2 if INPUTS_SPEC in args else len(args)
    return [*args[:at], DECLARED_OUTPUTS, json.dumps(declared), *args[at:]]


# Its keyword arguments are the `submit` command's flags, one each (pipeline/cli.py).
def submit(
    template_path: str,
    pipeline_name: str,
    cloud: CloudConfig,
    *,
    engine: str = "vertex",
    host: Optional[str] = None,
    parameter_values: Optional[Mapping[str, Any]] = None,
    service_account: Optional[str] = None,
    enable_cache: Optional[bool] = None,
    namespace: Optional[str] = None,
    token_file: Optional[str] = None,
) -> str:
    """Starts a run of a compiled pipeline on Vertex AI Pipelines or on a Kubeflow Pipelines
    cluster (`host`, and the user's `namespace` on a multi-user cluster), under the pipeline's
    root; returns the run's resource name or id.

    `enable_cache` None keeps each task's compiled caching (ChampionModel and, on the kubeflow
    target, the ExampleGen are never cached); True or False is both SDKs' override of every
    task's, those two included. Each run gets a display name of its own (the pipeline's name
    and the time), which a Kubeflow backend hands the steps as `{{$.pipeline_job_name}}`: the
    run id the registry and the report record. On a multi-user Kubeflow cluster, the request
    carries a token (kfp_credentials)."""
    pipeline_root = cloud.paths(pipeline_name, "")["pipeline_root"]
    display_name = run_display_name(pipeline_name)
    if engine == "vertex":
        from google.cloud import aiplatform

        aiplatform.init(project=cloud.project, location=cloud.region)
        job = aiplatform.PipelineJob(
            display_name=display_name,
            template_path=template_path,
            pipeline_root=pipeline_root,
            parameter_values=dict(parameter_values or {}),
            enable_caching=enable_cache,
        )
        job.submit(service_account=service_account)
        return job.resource_name
    if engine == "kubeflow":
        import kfp
        import yaml

        # A Kubeflow Pipelines cluster takes the pipeline spec as YAML, its platform spec (the
        # pods' secrets, tolerations, node selectors) as the second document, as KFP's
        # compiler writes them.
        with open(template_path) as f:
            job = json.load(f)
        spec_path = os.path.splitext(template_path)[0] + ".yaml"
        documents = [job["pipelineSpec"]] + ([job[PLATFORM_SPEC]] if PLATFORM_SPEC in job else [])
        with open(spec_path, "w") as f:
            yaml.safe_dump_all(documents, f, sort_keys=True)
        arguments = {
            **job.get("runtimeConfig", {}).get("parameterValues", {}),
            **(parameter_values or {}),
        }
        credentials = kfp_credentials(token_file)
        if host:
            check_access(host, credentials)
        client = kfp.Client(
            host=host, **({"namespace": namespace} if namespace else {}), **credentials
        )
        run = client.create_run_from_pipeline_package(
            spec_path,
            arguments=arguments,
            run_name=display_name,
            namespace=namespace,
            pipeline_root=pipeline_root,
            enable_caching=enable_cache,
            service_account=service_account or cloud.kubernetes_service_account or None,
        )
        return run.run_id
    raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")


# A bearer token for a multi-user Kubeflow Pipelines API (its Istio gateway, Dex or
# oauth2-proxy): what `submit` sends when no --token-file is given.
TOKEN_ENV = "KF_PIPELINES_TOKEN"


def kfp_credentials(token_file: Optional[str] = None) -> dict:
    """The kfp Client's credentials: the token in `token_file`, else in KF_PIPELINES_TOKEN,
    else, where KF_PIPELINES_SA_TOKEN_PATH names one, the projected service account token the
    kubelet refreshes (read again for each request); else none (the client's own defaults:
    the cluster's in-pod token, the kubeconfig)."""
    from kfp.client import KF_PIPELINES_SA_TOKEN_ENV

    if token_file:
        with open(token_file) as f:
            return {"existing_token": f.read().strip()}
    if os.environ.get(TOKEN_ENV):
        return {"existing_token": os.environ[TOKEN_ENV].strip()}
    if os.environ.get(KF_PIPELINES_SA_TOKEN_ENV):
        from kfp.client.set_volume_credentials import ServiceAccountTokenVolumeCredentials

        return {"credentials": ServiceAccountTokenVolumeCredentials()}
    return {}


def check_access(host: str, credentials: dict) -> None:
    """Refuses, naming what to give, a cluster that turns the request away for want of a
    token (the kfp Client retries its health check five times, then says only that it failed)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{host.rstrip('/')}/apis/v2beta1/healthz")
    token = credentials.get("existing_token")
    if "credentials" in credentials:  # the service account token's file, as the client reads it
        from kfp.client import KF_PIPELINES_SA_TOKEN_ENV

        with open(os.environ[KF_PIPELINES_SA_TOKEN_ENV]) as f:
            token = f.read().strip()
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        urllib.request.urlopen(request, timeout=30).close()
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            given = "the token given" if token else "no token"
            raise ValueError(
                f"the Kubeflow Pipelines API at {host} refused {given} ({error.code}): a "
                f"multi-user cluster asks for one: --token-file FILE, {TOKEN_ENV}, or "
                "KF_PIPELINES_SA_TOKEN_PATH (a projected service account token)"
            ) from None
    except OSError:
        pass  # unreachable: the kfp Client says so in its own words


def run_display_name(pipeline_name: str) -> str:
    """`<pipeline>-<UTC time to the second>`: a run's name of its own."""
    import datetime

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{pipeline_name}-{stamp}"


def compile_task(task: str, environ: Mapping[str, str] = os.environ) -> str:
    """What kubeflow/<task>_runner.py does: compiles `task`'s pipeline with the options in
    `environ` (TFXT_* variables, pipeline/options.py) and the cloud settings (pipeline/cloud.py)
    into kubeflow/build/<pipeline>.json under the working directory; returns that path."""
    cloud = CloudConfig.from_environment(environ)
    # The script names the task; everything else may come from the environment.
    options = PipelineOptions.from_environment(
        {k: v for k, v in environ.items() if k != "TFXT_TASK"}, task=task
    )
    pipeline = build_cloud_pipeline(options, cloud)
    output_file = default_job_path(pipeline)
    compile_pipeline(pipeline, cloud, output_file)
    return output_file
