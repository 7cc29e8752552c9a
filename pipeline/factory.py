"""The one pipeline factory: the options (a task, a model family and how to train it) in, a TFX
pipeline out."""

import dataclasses
import json
from typing import Any, Dict, Mapping, Optional, Sequence

from ml_metadata.proto import metadata_store_pb2

# Direct imports: `from tfx import v1` also loads the Google Cloud extensions (+9 s per process).
from tfx.components import (
    BulkInferrer,
    DistributionValidator,
    Evaluator,
    ExampleValidator,
    SchemaGen,
    StatisticsGen,
    Trainer,
    Transform,
    Tuner,
)
from tfx.components.schema_gen.import_schema_gen.component import ImportSchemaGen
from tfx.dsl.components.base.base_node import BaseNode
from tfx.dsl.components.common.resolver import Resolver
from tfx.dsl.input_resolution.strategies.latest_blessed_model_strategy import (
    LatestBlessedModelStrategy,
)
from tfx.orchestration import data_types
from tfx.orchestration.pipeline import Pipeline
from tfx.proto import bulk_inferrer_pb2, pusher_pb2, trainer_pb2, transform_pb2
from tfx.types import Channel, standard_artifacts
from tfx.utils import proto_utils

from components.anomalies_gate import AnomaliesGate
from components.champion_model import ChampionAwareEvaluator, ChampionModel
from components.cost_estimate import CostEstimate
from components.cost_estimate.estimate import measured_speeds
from components.dataset_example_gen import SPAN, WINDOW
from components.model_registry.component import ModelRegistry, ModelRegistrySpec
from components.predictions_writer import PredictionsWriter
from components.resolvers.base_model import base_model_resolver
from components.resolvers.baseline_statistics import baseline_statistics_resolver
from components.run_report import RunReport
from components.unlabeled_example_gen import UnlabeledExampleGen
from components.versioned_pusher import VersionedPusher
from pipeline.options import ResolvedRun
from trainer_module.features import UNLABELED_SPLIT
from trainer_module.serving.archive import BULK_INFERENCE
from trainer_module.training.backup import BACKUP_ROOT_KEY

LABELED_SPLITS = ("train", "eval")  # the ExampleGens' splits with labels


def data_components(
    run: ResolvedRun,
    data_dir,
    lineage_resolvers: bool = True,
    cost: Optional[dict] = None,
    with_transform: bool = True,
) -> dict:
    """The data half of the pipeline, up to and including Transform, by role, in order:
    example_gen, with `run.spans` above 1 window_example_gen (the training window),
    statistics_gen, schema_gen (or ImportSchemaGen), example_validator, with
    `lineage_resolvers` and a task that checks drift baseline_statistics (a resolver) and
    distribution_validator, then anomalies_gate, with `cost` (cost_plan) cost_estimate, and
    (unless not `with_transform`: a dry run) transform. benchmarks/scaling.py runs it alone."""
    # Reads the raw data (the newest span) into tf.Examples with `train` and `eval` splits;
    # with pretraining, the data's unlabelled texts too, into a third split (UNLABELED_SPLIT)
    # that Transform transforms and only the Trainer's pretraining reads: the schema, the
    # validators and the Evaluator leave it out.
    unlabeled = run.reads_unlabeled
    labeled_only = {"exclude_splits": [UNLABELED_SPLIT]} if unlabeled else {}
    example_gen, window = example_gens(run, data_dir)
    training_reader = window.get("window_example_gen", example_gen)
    # Computes statistics over every split.
    statistics_gen = StatisticsGen(examples=example_gen.outputs["examples"])
    # Imports the curated schema, or infers one (types, presence, shapes) from the statistics.
    schema_gen: BaseNode
    if run.schema:
        schema_gen = ImportSchemaGen(schema_file=run.schema)
    else:
        schema_gen = SchemaGen(
            statistics=statistics_gen.outputs["statistics"],
            infer_feature_shape=True,
            **labeled_only,
        )
    # Checks the statistics against the schema.
    example_validator = ExampleValidator(
        statistics=statistics_gen.outputs["statistics"],
        schema=schema_gen.outputs["schema"],
        **labeled_only,
    )
    # Compares the new data's statistics with those of the data the champion was judged on.
    drift_components = (
        drift_check(run, statistics_gen, bool(unlabeled)) if lineage_resolvers else {}
    )
    drift_anomalies = (
        drift_components["distribution_validator"].outputs["anomalies"]
        if drift_components
        else None
    )
    # Stops the run, listing them, when either validator found anomalies.
    anomalies_gate = AnomaliesGate(
        anomalies=example_validator.outputs["anomalies"], drift=drift_anomalies
    )
    estimate = {}
    if cost is not None:
        # Says what the run will train and for about how long, once StatisticsGen has counted
        # the data; Transform waits on it.
        estimate["cost_estimate"] = CostEstimate(
            statistics=statistics_gen.outputs["statistics"], plan=json.dumps(cost)
        )
    components = {
        "example_gen": example_gen,
        **window,
        "statistics_gen": statistics_gen,
        "schema_gen": schema_gen,
        "example_validator": example_validator,
        **drift_components,
        "anomalies_gate": anomalies_gate,
        **estimate,
    }
    if not with_transform:  # a dry run: nothing after the data's checks and the plan
        return components
    # Tokenises and pads with analyzer-computed vocabularies; the graph is reused at serving.
    transform = transform_component(run, training_reader, schema_gen)
    for gate in (anomalies_gate, *estimate.values()):  # Transform waits on both
        transform.add_upstream_node(gate)
    return {**components, "transform": transform}


def transform_component(run: ResolvedRun, training_reader, schema_gen) -> Transform:
    """Transform of the training reader's examples with the family's preprocessing_fn."""
    unlabeled = run.reads_unlabeled
    return Transform(
        examples=training_reader.outputs["examples"],
        schema=schema_gen.outputs["schema"],
        preprocessing_fn=run.family.preprocessing_fn,
        custom_config=run.family.transform_config(run.model_config),
        # The analyzers (vocabularies, n-gram ratios) read the training split alone.
        splits_config=transform_pb2.SplitsConfig(
            analyze=["train"], transform=[*LABELED_SPLITS, UNLABELED_SPLIT]
        )
        if unlabeled
        else None,
        # StatisticsGen has the raw data's statistics; TFDV inside Transform would compute
        # them again (and the transformed data's) at the cost of time and memory.
        disable_statistics=True,
    )


def example_gens(run: ResolvedRun, data_dir) -> tuple:
    """(the ExampleGen of the newest span, {"window_example_gen": the training window's} with
    `run.spans` above 1, else {})."""
    task, unlabeled = run.task, {"unlabeled": True} if run.reads_unlabeled else {}
    example_gen = task.example_gen(data_dir, task.eval_percent, **run.reading, **unlabeled)
    if run.spans <= 1:
        return example_gen, {}
    # The training window: the newest span and the ones before it, read the same way.
    window = task.example_gen(
        data_dir, task.eval_percent, **run.reading, **unlabeled, spans=run.spans
    ).with_id(example_gen.id + WINDOW)
    return example_gen, {"window_example_gen": window}


def drift_check(run: ResolvedRun, statistics_gen, unlabeled: bool) -> dict:
    """For a task that checks drift: the baseline statistics' resolver (the champion's
    data's, through MLMD lineage) and DistributionValidator, by role; else nothing."""
    drift = run.task.distribution_validator_config(run.drift_thresholds)
    if drift is None:
        return {}
    baseline = baseline_statistics_resolver()
    distribution_validator = DistributionValidator(
        statistics=statistics_gen.outputs["statistics"],
        # No champion yet: no baseline, and DistributionValidator passes the data.
        baseline_statistics=baseline.outputs["statistics"].as_optional(),
        config=drift,
        **({"include_split_pairs": [(s, s) for s in LABELED_SPLITS]} if unlabeled else {}),
    )
    return {"baseline_statistics": baseline, "distribution_validator": distribution_validator}


# Overrides that leave a training step's cost as measured (the head's size, the seed).
COST_NEUTRAL_FIELDS = ("num_classes", "seed")


def cost_plan(run: ResolvedRun, settings) -> dict:
    """CostEstimate's parameter: what the Trainer will be given, and the measured speeds of
    the run's family and preset (components/cost_estimate/measured_speeds.json)."""
    return {
        "batch_size": run.model_config.batch_size,
        "train_steps": settings.train_steps,
        "epochs": settings.custom_config.get("epochs"),
        "time_budget_minutes": run.time_budget,
        "tuner_trials": run.tuner_trials,
        # The text families' pretraining (trainer_module/family.py: PretrainingConfig).
        "pretrain_epochs": getattr(run.model_config, "pretrain_epochs", 0.0),
        "pretrain_objective": getattr(run.model_config, "pretrain_objective", "masked"),
        "spans": run.spans,
        "rows": measured_speeds(run.task.name, run.family.name, run.preset),
        "classes": list(run.classes),  # a classifier's, as read from the data
        # The run's model, whose steps are timed on a CPU kind no row measured.
        "family": run.family.name,
        "preset": run.preset,
        "overrides": dict(run.overrides),
        "mixed_precision": run.options.mixed_precision,
        # What the run's model changes from the measured preset (the projection warns).
        "changed": [
            f"{field}={value}"
            for field, value in sorted(run.overrides.items())
            if getattr(run.family.config(run.preset), field, value) != value
            and field not in COST_NEUTRAL_FIELDS
        ],
    }


def latest_blessed_model(node_id: str) -> Resolver:
    """A resolver of the pipeline's latest blessed model (outputs "model", "model_blessing")."""
    return Resolver(
        strategy_class=LatestBlessedModelStrategy,
        model=Channel(type=standard_artifacts.Model),
        model_blessing=Channel(type=standard_artifacts.ModelBlessing),
    ).with_id(node_id)


@dataclasses.dataclass(frozen=True)
class Deployment:
    """Where the pipeline runs and what that changes: everything a runner works out (paths,
    Beam arguments, the metadata store, the registry) and passes to create_pipeline.

    With `registry_config` (components/model_registry/backends.py), each pushed version is
    registered in that model registry. `vertex_training` ({"trainer": ..., "tuner": ...}, each
    the custom_config of TFX's Google Cloud extension: pipeline/cloud.py) runs the Trainer and
    Tuner as Vertex AI training jobs. With `runtime_parameters`, the train and eval arguments
    are the pipeline's runtime parameters `train_args` and `eval_args` (JSON), defaulting to
    the run's steps, and the data folder is the runtime parameter `data_dir`. With
    `lineage_resolvers`, two resolvers that follow MLMD lineage (components/resolvers/) give
    DistributionValidator the champion's data's statistics to compare with (a drifted span
    stops before Transform; tasks that check drift) and the Trainer a base model to
    warm-start from; the KFP v2 compiler cannot compile them.

    The Evaluator's baseline: `baseline="resolver"`, TFX's latest-blessed-model resolver (ML
    Metadata of this pipeline); "champion", the registry's champion (or the newest pushed
    version without a registry) through ChampionModel, for compiled jobs (its docstring says
    why). `run_id`: the run's id as the registry and the report record it, for orchestrators
    whose executors get no pipeline context (a KFP placeholder in compiled jobs); they then
    get the pipeline's name as a parameter too. `backup_root`: where the Trainer backs up
    (default: its own folder; trainer_module/training/backup.py). With `estimate_cost` (local
    runs: the projection is this machine's), CostEstimate says the run's steps and projected
    minutes before Transform starts; with `dry_run`, the pipeline stops there."""

    pipeline_root: str
    data_dir: str
    serving_model_dir: str
    metadata_connection_config: Optional[metadata_store_pb2.ConnectionConfig] = None
    beam_pipeline_args: Sequence[str] = ()
    registry_config: Optional[str] = None
    vertex_training: Optional[Mapping[str, Mapping[str, Any]]] = None
    runtime_parameters: bool = False
    lineage_resolvers: bool = True
    baseline: str = "resolver"
    run_id: Optional[str] = None
    backup_root: Optional[str] = None
    estimate_cost: bool = False
    dry_run: bool = False

    def __post_init__(self):
        if self.baseline not in ("resolver", "champion"):
            raise ValueError(f"baseline must be 'resolver' or 'champion', not {self.baseline!r}")

    def pipeline(self, run: ResolvedRun, components: list) -> Pipeline:
        return Pipeline(
            pipeline_name=run.name,
            pipeline_root=self.pipeline_root,
            components=components,
            enable_cache=run.enable_cache,
            metadata_connection_config=self.metadata_connection_config,
            beam_pipeline_args=list(self.beam_pipeline_args),
        )


def create_pipeline(run: ResolvedRun, deployment: Deployment) -> Pipeline:
    """Builds the pipeline `run` describes (PipelineOptions.resolve: task, model family,
    preset and overrides, steps, threshold, schema, tuning), where `deployment` says. Nothing
    here reads the data: the ExampleGen finds its layout when it runs."""
    settings = run.trainer_settings(deployment.data_dir)
    data_dir, train_args, eval_args = training_args(run, settings, deployment)
    data = data_components(
        run,
        data_dir,
        lineage_resolvers=deployment.lineage_resolvers,
        cost=cost_plan(run, settings) if deployment.estimate_cost else None,
        with_transform=not deployment.dry_run,
    )
    if deployment.dry_run:
        # Reads, counts and checks the data and says the plan (CostEstimate); trains nothing.
        return deployment.pipeline(run, list(data.values()))
    training_config = dict(settings.custom_config)
    if deployment.backup_root:
        training_config[BACKUP_ROOT_KEY] = deployment.backup_root
    training = training_components(run, data, deployment, training_config, train_args, eval_args)
    trainer = training[-1]
    evaluation = evaluation_components(run, data, deployment, trainer)
    model_resolver, evaluator, pusher = evaluation
    # The run's artifacts, by the input keys of the registry and the report.
    artifacts = {
        "examples": data["example_gen"].outputs["examples"],
        **(
            {"training_examples": data["window_example_gen"].outputs["examples"]}
            if "window_example_gen" in data
            else {}
        ),
        "statistics": data["statistics_gen"].outputs["statistics"],
        "schema": data["schema_gen"].outputs["schema"],
        "anomalies": data["example_validator"].outputs["anomalies"],
        "transform_graph": data["transform"].outputs["transform_graph"],
        "model": trainer.outputs["model"],
        "model_run": trainer.outputs["model_run"],
        "evaluation": evaluator.outputs["evaluation"],
        "blessing": evaluator.outputs["blessing"],
        "pushed_model": pusher.outputs["pushed_model"],
        "baseline_model": model_resolver.outputs["model"],
    }
    records = record_components(run, data, deployment, data_dir, artifacts)
    return deployment.pipeline(run, [*data.values(), *training, *evaluation, *records])


def training_args(run: ResolvedRun, settings, deployment: Deployment) -> tuple:
    """(data folder, TrainArgs, EvalArgs): with runtime parameters, each a RuntimeParameter
    defaulting to the run's."""
    data_dir: Any = deployment.data_dir
    # With pretraining, the Trainer's train_files are the training split's, then the unlabelled
    # texts', which only pretraining reads (trainer_module/training/inputs.py TrainerRun).
    train_args: Any = trainer_pb2.TrainArgs(
        num_steps=settings.train_steps,
        splits=["train", UNLABELED_SPLIT] if run.reads_unlabeled else [],
    )
    eval_args: Any = trainer_pb2.EvalArgs(num_steps=settings.eval_steps)
    if not deployment.runtime_parameters:
        return data_dir, train_args, eval_args
    # The ExampleGen reads its data folder only when it runs, so a run can point it
    # elsewhere; the epochs above were chosen for the default. A {SPAN} pattern stays
    # fixed: the driver resolves the latest span when the job runs.
    if SPAN not in data_dir:
        data_dir = data_types.RuntimeParameter(name="data_dir", ptype=str, default=data_dir)
    train_args, eval_args = (
        data_types.RuntimeParameter(name=name, ptype=str, default=proto_utils.proto_to_json(args))
        for name, args in (("train_args", train_args), ("eval_args", eval_args))
    )
    return data_dir, train_args, eval_args


def training_components(
    run: ResolvedRun,
    data: dict,
    deployment: Deployment,
    training_config: dict,
    train_args,
    eval_args,
) -> list:
    """The Tuner (with tuner trials), the base model's resolver (with lineage resolvers) and
    the Trainer, last. Six arguments: each is what one of them reads."""
    family, transform, schema_gen = run.family, data["transform"], data["schema_gen"]
    trainer_class: type = Trainer
    tuner_class: type = Tuner
    vertex_training = deployment.vertex_training or {}
    if vertex_training:  # the Google Cloud extension's components launch Vertex AI jobs
        from tfx.extensions.google_cloud_ai_platform.trainer.component import (
            Trainer as trainer_class,
        )
        from tfx.extensions.google_cloud_ai_platform.tuner.component import Tuner as tuner_class
    components: list = []
    hyperparameters = None
    if run.tuner_trials:
        # Searches the family's space (layers, width, learning rate...); writes the best values.
        tuner = tuner_class(
            tuner_fn=family.tuner_fn,
            examples=transform.outputs["transformed_examples"],
            transform_graph=transform.outputs["transform_graph"],
            schema=schema_gen.outputs["schema"],
            train_args=train_args,
            eval_args=eval_args,
            custom_config={
                **training_config,
                "trials": run.tuner_trials,
                **vertex_training.get("tuner", {}),
            },
        )
        components.append(tuner)
        hyperparameters = tuner.outputs["best_hyperparameters"]
    base_model = None
    if deployment.lineage_resolvers:
        # The champion of the data before this run's, which the Trainer warm-starts from when
        # it is the same model (trainer_module/training/warm_start.py).
        resolver = base_model_resolver(transform.inputs["examples"])
        components.append(resolver)
        base_model = resolver.outputs["model"]
    # Trains the model family and exports a SavedModel with raw-input signatures.
    trainer = trainer_class(
        run_fn=family.run_fn,
        examples=transform.outputs["transformed_examples"],
        transform_graph=transform.outputs["transform_graph"],
        schema=schema_gen.outputs["schema"],
        hyperparameters=hyperparameters,
        base_model=base_model,
        train_args=train_args,
        eval_args=eval_args,
        custom_config={**training_config, **vertex_training.get("trainer", {})},
    )
    return [*components, trainer]


def evaluation_components(run: ResolvedRun, data: dict, deployment: Deployment, trainer) -> list:
    """The model to beat, the Evaluator and the Pusher."""
    # Finds the model to beat, the baseline for the change threshold: the latest blessed
    # model, or the registry's champion.
    model_resolver: BaseNode
    evaluator_class: type
    if deployment.baseline == "resolver":
        model_resolver = latest_blessed_model("latest_blessed_model_resolver")
        evaluator_class = Evaluator
    else:
        model_resolver = ChampionModel(
            model_name=run.name,
            registry=deployment.registry_config or "",
            serving_model_dir=deployment.serving_model_dir,
        )
        evaluator_class = ChampionAwareEvaluator
    # Evaluates the candidate (and the baseline) with TFMA and blesses it if it passes.
    evaluator = evaluator_class(
        examples=data["example_gen"].outputs["examples"],
        model=trainer.outputs["model"],
        baseline_model=model_resolver.outputs["model"],
        eval_config=run.task.blessing_eval_config(run.family, run.blessing_threshold, run.classes),
        module_path=run.family.evaluator_module,
    ).with_id("Evaluator")
    # Copies a blessed model to a new version folder, never overwriting one.
    pusher = VersionedPusher(
        model=trainer.outputs["model"],
        model_blessing=evaluator.outputs["blessing"],
        push_destination=pusher_pb2.PushDestination(
            filesystem=pusher_pb2.PushDestination.Filesystem(
                base_directory=deployment.serving_model_dir
            )
        ),
    ).with_id("Pusher")
    return [model_resolver, evaluator, pusher]


def record_components(
    run: ResolvedRun, data: dict, deployment: Deployment, data_dir, artifacts: dict
) -> list:
    """The registry (with a registry config) and the run report, which read `artifacts`."""
    components: list = []
    # Without a pipeline context (compiled jobs), the registry and the report are told.
    identity: Dict[str, Any] = (
        {"pipeline_name": run.name, "run_id": deployment.run_id} if deployment.run_id else {}
    )
    if deployment.registry_config:
        # Registers the pushed version with its metrics and lineage; blessed: the champion.
        registry = ModelRegistry(
            registry=deployment.registry_config,
            **identity,
            **{key: artifacts[key] for key in ModelRegistrySpec.INPUTS},
        )
        components.append(registry)
        artifacts = {**artifacts, "registered_model": registry.outputs["registered_model"]}
    card = run.task.model_card(run.family.name, run.preset, data_dir, run.classes)
    if "distribution_validator" in data:
        artifacts = {**artifacts, "drift": data["distribution_validator"].outputs["anomalies"]}
        card["drift_checks"] = run.task.drift_descriptions(run.drift_thresholds)
    # Writes the run's report page: model card, metrics, curves, attention, data, lineage.
    return [*components, RunReport(model_card=json.dumps(card), **identity, **artifacts)]


def create_inference_pipeline(
    run: ResolvedRun,
    *,
    pipeline_root: str,
    data_dir,
    metadata_connection_config: Optional[metadata_store_pb2.ConnectionConfig] = None,
    beam_pipeline_args: Sequence[str] = (),
) -> Pipeline:
    """Scores a folder of unlabeled inputs with the training pipeline's latest blessed model:
    UnlabeledExampleGen, a resolver, TFX's BulkInferrer (PredictionLogs) and PredictionsWriter
    (JSON lines); for texts, also StatisticsGen and DistributionValidator (SkewValidator),
    comparing the inputs' profile with the champion's training data.

    It has the training pipeline's name, so that the resolver sees that pipeline's models in
    ML Metadata; its nodes have ids of their own.
    """
    task = run.task
    # Reads the folder's raw inputs (texts, sentences, images) into tf.Examples.
    example_gen = UnlabeledExampleGen(data_dir, feature=task.raw_feature).with_id(
        "UnlabeledExampleGen"
    )
    # The latest blessed model of the training pipeline: the version it pushed last.
    champion = latest_blessed_model("champion_resolver")
    # Runs the model's serving_default (serialized tf.Examples of the raw feature) over them,
    # in the form RunInference can split into rows (trainer_module/serving/archive.py).
    bulk_inferrer = BulkInferrer(
        examples=example_gen.outputs["examples"],
        model=champion.outputs["model"],
        model_blessing=champion.outputs["model_blessing"],
        data_spec=bulk_inferrer_pb2.DataSpec(),
        model_spec=bulk_inferrer_pb2.ModelSpec(model_signature_name=[BULK_INFERENCE]),
    )
    # The answers as JSON lines, as `predict` writes them.
    writer = PredictionsWriter(
        inference_result=bulk_inferrer.outputs["inference_result"], feature=task.raw_feature
    )
    # Training/serving skew: the inputs' text profile against the champion's data, reported
    # (the run summary's "skew"), not a gate.
    skew = []
    config = task.skew_validator_config(run.drift_thresholds)
    if config is not None:
        statistics_gen = StatisticsGen(examples=example_gen.outputs["examples"]).with_id(
            "UnlabeledStatisticsGen"
        )
        baseline = baseline_statistics_resolver()
        skew = [
            statistics_gen,
            baseline,
            DistributionValidator(
                statistics=statistics_gen.outputs["statistics"],
                baseline_statistics=baseline.outputs["statistics"].as_optional(),
                config=config,
                include_split_pairs=[(UNLABELED_SPLIT, "train")],
            ).with_id("SkewValidator"),
        ]
    return Pipeline(
        pipeline_name=run.name,
        pipeline_root=pipeline_root,
        components=[example_gen, champion, bulk_inferrer, writer, *skew],
        enable_cache=run.enable_cache,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=list(beam_pipeline_args),
    )
