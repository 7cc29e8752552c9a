"""tfx-transformers: run a task's pipeline locally or on Vertex AI / Kubeflow Pipelines, or
query a pushed model.

  tfx-transformers run --task imdb [--model text_encoder] [--data DIR] [--output DIR] [--tune] ...
  tfx-transformers compile --task imdb [--tune] [--output-file PATH]   (Vertex AI / Kubeflow)
  tfx-transformers launch PIPELINE_JOB.json --output DIR [--param NAME=VALUE]   (try it here)
  tfx-transformers submit PIPELINE_JOB.json [--target vertex|kubeflow] [--param NAME=VALUE]
  tfx-transformers infer --task imdb --data DIR [--output DIR]   (BulkInferrer; JSON lines)
  tfx-transformers predict --saved-model PATH TEXT...
  tfx-transformers predict --saved-model PATH --image FILE...
  tfx-transformers predict --saved-model PATH --input FILE.jsonl|-   (one answer per input line)
  tfx-transformers report [--output DIR] [--pipeline-name NAME] [--run RUN_ID] [--regenerate]
  tfx-transformers runs [--output DIR] [--pipeline-name NAME]   (a JSON line per run)
  tfx-transformers presets [--model FAMILY]   (each preset's fields: what --set takes)
  tfx-transformers registry list [--name NAME] | show NAME [VERSION | --alias A] |
                            promote NAME VERSION [--alias A] [--force] |
                            copy --to TRACKING_URI [--name NAME]
  tfx-transformers predict --saved-model models:/NAME@ALIAS TEXT...   (a registered version)
  tfx-transformers serve [models:/NAME@ALIAS | DIR] [--output DIR] [--name NAME] [--alias A |
                         --version V] [--port P]
                         [--max-request-mb M] [--max-rows N] [--timeout S]
"""

import argparse
import json
import os
import sys
from typing import List, Optional

from components.model_registry.version import CHAMPION
from pipeline import configs
from pipeline.cloud import ENGINES, TARGETS, CloudConfig
from pipeline.launch.shapes import NEWEST_KFP, OLDEST_KFP
from trainer_module.serving import contract, runtimes


def package_version() -> str:
    """The installed distribution's version (pyproject.toml's)."""
    from importlib import metadata

    try:
        return metadata.version("tfx-transformers")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def parse_parameter(text: str):
    """NAME=VALUE with VALUE kept as a string (runtime parameters are strings)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return tuple(text.split("=", 1))


def build_parser(pipeline_options: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; `pipeline_options=False` leaves out the options of run, compile and
    infer, which load every task's definition (TensorFlow, TFX) to be declared."""
    parser = argparse.ArgumentParser(
        prog="tfx-transformers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    # The flags several commands share, declared once.
    local_run = argparse.ArgumentParser(add_help=False)  # run, infer: a pipeline run here
    local_run.add_argument("--verbose", action="store_true", help="show TFX's INFO log")
    local_run.add_argument(
        "--wait",
        action="store_true",
        help="wait for another run of the same pipeline on the same output to "
        "finish (default: refuse at once, naming it)",
    )
    output_dir = argparse.ArgumentParser(add_help=False)  # infer, report, registry, serve
    output_dir.add_argument(
        "--output",
        default=configs.DEFAULT_OUTPUT_DIR,
        metavar="DIR",
        help="the run command's output directory: its ML Metadata, pushed models and local "
        "registry (MLFLOW_TRACKING_URI names a server instead) (default: %(default)s)",
    )

    _add_run_and_compile(commands, local_run, pipeline_options)
    _add_launch(commands)
    _add_submit(commands)
    _add_infer(commands, local_run, output_dir, pipeline_options)
    _add_predict(commands)
    _add_report(commands, output_dir)
    _add_listings(commands, output_dir)
    _add_registry(commands, output_dir)
    _add_serve(commands, output_dir)
    return parser


def _add_run_and_compile(commands, local_run, pipeline_options: bool) -> None:
    """`run` (LocalDagRunner) and `compile` (a PipelineJob JSON), with the pipeline options."""
    run = commands.add_parser(
        "run", parents=[local_run], help="run a task's pipeline with LocalDagRunner"
    )
    compile_ = commands.add_parser(
        "compile",
        help="compile a task's pipeline for Vertex AI Pipelines / Kubeflow "
        "Pipelines (settings from the environment: docs/kubeflow.md)",
    )
    if pipeline_options:
        from pipeline.options import add_arguments

        add_arguments(run, local=True)
        add_arguments(compile_, local=False)
    compile_.add_argument(
        "--output-file",
        metavar="PATH",
        help="the PipelineJob JSON (default: kubeflow/build/<pipeline>.json)",
    )
    compile_.add_argument(
        "--target",
        choices=TARGETS,
        default="vertex",
        help="vertex: Vertex AI Pipelines; kubeflow: an open-source Kubeflow Pipelines 2 "
        "cluster, whose backend runs no pre-cache checks (default: %(default)s)",
    )


def _add_launch(commands) -> None:
    """`launch`: a compiled job run here, task by task, as Vertex AI would."""
    launch = commands.add_parser(
        "launch",
        help="run a compiled pipeline here, task by task, as Vertex AI would: try the job "
        "before paying for it (docs/kubeflow.md)",
    )
    launch.add_argument("template", help="the compiled PipelineJob JSON")
    launch.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="where the job's gs:// paths are mapped (DIR/gs/BUCKET/...) and the launches' "
        "records kept; launch again with the same DIR to find the last run's artifacts, "
        "cache and champion",
    )
    launch.add_argument(
        "--param",
        dest="parameters",
        type=parse_parameter,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a runtime parameter, e.g. --param data_dir=data/imdb",
    )
    launch.add_argument(
        "--target",
        choices=TARGETS,
        help="refuse the task kinds this target lacks (default: the one the job was compiled for)",
    )
    add_cache_arguments(launch)
    launch.add_argument(
        "--image",
        metavar="IMAGE",
        help="run every task (and every training replica) inside this image, a container "
        "each, as the cluster would: `make image` builds it (default: in this environment)",
    )
    launch.add_argument(
        "--env",
        dest="job_env",
        type=parse_parameter,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable in every task's environment, as the job's container env would set it",
    )
    launch.add_argument(
        "--secret",
        dest="secrets",
        type=parse_parameter,
        action="append",
        default=[],
        metavar="SECRET/KEY=VALUE",
        help="with the kubeflow target: a Kubernetes secret's key, as the cluster holds it; "
        "each pod gets the variables its compiled platform spec takes from secrets "
        "(KUBERNETES_SECRET_ENV), and a launch refuses a job whose pods would miss one",
    )
    launch.add_argument(
        "--kfp-version",
        metavar="VERSION",
        help="with the kubeflow target: the Kubeflow Pipelines backend release whose input shape "
        f"every task gets, {OLDEST_KFP} to {NEWEST_KFP} (default: {NEWEST_KFP}; "
        "docs/kubeflow.md lists what changed between them)",
    )
    launch.add_argument(
        "--gcs-emulator",
        action="store_true",
        help="keep gs:// paths gs://, on a Cloud Storage emulator on loopback that every step "
        "speaks to through GCS's API (fake-gcs-server: `make gcs-emulator` builds it), over "
        "DIR/launch/gcs; the files under DIR/gs/BUCKET/ are copied into its BUCKET first "
        "(default: gs://BUCKET/PATH is the folder DIR/gs/BUCKET/PATH)",
    )
    launch.add_argument(
        "--fresh-processes",
        action="store_true",
        help="without --image: start every task from a new interpreter, as a container does "
        "(default: forked from one that has imported the stack, which saves about 7 s a task)",
    )


def _add_submit(commands) -> None:
    """`submit`: a compiled job started on Vertex AI or a Kubeflow Pipelines cluster."""
    submit = commands.add_parser("submit", help="start a run of a compiled pipeline")
    submit.add_argument("template", help="the compiled PipelineJob JSON")
    submit.add_argument(
        "--target",
        "--engine",  # its earlier name, kept as an alias
        dest="engine",
        choices=ENGINES,
        default="vertex",
        help="where the job runs, as `compile --target` names it (default: %(default)s)",
    )
    submit.add_argument("--host", help="with --target kubeflow: the KFP API endpoint")
    submit.add_argument(
        "--param",
        dest="parameters",
        type=parse_parameter,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a runtime parameter, e.g. --param train_args='{\"num_steps\": 500}'",
    )
    submit.add_argument(
        "--service-account",
        help="the identity the pipeline job's steps run as: on Vertex AI a service account's "
        "email, on a Kubeflow cluster a Kubernetes service account (default: "
        "$KUBERNETES_SERVICE_ACCOUNT)",
    )
    submit.add_argument(
        "--namespace",
        help="with --target kubeflow: your profile's namespace on a multi-user cluster",
    )
    submit.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --target kubeflow: a file holding the bearer token a multi-user cluster "
        "asks for (default: $KF_PIPELINES_TOKEN, else the service account token at "
        "$KF_PIPELINES_SA_TOKEN_PATH)",
    )
    add_cache_arguments(submit)


def _add_infer(commands, local_run, output_dir, pipeline_options: bool) -> None:
    """`infer`: BulkInferrer over a folder of unlabeled inputs."""
    infer = commands.add_parser(
        "infer",
        parents=[local_run, output_dir],
        help="score a folder of unlabeled inputs with a pipeline's latest blessed "
        "model (TFX's BulkInferrer): PredictionLogs and JSON lines",
    )
    if pipeline_options:
        from pipeline.options import INFER_OPTIONS, add_arguments

        add_arguments(infer, local=True, only=INFER_OPTIONS)
    infer.add_argument(
        "--data",
        dest="inputs",
        required=True,
        metavar="DIR",
        help="the folder: *.jsonl lines of raw inputs as `predict --input` "
        "reads them, *.txt (a review per file; translation: a sentence "
        "per line), or image files",
    )


def _add_predict(commands) -> None:
    """`predict`: a pushed or registered SavedModel answering texts, images or JSON lines."""
    predict = commands.add_parser(
        "predict", help="classify text or images, or translate, with a pushed SavedModel"
    )
    which_model = predict.add_mutually_exclusive_group(required=True)
    which_model.add_argument(
        "--saved-model",
        metavar="PATH",
        help="a SavedModel folder, a folder of numbered versions (the newest is used), or a "
        "registered version: models:/NAME@ALIAS or models:/NAME/VERSION (in the registry "
        "`registry` reads: MLFLOW_TRACKING_URI, else the local one under --output)",
    )
    which_model.add_argument(
        "--model",
        dest="deprecated_model",
        metavar="PATH",
        help="deprecated spelling of --saved-model (in `run`, --model names a model family); "
        "accepted until the next release",
    )
    predict.add_argument(
        "--image",
        dest="images",
        nargs="+",
        metavar="FILE",
        help="JPEG or PNG files, any size (image classifiers)",
    )
    predict.add_argument(
        "--input",
        metavar="FILE.jsonl",
        help='JSON lines of raw inputs ({"text": ...}, {"source": ...} or '
        '{"image": base64}), "-" for stdin: one answer line per input '
        "line, streamed; a bad line gets an error line naming it",
    )
    predict.add_argument("--batch-size", type=int, default=32, help="lines per model call")
    _add_runtime(predict)
    predict.add_argument(
        "--output",
        default=configs.DEFAULT_OUTPUT_DIR,
        metavar="DIR",
        help="with a models:/ URI: the run command's output directory, whose local registry "
        "it reads (default: %(default)s)",
    )
    predict.add_argument(
        "texts", nargs="*", metavar="TEXT", help="texts to classify, or sentences to translate"
    )


def _add_report(commands, output_dir) -> None:
    """`report`: the latest run report, or one rebuilt from ML Metadata."""
    report = commands.add_parser(
        "report",
        parents=[output_dir],
        help="print the path of the latest run report, or rebuild one from MLMD",
    )
    report.add_argument(
        "--pipeline-name",
        "--pipeline",  # its earlier name, kept as an alias
        dest="pipeline",
        metavar="NAME",
        help="e.g. imdb-text-encoder (default: the newest report "
        "of any pipeline; required with --run/--regenerate "
        "when the output holds several)",
    )
    report.add_argument(
        "--run",
        dest="run_id",
        help="a run id (the run summary's run_id): rebuild that run's report from MLMD",
    )
    report.add_argument(
        "--regenerate",
        action="store_true",
        help="rebuild the report from MLMD (default: the newest run) into "
        "<output>/reports/<pipeline>/<run id>.html",
    )


def _add_listings(commands, output_dir) -> None:
    """`presets` and `runs`: what the families offer, and what ML Metadata recorded."""
    presets = commands.add_parser(
        "presets",
        help="list the model families' presets and their fields (what --preset and --set take)",
    )
    presets.add_argument("--model", help="one family's, e.g. bert (default: every family's)")

    runs = commands.add_parser(
        "runs",
        parents=[output_dir],
        help="list the pipelines' runs recorded in ML Metadata, oldest first: a JSON line each",
    )
    runs.add_argument(
        "--pipeline-name", metavar="NAME", help="one pipeline's (default: every pipeline's)"
    )


def _add_registry(commands, output_dir) -> None:
    """`registry` and its actions: list, show, promote, copy."""
    registry = commands.add_parser(
        "registry",
        parents=[output_dir],
        help="read and change the MLflow model registry (MLFLOW_TRACKING_URI, "
        "else the local one under --output)",
    )
    # --output is accepted before the action (registry --output DIR list) and after it: the
    # action's own copy has no default, so that it does not undo one given before.
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument(
        "--output",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help=f"as `registry --output` (default: {configs.DEFAULT_OUTPUT_DIR})",
    )
    actions = registry.add_subparsers(
        dest="action", required=True, help="list, show, promote or copy (ACTION --help)"
    )
    listing = actions.add_parser(
        "list", parents=[output], help="every registered version, with metrics and aliases"
    )
    listing.add_argument("--name", help="one registered model, e.g. imdb-text-encoder")
    show = actions.add_parser("show", parents=[output], help="one version (default: the champion)")
    show.add_argument("name", help="the registered model, e.g. imdb-text-encoder")
    show.add_argument("version", nargs="?", help="a version number (default: the alias's)")
    show.add_argument("--alias", default=CHAMPION, help="default: %(default)s")
    promote = actions.add_parser(
        "promote", parents=[output], help="move an alias (default: champion) to a version"
    )
    promote.add_argument("name", help="the registered model, e.g. imdb-text-encoder")
    promote.add_argument("version", help="the version that takes the alias")
    promote.add_argument("--alias", default=CHAMPION, help="default: %(default)s")
    promote.add_argument(
        "--force", action="store_true", help="also for a version the Evaluator did not bless"
    )
    copy = actions.add_parser(
        "copy",
        parents=[output],
        help="copy every version, with its metrics, tags and aliases, into another registry "
        "(a team's tracking server); versions already there are not copied again",
    )
    copy.add_argument(
        "--to", required=True, metavar="TRACKING_URI", help="e.g. http://mlflow.internal:5000"
    )
    copy.add_argument("--name", help="one registered model (default: every model)")


def _add_serve(commands, output_dir) -> None:
    """`serve`: a registered model over HTTP with MLflow's scoring server."""
    serve = commands.add_parser(
        "serve",
        parents=[output_dir],
        help="serve a registered model over HTTP (POST /invocations) with MLflow's scoring server",
    )
    serve.add_argument(
        "model_uri",
        nargs="?",
        metavar="models:/NAME@ALIAS|models:/NAME/VERSION|DIR",
        help="the registered version to serve (instead of --name with --alias or --version), "
        "or a model folder: a pushed SavedModel (serving_model/NAME/VERSION) or an MLflow Model",
    )
    serve.add_argument(
        "--name",
        help="the registered model, e.g. imdb-text-encoder (default: the registry's only model)",
    )
    which = serve.add_mutually_exclusive_group()
    which.add_argument("--alias", default=CHAMPION, help="default: %(default)s")
    which.add_argument("--version", help="a version number instead of the alias")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on; 0.0.0.0 for every interface (default: %(default)s)",
    )
    serve.add_argument(
        "--port", type=int, default=5000, help="the port to listen on (default: %(default)s)"
    )
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument(
        "--max-request-mb",
        type=float,
        default=contract.MAX_REQUEST_BYTES / 2**20,
        help="the largest request body accepted, in MiB; larger ones get 413 "
        "(default: %(default)g)",
    )
    serve.add_argument(
        "--max-rows",
        type=int,
        default=contract.MAX_ROWS,
        help="the most rows one request may hold; more get 400 (default: %(default)s)",
    )
    serve.add_argument(
        "--timeout",
        type=int,
        default=contract.REQUEST_TIMEOUT_SECONDS,
        help="seconds a request may take before it gets 504 (default: %(default)s)",
    )
    serve.add_argument(
        "--threads-per-op",
        type=int,
        default=0,
        help="TensorFlow's (and ONNX Runtime's) threads per op in each worker; 1 answers "
        "single requests sooner (default: %(default)s, one per core)",
    )
    _add_runtime(serve)


def _add_runtime(parser) -> None:
    parser.add_argument(
        "--runtime",
        choices=runtimes.CHOICES,
        default=runtimes.AUTO,
        help="what answers: the export's SavedModel, or its ONNX model part in ONNX Runtime "
        "(float32 or int8) after the tf.Transform graph; auto: the fastest whose answers "
        "agreed with the SavedModel's on the evaluation split (default: %(default)s)",
    )


def _options(args):
    from pipeline.options import PipelineOptions

    return PipelineOptions.from_args(args)


def command_run(args) -> int:
    from pipeline.runner import build_local_pipeline

    def build():
        options = _options(args)
        built = build_local_pipeline(options)
        if options.named_after_data:
            print(
                f"pipeline {options.name}: named after its data folder, so that it never meets "
                f"another source's champion (--pipeline-name NAME names it yourself)",
                file=sys.stderr,
            )
        return (options, *built)

    return _run_locally(args, build)


def command_infer(args) -> int:
    from pipeline.options import PipelineOptions
    from pipeline.run_summary import summarize_inference
    from pipeline.runner import build_local_inference

    def build():
        options = PipelineOptions.from_args(args)  # INFER_OPTIONS' flags, and --output
        return (options, *build_local_inference(options, args.inputs))

    def summarize(metadata: str, name: str) -> dict:
        summary = summarize_inference(metadata, name)
        for line in summary["skew"] or []:  # reported, not a gate: the answers are written
            print(
                f"warning: the inputs differ from the champion's training data: {line}",
                file=sys.stderr,
            )
        return summary

    return _run_locally(args, build, summarize)


def _run_locally(args, build, summarize=None) -> int:
    """Builds (options, pipeline, paths) with `build`, runs the pipeline under the pipeline's
    lock and prints its JSON summary; exits 2 when it cannot start, 1 when it failed."""
    from pipeline import locks, run_summary, storage
    from pipeline.runner import run_local

    try:
        unwritable = storage.problem(args.output)
        if unwritable:  # before anything is written: ML Metadata is left as it was
            raise ValueError(unwritable)
        options, pipeline, paths = build()
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        print(json.dumps({"status": "failed", "error": str(error)}))
        return 2
    name = pipeline.pipeline_info.pipeline_name
    try:
        with locks.exclusive(locks.lock_path(paths["metadata_path"]), wait=args.wait):
            summary = run_local(
                pipeline, paths, verbose=args.verbose, summarize=summarize or run_summary.summarize
            )
    except locks.Busy as error:
        print(f"error: {error}", file=sys.stderr)
        print(json.dumps({"status": "refused", "pipeline_name": name, "error": str(error)}))
        return 2
    except Exception as error:  # a component failed: say which and why, point to the log
        message = str(error).strip()
        unwritable = storage.problem(options.output)  # a disk that filled up meanwhile
        if unwritable:
            message = f"{message} ({unwritable})"
        print(f"error: pipeline {name} failed: {message}", file=sys.stderr)
        print(f"full log: {paths['log_dir']}", file=sys.stderr)
        print(json.dumps({"status": "failed", "pipeline_name": name, "error": message}))
        return 1
    if getattr(options, "dry_run", False):
        print(json.dumps({"status": "planned", "dry_run": True, **summary}))
        return 0
    print(json.dumps({"status": "succeeded", **summary}))
    return 0


def add_cache_arguments(parser) -> None:
    """--cache / --no-cache: the SDKs' override of every task's caching; neither keeps each
    task's compiled setting (ChampionModel, and the kubeflow target's ExampleGen, uncached)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--no-cache",
        dest="cache",
        action="store_false",
        default=None,
        help="run every task, none from the cache",
    )
    group.add_argument(
        "--cache",
        dest="cache",
        action="store_true",
        help="let every task be served from the cache, even those compiled never to be "
        "(ChampionModel: the baseline would be a past run's)",
    )


def command_compile(args) -> int:
    from pipeline.kubeflow_runner import build_cloud_pipeline, compile_pipeline, default_job_path

    try:
        cloud = CloudConfig.from_environment(target=args.target)
        pipeline = build_cloud_pipeline(_options(args), cloud)
        name = pipeline.pipeline_info.pipeline_name
        output_file = args.output_file or default_job_path(pipeline)
        job = compile_pipeline(pipeline, cloud, output_file)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {
                "pipeline_name": name,
                "pipeline_job": os.path.abspath(output_file),
                "target": args.target,
                "image": cloud.image,
                "pipeline_root": job["runtimeConfig"].get("gcsOutputDirectory"),
                "parameters": job["runtimeConfig"].get("parameterValues", {}),
            }
        )
    )
    return 0


def command_launch(args) -> int:
    """Prints progress on stderr and one JSON summary line; exits 2 when the job cannot be
    launched here, 1 when a task failed."""
    from pipeline.launch.launcher import Launch, LaunchError

    try:
        launch = Launch(
            args.template,
            args.output,
            parameters=dict(args.parameters),
            target=args.target,
            enable_cache=args.cache,
            fresh_processes=args.fresh_processes,
            image=args.image,
            job_env=dict(args.job_env),
            kfp_version=args.kfp_version,
            gcs_emulator=args.gcs_emulator,
            secrets=dict(args.secrets),
        )
        summary = launch.run()
    except (LaunchError, ValueError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        print(json.dumps({"status": "refused", "error": str(error)}))
        return 2
    print(json.dumps(summary))
    return 0 if summary["status"] == "succeeded" else 1


def command_submit(args) -> int:
    from pipeline.kubeflow_runner import submit

    try:
        with open(args.template) as f:
            name = json.load(f)["pipelineSpec"]["pipelineInfo"]["name"]
        run = submit(
            args.template,
            name,
            CloudConfig.from_environment(),
            engine=args.engine,
            host=args.host,
            parameter_values=dict(args.parameters),
            service_account=args.service_account,
            enable_cache=args.cache,
            namespace=args.namespace,
            token_file=args.token_file,
        )
    except (ValueError, FileNotFoundError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"pipeline_name": name, "engine": args.engine, "run": run}))
    return 0


def command_predict(args) -> int:
    from pipeline.predict import load_model, predict_images, predict_lines, predict_texts

    if args.deprecated_model:
        print("warning: predict --model is deprecated; use --saved-model", file=sys.stderr)
        args.saved_model = args.deprecated_model
    if sum(map(bool, (args.images, args.texts, args.input))) != 1:
        print(
            "error: give one of TEXT arguments, --image FILE... or --input FILE.jsonl",
            file=sys.stderr,
        )
        return 2
    if args.saved_model and args.saved_model.startswith("models:/"):
        from pipeline.serve import registered_saved_model

        try:
            args.saved_model = registered_saved_model(args.output, args.saved_model)
        except Exception as error:  # MLflow's errors name the model and alias
            print(f"error: {str(error).strip()}", file=sys.stderr)
            return 2
    if args.input:
        return _predict_file(args, load_model, predict_lines)
    try:
        model, path = load_model(args.saved_model, args.runtime)
        rows = (
            predict_images(model, args.images) if args.images else predict_texts(model, args.texts)
        )
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for row in rows:
        print(json.dumps({"model": path, **row}, ensure_ascii=False))
    return 0


def _predict_file(args, load_model, predict_lines) -> int:
    """Streams answers to stdout as the lines are read; exits 1 when a line had an error."""
    try:
        model, path = load_model(args.saved_model, args.runtime)
        # Bytes: a line that is not UTF-8 gets its own error answer (predict_lines).
        lines = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    errors = 0
    with lines:
        for answer in predict_lines(model, lines, args.batch_size):
            errors += "error" in answer
            print(json.dumps(answer, ensure_ascii=False), flush=True)
    if errors:
        print(
            f"error: {errors} line(s) of {args.input} could not be predicted (their "
            f"answer lines say why)",
            file=sys.stderr,
        )
    return 1 if errors else 0


def command_report(args) -> int:
    from pipeline import reports

    path: Optional[str]
    try:
        if args.run_id or args.regenerate:
            path = reports.regenerate(args.output, args.pipeline, args.run_id)
        else:
            path = reports.latest_report(args.output, args.pipeline)
            if path is None:
                raise FileNotFoundError(
                    f"no run report under {os.path.abspath(args.output)}; "
                    "run a pipeline first (tfx-transformers run ...)"
                )
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


def command_registry(args) -> int:
    from components.model_registry.backends import (
        existing_mlflow_config,
        from_config,
        mlflow_config,
    )

    try:
        registry_dir = configs.output_paths(args.output, "")["registry_dir"]
        registry = from_config(existing_mlflow_config(registry_dir))
        if args.action == "list":
            rows = registry.versions(args.name)
        elif args.action == "show":
            rows = [
                registry.show(args.name, args.version)
                if args.version
                else registry.by_alias(args.name, args.alias)
            ]
        elif args.action == "copy":
            target = from_config(mlflow_config("", tracking_uri=args.to))
            rows = registry.copy_to(target, args.name)
        else:
            rows = [registry.promote(args.name, args.version, args.alias, force=args.force)]
    except Exception as error:  # MLflow's errors name the model and version
        print(f"error: {str(error).strip()}", file=sys.stderr)
        return 2
    for row in rows:
        print(json.dumps(row))
    return 0


def command_presets(args) -> int:
    """A JSON line per preset: its family, its name, whether it is the default, its fields."""
    import dataclasses

    from trainer_module.families import FAMILIES, get_family

    try:
        families = [get_family(args.model)] if args.model else list(FAMILIES.values())
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for family in families:
        for name, config in sorted(family.presets.items()):
            row = {
                "model": family.name,
                "preset": name,
                "default": name == family.default_preset,
                "fields": dataclasses.asdict(config),
            }
            print(json.dumps(row, default=str))
    return 0


def command_runs(args) -> int:
    """A JSON line per run: id, pipeline, status, blessing, gating metrics, pushed version."""
    import tensorflow as tf

    from pipeline import reports, run_summary

    tf.get_logger().setLevel("ERROR")  # TFMA's reader warns of a deprecated TF call per file

    names = [args.pipeline_name] if args.pipeline_name else reports.pipeline_names(args.output)
    for name in names:
        metadata_path = configs.output_paths(args.output, name)["metadata_path"]
        if not os.path.exists(metadata_path):
            print(f"error: no pipeline {name!r} under {args.output}", file=sys.stderr)
            return 2
        store = reports.open_store(metadata_path)
        for run in run_summary.pipeline_runs(store, name):
            summary = run_summary.summarize(metadata_path, name, run.name)
            registered = summary.get("registered") or {}
            print(
                json.dumps(
                    {
                        "run_id": run.name,
                        "pipeline_name": name,
                        "status": run_summary.run_status(summary),
                        "blessed": summary["blessed"],
                        "metrics": {  # overall; per-class ones are in the run's summary
                            k: v for k, v in summary["metrics"].items() if " (" not in k
                        },
                        "pushed_version": summary["pushed_version"],
                        "registered": registered.get("uri"),
                    }
                )
            )
    return 0


def command_serve(args) -> int:
    """Prints what it serves (one JSON line), then becomes MLflow's server until stopped."""
    from pipeline.serve import parse_model_uri, serving

    folder = args.model_uri if args.model_uri and os.path.isdir(args.model_uri) else None
    try:
        if args.model_uri and not folder:
            if not args.model_uri.startswith("models:/"):
                raise FileNotFoundError(f"{args.model_uri}: no such model folder")
            args.name, alias, args.version = parse_model_uri(args.model_uri)
            args.alias = alias or args.alias
        found = serving(
            args.output,
            args.name,
            args.alias,
            args.version,
            args.host,
            args.port,
            args.workers,
            max_request_bytes=int(args.max_request_mb * 2**20),
            max_rows=args.max_rows,
            timeout_seconds=args.timeout,
            threads_per_op=args.threads_per_op,
            folder=folder,
            runtime=args.runtime,
        )
    except Exception as error:  # MLflow's errors name the model and alias
        print(f"error: {str(error).strip()}", file=sys.stderr)
        return 2
    print(json.dumps(found.describe()), flush=True)
    sys.stderr.flush()
    os.execve(found.argv[0], found.argv, found.env)


def main(argv: Optional[List[str]] = None) -> int:
    # TensorFlow's C++ start-up lines (CUDA plugins on a CPU machine, CPU features) are noise
    # here; set TF_CPP_MIN_LOG_LEVEL=0 to see them.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(pipeline_options=bool({"run", "compile", "infer"} & set(argv[:1])))
    args = parser.parse_args(argv)
    if args.command is None:  # a bare `tfx-transformers`: what it can do, not an error
        parser.print_help()
        return 0
    commands = {
        "run": command_run,
        "compile": command_compile,
        "launch": command_launch,
        "submit": command_submit,
        "infer": command_infer,
        "predict": command_predict,
        "report": command_report,
        "registry": command_registry,
        "runs": command_runs,
        "presets": command_presets,
        "serve": command_serve,
    }
    return commands[args.command](args)


def entry_point() -> None:
    """The console script. Exits normally (atexit handlers run: MLflow's, Beam's); only the
    shutdown noise of TensorFlow's finalizers is silenced (trainer_module/quiet_shutdown.py)."""
    from trainer_module import quiet_shutdown

    quiet_shutdown.install()
    sys.exit(main())


if __name__ == "__main__":
    entry_point()
