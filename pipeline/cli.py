"""tfx-transformers: run a task's pipeline locally or on Vertex AI / Kubeflow Pipelines, or
query a pushed model.

  tfx-transformers run --task imdb --model transformer [--data DIR] [--output DIR] [--tune] ...
  tfx-transformers compile --task imdb [--tune] [--output-file PATH]   (Vertex AI / Kubeflow)
  tfx-transformers submit PIPELINE_JOB.json [--engine vertex|kubeflow] [--param NAME=VALUE]
  tfx-transformers predict --model PATH TEXT...
  tfx-transformers predict --model PATH --image FILE...
  tfx-transformers report [--output DIR] [--pipeline NAME] [--run RUN_ID] [--regenerate]
  tfx-transformers registry list [--name NAME] | show NAME [VERSION | --alias A] |
                            promote NAME VERSION [--alias A] [--force]
"""
import argparse
import json
import os
import sys
from typing import List, Optional

from components.model_registry.version import CHAMPION
from pipeline import configs
from pipeline.cloud import ENGINES, CloudConfig


def parse_override(text: str):
    """KEY=VALUE with VALUE read as JSON when it parses (numbers, booleans), else a string."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parse_parameter(text: str):
    """NAME=VALUE with VALUE kept as a string (runtime parameters are strings)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return tuple(text.split("=", 1))


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def _add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """What builds a task's pipeline, wherever it runs."""
    parser.add_argument("--task", required=True, help="a task the factory knows, e.g. imdb")
    parser.add_argument("--model", help="model family (default: the task's first)")
    parser.add_argument("--data", help="input data directory (default: the embedded corpus; "
                                       "compile: <DATA_ROOT>/<task>)")
    parser.add_argument("--source-lang", help="translation: source language suffix (default: de)")
    parser.add_argument("--target-lang", help="translation: target language suffix (default: en)")
    parser.add_argument("--image-size", type=_positive_int,
                        help="cifar10: the side every dataset image must have (default: 32)")
    parser.add_argument("--train-steps", type=_positive_int)
    parser.add_argument("--eval-steps", type=_positive_int)
    parser.add_argument("--preset", help="model preset (default: the family's default)")
    parser.add_argument("--bert-preset", metavar="NAME_OR_DIR",
                        help="with --model bert: a KerasHub preset name or a local preset "
                             "directory")
    parser.add_argument("--set", dest="overrides", type=parse_override, action="append",
                        default=[], metavar="KEY=VALUE",
                        help="override a preset field, e.g. --set d_model=128 (repeatable)")
    parser.add_argument("--blessing-threshold", type=float,
                        help="lower bound on the task's gating metric (IMDB: binary_accuracy)")
    parser.add_argument("--schema", metavar="PATH",
                        help="a curated schema (text proto) to validate the data against, "
                             "e.g. data/imdb/schema.pbtxt (default: inferred from the data)")
    parser.add_argument("--tune", action="store_true",
                        help="search layers, d_model, learning rate and dropout with a Tuner "
                             "first; the Trainer uses the best values")
    parser.add_argument("--tuner-trials", type=_positive_int, default=configs.TUNER_TRIALS,
                        help="KerasTuner trials with --tune (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="rerun every component")


def _pipeline_options(args) -> dict:
    """The keyword arguments of the pipeline builders shared by `run` and `compile`."""
    overrides = dict(args.overrides)
    if args.bert_preset:
        if args.model != "bert":
            raise ValueError("--bert-preset goes with --model bert")
        local = os.path.isdir(args.bert_preset)
        overrides["backbone_preset"] = (os.path.abspath(args.bert_preset) if local
                                        else args.bert_preset)
    return dict(task=args.task, model=args.model, data_dir=args.data,
                data_options={"source_lang": args.source_lang, "target_lang": args.target_lang,
                              "image_size": args.image_size and str(args.image_size)},
                train_steps=args.train_steps, eval_steps=args.eval_steps, preset=args.preset,
                model_overrides=overrides, blessing_threshold=args.blessing_threshold,
                schema_path=args.schema, tune=args.tune, tuner_trials=args.tuner_trials,
                enable_cache=not args.no_cache)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfx-transformers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a task's pipeline with LocalDagRunner")
    _add_pipeline_arguments(run)
    run.add_argument("--output", default=configs.DEFAULT_OUTPUT_DIR,
                     help="pipeline roots, MLMD, logs and pushed models (default: %(default)s)")
    run.add_argument("--beam-mode", choices=sorted(configs.BEAM_MODES),
                     default=configs.DEFAULT_BEAM_MODE)
    run.add_argument("--registry", choices=[r for r in configs.REGISTRIES if r],
                     default=configs.DEFAULT_REGISTRY,
                     help="register pushed models in MLflow (MLFLOW_TRACKING_URI, else a local "
                          "registry under --output) or not (default: %(default)s)")
    run.add_argument("--verbose", action="store_true", help="show TFX's INFO log")

    compile_ = commands.add_parser(
        "compile", help="compile a task's pipeline for Vertex AI Pipelines / Kubeflow "
                        "Pipelines (settings from the environment: kubeflow/README.md)")
    _add_pipeline_arguments(compile_)
    compile_.add_argument("--output-file", metavar="PATH",
                          help="the PipelineJob JSON (default: kubeflow/build/<pipeline>.json)")

    submit = commands.add_parser("submit", help="start a run of a compiled pipeline")
    submit.add_argument("template", help="the compiled PipelineJob JSON")
    submit.add_argument("--engine", choices=ENGINES, default="vertex")
    submit.add_argument("--host", help="with --engine kubeflow: the KFP API endpoint")
    submit.add_argument("--param", dest="parameters", type=parse_parameter, action="append",
                        default=[], metavar="NAME=VALUE",
                        help='a runtime parameter, e.g. --param train_args=\'{"num_steps": 500}\'')
    submit.add_argument("--service-account")
    submit.add_argument("--no-cache", action="store_true", help="rerun every component")

    predict = commands.add_parser(
        "predict", help="classify text or images, or translate, with a pushed SavedModel")
    predict.add_argument("--model", required=True,
                         help="a SavedModel folder, or a folder of numbered versions (the newest is used)")
    predict.add_argument("--image", dest="images", nargs="+", metavar="FILE",
                         help="JPEG or PNG files, any size (image classifiers)")
    predict.add_argument("texts", nargs="*", metavar="TEXT")

    report = commands.add_parser(
        "report", help="print the path of the latest run report, or rebuild one from MLMD")
    report.add_argument("--output", default=configs.DEFAULT_OUTPUT_DIR,
                        help="the run command's output directory (default: %(default)s)")
    report.add_argument("--pipeline", help="e.g. imdb-transformer (default: the newest report "
                                           "of any pipeline; required with --run/--regenerate "
                                           "when the output holds several)")
    report.add_argument("--run", dest="run_id", help="a run id (the run summary's run_id): "
                                                     "rebuild that run's report from MLMD")
    report.add_argument("--regenerate", action="store_true",
                        help="rebuild the report from MLMD (default: the newest run) into "
                             "<output>/reports/<pipeline>/<run id>.html")

    registry = commands.add_parser(
        "registry", help="read and change the MLflow model registry (MLFLOW_TRACKING_URI, "
                         "else the local one under --output)")
    registry.add_argument("--output", default=configs.DEFAULT_OUTPUT_DIR,
                          help="the run command's output directory (default: %(default)s)")
    actions = registry.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every registered version, with metrics and aliases")
    listing.add_argument("--name", help="one registered model, e.g. imdb-transformer")
    show = actions.add_parser("show", help="one version (default: the champion)")
    show.add_argument("name")
    show.add_argument("version", nargs="?")
    show.add_argument("--alias", default=CHAMPION)
    promote = actions.add_parser("promote", help="move an alias (default: champion) to a version")
    promote.add_argument("name")
    promote.add_argument("version")
    promote.add_argument("--alias", default=CHAMPION)
    promote.add_argument("--force", action="store_true",
                         help="also for a version the Evaluator did not bless")
    return parser


def command_run(args) -> int:
    from pipeline.runner import build_local_pipeline, run_local

    try:
        pipeline, paths = build_local_pipeline(
            **_pipeline_options(args), output_dir=args.output, beam_mode=args.beam_mode,
            registry=args.registry)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        print(json.dumps({"status": "failed", "error": str(error)}))
        return 2
    try:
        summary = run_local(pipeline, paths, verbose=args.verbose)
    except Exception as error:  # a component failed: say which and why, point to the log
        message = str(error).strip()
        print(f"error: pipeline {pipeline.pipeline_info.pipeline_name} failed: {message}",
              file=sys.stderr)
        print(f"full log: {paths['log_dir']}", file=sys.stderr)
        print(json.dumps({"status": "failed", "pipeline_name": pipeline.pipeline_info.pipeline_name,
                          "error": message}))
        return 1
    print(json.dumps({"status": "succeeded", **summary}))
    return 0


def command_compile(args) -> int:
    from pipeline.kubeflow_runner import build_cloud_pipeline, compile_pipeline, default_job_path

    try:
        cloud = CloudConfig.from_environment()
        options = _pipeline_options(args)
        pipeline = build_cloud_pipeline(options.pop("task"), cloud, **options)
        name = pipeline.pipeline_info.pipeline_name
        output_file = args.output_file or default_job_path(pipeline)
        job = compile_pipeline(pipeline, cloud, output_file)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"pipeline_name": name, "pipeline_job": os.path.abspath(output_file),
                      "image": cloud.image, "pipeline_root": job["runtimeConfig"].get(
                          "gcsOutputDirectory"),
                      "parameters": job["runtimeConfig"].get("parameterValues", {})}))
    return 0


def command_submit(args) -> int:
    from pipeline.kubeflow_runner import submit

    try:
        with open(args.template) as f:
            name = json.load(f)["pipelineSpec"]["pipelineInfo"]["name"]
        run = submit(args.template, name, CloudConfig.from_environment(), engine=args.engine,
                     host=args.host, parameter_values=dict(args.parameters),
                     service_account=args.service_account, enable_cache=not args.no_cache)
    except (ValueError, FileNotFoundError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"pipeline_name": name, "engine": args.engine, "run": run}))
    return 0


def command_predict(args) -> int:
    from pipeline.predict import load_model, predict_images, predict_texts

    if bool(args.images) == bool(args.texts):
        print("error: give either TEXT arguments or --image FILE...", file=sys.stderr)
        return 2
    try:
        model, path = load_model(args.model)
        rows = predict_images(model, args.images) if args.images else predict_texts(
            model, args.texts)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for row in rows:
        print(json.dumps({"model": path, **row}, ensure_ascii=False))
    return 0


def command_report(args) -> int:
    from pipeline import reports

    try:
        if args.run_id or args.regenerate:
            path = reports.regenerate(args.output, args.pipeline, args.run_id)
        else:
            path = reports.latest_report(args.output, args.pipeline)
            if path is None:
                raise FileNotFoundError(f"no run report under {os.path.abspath(args.output)}; "
                                        "run a pipeline first (tfx-transformers run ...)")
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


def command_registry(args) -> int:
    from components.model_registry.backends import from_config, mlflow_config

    registry = from_config(mlflow_config(configs.output_paths(args.output, "")["registry_dir"]))
    try:
        if args.action == "list":
            rows = registry.versions(args.name)
        elif args.action == "show":
            rows = [registry.show(args.name, args.version) if args.version
                    else registry.by_alias(args.name, args.alias)]
        else:
            rows = [registry.promote(args.name, args.version, args.alias, force=args.force)]
    except Exception as error:  # MLflow's errors name the model and version
        print(f"error: {str(error).strip()}", file=sys.stderr)
        return 2
    for row in rows:
        print(json.dumps(row))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    # TensorFlow's C++ start-up lines (CUDA plugins on a CPU machine, CPU features) are noise
    # here; set TF_CPP_MIN_LOG_LEVEL=0 to see them.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    args = build_parser().parse_args(argv)
    commands = {"run": command_run, "compile": command_compile, "submit": command_submit,
                "predict": command_predict, "report": command_report,
                "registry": command_registry}
    return commands[args.command](args)


def entry_point() -> None:
    """The console script: exits without running TensorFlow's finalizers, which print
    spurious tracebacks at interpreter shutdown."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry_point()
