"""The launcher's pieces, without running a pipeline: the order of tasks, what a task's command
line becomes here, the paths it maps, and the jobs it refuses before anything runs."""

import json
import sys

import pytest

from pipeline.launch import execution, job
from pipeline.launch.launcher import Launch, LaunchError
from tests.kubeflow.test_compile import ENVIRONMENT, compile_job

MLFLOW = {**ENVIRONMENT, "MODEL_REGISTRY": "mlflow", "MLFLOW_TRACKING_URI": "http://m:5000"}


def job_file(tmp_path, target="vertex", environ=MLFLOW, **options):
    job = compile_job(tmp_path, "imdb", environ=environ, target=target, **options)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def test_tasks_run_after_what_they_need_in_a_stable_order():
    tasks = {
        "c": {"dependentTasks": ["b"]},
        "b": {"inputs": {"artifacts": {"x": {"taskOutputArtifact": {"producerTask": "a"}}}}},
        "a": {},
        "d": {},
    }
    assert job.task_order(tasks) == ["a", "b", "c", "d"]
    with pytest.raises(LaunchError, match="cycle"):
        job.task_order({"a": {"dependentTasks": ["b"]}, "b": {"dependentTasks": ["a"]}})


def test_gcs_paths_become_folders_under_the_output_inside_json_strings_too():
    value = {"a": ["gs://b/x", '{"base": "gs://b/y"}'], "n": 3}
    assert job.map_gcs(value, "/out") == {
        "a": ["/out/gs/b/x", '{"base": "/out/gs/b/y"}'],
        "n": 3,
    }


def test_the_imdb_job_runs_in_dependency_order_with_its_paths_mapped(tmp_path):
    launch = Launch(str(job_file(tmp_path)), str(tmp_path / "out"), {"data_dir": "data/imdb"})
    order = launch.job.order()
    assert order.index("ChampionModel") < order.index("Evaluator") < order.index("Pusher")
    assert order[-1] == "RunReport"
    assert launch.job.root == str(
        tmp_path / "out" / "gs" / "bucket" / "tt" / "pipelines" / ("imdb-text-encoder")
    )
    assert launch.job.parameters["data_dir"].endswith("/data/imdb")  # made absolute
    assert launch.job.parameters["data_dir"].startswith("/")


def test_a_task_command_line_as_it_runs_here(tmp_path):
    launch = Launch(str(job_file(tmp_path)), str(tmp_path / "out"))
    container = launch.job.executor_of("Transform")["container"]
    line = execution.command_line(container["command"], container["args"], {"inputs": {}})
    assert line[:3] == [sys.executable, "-m", container["command"][-1]]
    assert json.loads(line[line.index("--json_serialized_invocation_args") + 1]) == {"inputs": {}}
    # Dataflow's runner becomes the local one, in memory; every other option stays.
    assert "--runner=DataflowRunner" not in line
    assert line.count("--runner=pipeline.local_beam.DirectRunner") == 1
    assert "--direct_running_mode=in_memory" in line
    assert "--project=proj" in line and "--region=europe-west4" in line
    temp = next(a for a in line if a.startswith("--temp_location="))
    assert temp == f"--temp_location={tmp_path}/out/gs/bucket/tt/tmp/imdb-text-encoder"
    # A Vertex AI training job's executor runs through the local job client, which sends
    # the job to the launch's job service.
    trainer = launch.job.executor_of("Trainer")["container"]
    line = execution.command_line(trainer["command"], trainer["args"], {})
    assert line[1:3] == ["-m", "pipeline.launch.training_jobs"]
    assert line[3] == "--service" and line[4].startswith("http://127.0.0.1:")
    assert line[5:7] == ["-m", "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"]


def test_the_job_name_placeholder_is_filled_in_and_an_unknown_one_refused(tmp_path):
    launch = Launch(str(job_file(tmp_path)), str(tmp_path / "out"))
    values = launch.job.parameter_values("RunReport")
    assert values["run_id"] == launch.job.job_name
    assert values["pipeline_name"] == "imdb-text-encoder"
    with pytest.raises(LaunchError, match=r"\{\{\$.pipeline_job_uuid\}\}"):
        job.substitute_placeholders("{{$.pipeline_job_uuid}}", {})


def test_a_vertex_registry_job_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(LaunchError, match="Vertex AI's Model Registry"):
        Launch(str(job_file(tmp_path, environ=ENVIRONMENT)), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_the_kubeflow_target_refuses_a_pre_cache_check_and_a_resolver(tmp_path):
    vertex_job = job_file(tmp_path)
    with pytest.raises(LaunchError, match="ReviewsExampleGen has a pre-cache check"):
        Launch(str(vertex_job), str(tmp_path / "out"), target="kubeflow")
    job = json.loads(vertex_job.read_text())
    spec = job["pipelineSpec"]
    spec["deploymentSpec"]["executors"]["resolver_executor"] = {
        "resolver": {"outputArtifactQueries": {}}
    }
    spec["components"]["resolver"] = {"executorLabel": "resolver_executor"}
    spec["root"]["dag"]["tasks"]["a-resolver"] = {"componentRef": {"name": "resolver"}}
    job["labels"]["tfx-transformers-target"] = "kubeflow"
    for name in list(spec["deploymentSpec"]["executors"]):  # as --target kubeflow compiles
        spec["deploymentSpec"]["executors"][name].get("container", {}).pop("lifecycle", None)
    (tmp_path / "resolver.json").write_text(json.dumps(job))
    with pytest.raises(LaunchError, match="a-resolver is a resolver"):
        Launch(str(tmp_path / "resolver.json"), str(tmp_path / "out"))  # the job's label
    Launch(str(tmp_path / "resolver.json"), str(tmp_path / "out"), target="vertex")


def test_an_unknown_parameter_is_refused_naming_the_known_ones(tmp_path):
    with pytest.raises(LaunchError, match="no parameter 'data' .*data_dir, eval_args"):
        Launch(str(job_file(tmp_path)), str(tmp_path / "out"), {"data": "x"})


def test_a_resolver_task_answers_with_its_filter_over_recorded_artifacts(tmp_path):
    """The two resolver tasks TFX compiles for the latest blessed model, answered in turn: the
    blessing query, then the model named by the blessing's current_model_id."""
    launch = Launch(str(job_file(tmp_path)), str(tmp_path / "out"))
    store = launch.store
    model = store.new_artifact("tfx.Model", "title: tfx.Model\n", "/m")
    store.publish(model["name"], {})
    for blessed in (1.0, 0.0):
        blessing = store.new_artifact("tfx.ModelBlessing", "title: tfx.ModelBlessing\n", "/b")
        store.publish(blessing["name"], {"blessed": blessed, "current_model_id": model["name"]})
    blessing_query = {
        "outputArtifactQueries": {
            "model_blessing": {
                "filter": 'schema_title="tfx.ModelBlessing" AND state=LIVE AND '
                "metadata.blessed.number_value=1"
            }
        }
    }
    found = launch.cache.resolve(blessing_query, {})
    assert [a["metadata"]["blessed"] for a in found["model_blessing"]] == [1.0]
    model_query = {
        "outputArtifactQueries": {
            "model": {
                "filter": 'schema_title="tfx.Model" AND state=LIVE AND name="{{$.inputs.'
                "artifacts['input'].metadata['current_model_id']}}\""
            }
        }
    }
    assert launch.cache.resolve(model_query, {"input": found["model_blessing"]}) == {
        "model": [model]
    }
    # No blessing yet: nothing to fill the placeholder with, and nothing resolved.
    assert launch.cache.resolve(model_query, {"input": []}) == {"model": []}


def test_a_failed_task_is_reported_by_its_exception_not_the_runners_last_line():
    tail = [
        "Traceback (most recent call last):\n",
        "FileNotFoundError: parallel corpus directory not found: /data/translation\n",
        "subprocess exited with status 1\n",
        "Error: exit status 1\n",  # buildah run's own
    ]
    assert execution.failure_reason(tail, 1) == (
        "FileNotFoundError: parallel corpus directory not found: /data/translation"
    )
    assert execution.failure_reason(["Killed\n"], -9) == "exit status -9"
