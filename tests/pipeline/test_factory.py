import json

import pytest

from pipeline.factory import Deployment, create_pipeline
from pipeline.options import PipelineOptions
from pipeline.runner import build_local_pipeline
from pipeline.tasks import TASKS, get_task
from tests.components.example_gen_util import resolve_layout
from trainer_module.training.inputs import TRAINER_KEYS

EXPECTED_ORDER = [
    "ReviewsExampleGen",
    "StatisticsGen",
    "SchemaGen",
    "ExampleValidator",
    "AnomaliesGate",
    "Transform",
    "Trainer",
    "latest_blessed_model_resolver",
    "Evaluator",
    "Pusher",
    "RunReport",
]


def build(data_dir, tmp_path, registry_config=None, **options):
    return create_pipeline(
        PipelineOptions(**options).resolve(),
        Deployment(
            pipeline_root=str(tmp_path / "root"),
            data_dir=str(data_dir),
            serving_model_dir=str(tmp_path / "serving"),
            registry_config=registry_config,
        ),
    )


def gate_bound(evaluator) -> float:
    """The lower bound of the EvalConfig's one gate, parsed from the Evaluator's config."""
    import tensorflow_model_analysis as tfma
    from google.protobuf import json_format

    config = json_format.Parse(evaluator.exec_properties["eval_config"], tfma.EvalConfig())
    (gated,) = [m for spec in config.metrics_specs for m in spec.metrics if m.per_slice_thresholds]
    (threshold,) = gated.per_slice_thresholds
    assert [s == tfma.SlicingSpec() for s in threshold.slicing_specs] == [True]  # overall only
    return threshold.threshold.value_threshold.lower_bound.value


def test_components_and_wiring(aclimdb_dir, tmp_path):
    pipeline = build(
        aclimdb_dir,
        tmp_path,
        preset="tiny",
        train_steps=7,
        overrides={"d_model": 32},
        blessing_threshold=0.9,
    )
    nodes = {c.id: c for c in pipeline.components}
    order = [c.id for c in pipeline.components]  # topologically sorted
    drift = ["baseline_statistics_resolver", "DistributionValidator"]
    assert sorted(order) == sorted(EXPECTED_ORDER + drift + ["base_model_resolver"])
    for upstream, downstream in zip(EXPECTED_ORDER[:7], EXPECTED_ORDER[1:8]):
        if downstream != "latest_blessed_model_resolver":
            assert order.index(upstream) < order.index(downstream), (upstream, downstream)
    assert order.index("latest_blessed_model_resolver") < order.index("Evaluator")
    assert order.index("Evaluator") < order.index("Pusher")
    # Transform waits on the anomalies gate, which reads both validators' anomalies.
    assert nodes["AnomaliesGate"] in nodes["Transform"].upstream_nodes
    assert {nodes["ExampleValidator"], nodes["DistributionValidator"]} <= (
        nodes["AnomaliesGate"].upstream_nodes
    )
    # The Trainer warm-starts from the base model resolved after the ExampleGen ran.
    assert nodes["Trainer"].inputs["base_model"].producer_component_id == "base_model_resolver"
    assert nodes["ReviewsExampleGen"] in nodes["base_model_resolver"].upstream_nodes
    # The drift check compares this run's statistics with the resolved baseline's: the label
    # balance, the reviews' lengths and their words.
    validator = nodes["DistributionValidator"]
    assert validator.inputs["statistics"].producer_component_id == "StatisticsGen"
    assert validator.inputs["baseline_statistics"].producer_component_id == drift[0]
    config = validator.exec_properties["distribution_validator_config"]
    checks = {
        check.path.step[0]: check.distribution_comparator
        for check in config.default_slice_config.feature
    }
    assert sorted(checks) == ["label", "text_tokens", "text_words"]
    assert checks["label"].jensen_shannon_divergence.threshold == 0.1
    assert checks["text_words"].jensen_shannon_divergence.threshold == 0.25
    assert checks["text_tokens"].infinity_norm.threshold == 0.05
    assert nodes["Transform"].exec_properties["custom_config"] == (
        '{"holdout_percent": 10, "max_length": 32, "max_ngrams": 32, "ngram_buckets": 256, '
        '"ngram_order": 3, "truncation_head": 8, "vocab_size": 500}'
    )
    trainer = nodes["Trainer"]
    assert trainer.exec_properties["run_fn"] == "trainer_module.text_encoder.training.run_fn"
    assert json.loads(trainer.exec_properties["train_args"]) == {"num_steps": 7}
    assert json.loads(trainer.exec_properties["custom_config"]) == {
        "task": "imdb",
        "model": "text_encoder",
        "preset": "tiny",
        "overrides": {"d_model": 32},
        "seed": 0,
        "mixed_precision": "auto",
        "epochs": None,
        "time_budget_minutes": None,
    }
    assert set(json.loads(trainer.exec_properties["custom_config"])) == set(TRAINER_KEYS)
    evaluator = nodes["Evaluator"]
    assert gate_bound(evaluator) == 0.9
    assert nodes["Pusher"].inputs["model_blessing"] is evaluator.outputs["blessing"]
    # The report comes last and reads the run's artifacts, the baseline included.
    report = nodes["RunReport"]
    assert order[-1] == "RunReport"
    assert report.inputs["pushed_model"] is nodes["Pusher"].outputs["pushed_model"]
    assert report.inputs["model_run"] is trainer.outputs["model_run"]
    assert (
        report.inputs["baseline_model"] is nodes["latest_blessed_model_resolver"].outputs["model"]
    )
    card = json.loads(report.exec_properties["model_card"])
    assert (card["task"], card["model"], card["preset"]) == ("imdb", "text_encoder", "tiny")
    assert card["data"] == str(aclimdb_dir) and str(aclimdb_dir) in card["intended_use"]
    assert pipeline.enable_cache


def test_a_window_of_spans_is_read_by_a_second_example_gen_for_training_only(tmp_path):
    pipeline = build(tmp_path / "reviews" / "span-{SPAN}", tmp_path, spans=3)
    nodes = {c.id: c for c in pipeline.components}
    window = nodes["ReviewsExampleGenWindow"]
    assert nodes["Transform"].inputs["examples"] is window.outputs["examples"]
    assert window in nodes["base_model_resolver"].upstream_nodes
    assert nodes["RunReport"].inputs["training_examples"] is window.outputs["examples"]
    newest = nodes["ReviewsExampleGen"].outputs["examples"]
    for validated in ("StatisticsGen", "Evaluator"):
        assert nodes[validated].inputs["examples"] is newest

    def reading(node):  # ExampleGen's custom_config: an Any holding a Struct
        return json.loads(node.exec_properties["custom_config"])["custom_config"]["value"]

    assert reading(window)["spans"] == 3
    assert "spans" not in reading(nodes["ReviewsExampleGen"])
    with pytest.raises(ValueError, match=r"spans=3 needs a data folder pattern with a \{SPAN\}"):
        build(tmp_path / "reviews", tmp_path, spans=3)


def test_training_length_is_epochs_on_your_data_and_steps_on_the_embedded_corpus(
    aclimdb_dir, tmp_path
):
    def trainer(data_dir, **options):
        nodes = {c.id: c for c in build(data_dir, tmp_path, **options).components}
        exec_properties = nodes["Trainer"].exec_properties
        return (
            json.loads(exec_properties["train_args"]),
            json.loads(exec_properties["custom_config"])["epochs"],
        )

    # No steps in train_args: the Trainer counts the examples and trains the epochs.
    assert trainer(aclimdb_dir) == ({}, get_task("imdb").default_epochs) == ({}, 2.0)
    assert trainer(aclimdb_dir, epochs=0.5) == ({}, 0.5)
    assert trainer(aclimdb_dir, train_steps=9) == ({"num_steps": 9}, None)
    embedded = get_task("imdb").default_data_dir
    assert trainer(embedded) == ({"num_steps": get_task("imdb").default_train_steps}, None)
    assert trainer(embedded, epochs=3.0) == ({}, 3.0)


def test_a_registry_config_adds_the_registry_after_the_pusher(aclimdb_dir, tmp_path):
    from components.model_registry.backends import mlflow_config

    config = mlflow_config(str(tmp_path / "mlflow"), tracking_uri=None)
    pipeline = build(aclimdb_dir, tmp_path, registry_config=config)
    nodes = {c.id: c for c in pipeline.components}
    order = [c.id for c in pipeline.components]
    assert order.index("Pusher") < order.index("ModelRegistry") < order.index("RunReport")
    registry = nodes["ModelRegistry"]
    assert registry.exec_properties["registry"] == config
    assert registry.inputs["pushed_model"] is nodes["Pusher"].outputs["pushed_model"]
    assert nodes["RunReport"].inputs["registered_model"] is registry.outputs["registered_model"]
    assert "ModelRegistry" not in [c.id for c in build(aclimdb_dir, tmp_path).components]


def test_unknown_model_family_is_refused(aclimdb_dir, tmp_path):
    with pytest.raises(ValueError, match="no model family 'vit'"):
        build(aclimdb_dir, tmp_path, model="vit")


def test_local_paths_live_under_the_output_directory(aclimdb_dir, tmp_path):
    pipeline, paths = build_local_pipeline(
        PipelineOptions(
            task="imdb", data=str(aclimdb_dir), output=str(tmp_path), beam_mode="multi_processing"
        )
    )
    assert pipeline.pipeline_info.pipeline_name == "data-text-encoder"  # after --data's name
    for key in ("pipeline_root", "metadata_path", "serving_model_dir", "log_dir"):
        assert paths[key].startswith(str(tmp_path))
    assert "--direct_running_mode=multi_processing" in pipeline.beam_pipeline_args
    # What only remote runners need is skipped: no staged sdist, no Prism download.
    assert any(a.startswith("--sdk_container_image=") for a in pipeline.beam_pipeline_args)
    assert "--runner=pipeline.local_beam.DirectRunner" in pipeline.beam_pipeline_args


def test_every_task_names_a_default_model_of_its_kind_and_its_gate():
    for task in TASKS.values():
        assert task.default_model == next(iter(task.model_families))
        assert all(f.kind == task.model_kind for f in task.model_families.values())
        (spec,) = task.blessing_eval_config(task.model_family(None)).model_specs
        assert (spec.signature_name, spec.label_key, spec.prediction_key) == {
            "imdb": ("serving_default", "label", "score"),
            "translation": ("serving_default", "reference", "translation"),
            "cifar10": ("serving_default", "label", "probabilities"),
        }[task.name]
        # The text tasks' models take raw features through the exported transform.
        assert list(spec.preprocessing_function_names) == (
            [] if task.name == "cifar10" else ["transform_features"]
        )
        assert task.gate.low <= task.gate.default <= task.gate.high
    assert list(get_task("imdb").model_families) == ["text_encoder", "bert"]


def test_bert_family_brings_its_preprocessing_and_custom_ops(aclimdb_dir, tmp_path):
    pipeline = build(
        aclimdb_dir,
        tmp_path,
        model="bert",
        preset="tiny",
        overrides={"backbone_preset": "/presets/bert", "sequence_length": 48},
    )
    nodes = {c.id: c for c in pipeline.components}
    transform = nodes["Transform"].exec_properties
    assert transform["preprocessing_fn"] == "trainer_module.bert.preprocessing.preprocessing_fn"
    assert json.loads(transform["custom_config"]) == {
        "backbone_preset": "/presets/bert",
        "sequence_length": 48,
        "truncation_head": 12,  # the tiny preset's 8 of 30 pieces, kept as a share of 46
        "ngram_buckets": 256,
        "ngram_order": 3,
        "max_ngrams": 32,
        "holdout_percent": 10,
    }
    assert json.loads(nodes["Trainer"].exec_properties["custom_config"])["model"] == "bert"
    assert nodes["Evaluator"].exec_properties["module_path"] == "trainer_module.serving.custom_ops"


def test_unknown_bert_preset_field_is_refused_before_running(aclimdb_dir, tmp_path):
    with pytest.raises(ValueError, match="unknown BertConfig fields"):
        build(aclimdb_dir, tmp_path, model="bert", overrides={"d_model": 8})


def test_a_curated_schema_replaces_inference(aclimdb_dir, tmp_path):
    pipeline = build(aclimdb_dir, tmp_path, schema="/schemas/reviews.pbtxt")
    nodes = {c.id: c for c in pipeline.components}
    assert "SchemaGen" not in nodes
    assert nodes["ImportSchemaGen"].exec_properties["schema_file"] == "/schemas/reviews.pbtxt"
    assert nodes["Transform"].inputs["schema"] is nodes["ImportSchemaGen"].outputs["schema"]
    assert nodes["ExampleValidator"].inputs["schema"] is nodes["ImportSchemaGen"].outputs["schema"]


def test_a_missing_schema_file_is_refused(aclimdb_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="schema file not found"):
        build_local_pipeline(
            PipelineOptions(
                data=str(aclimdb_dir), output=str(tmp_path), schema=str(tmp_path / "missing.pbtxt")
            )
        )


def test_translation_task_wires_its_example_gen_family_and_tfma_metrics(tmp_path):
    data = tmp_path / "corpus"
    data.mkdir()
    for name in ("train.fr", "train.en", "valid.fr", "valid.en"):
        (data / name).write_text("un deux\n", "utf-8")
    pipeline = build(
        data,
        tmp_path,
        task="translation",
        data_options={"source_lang": "fr"},
        preset="tiny",
        blessing_threshold=30.0,
    )
    nodes = {c.id: c for c in pipeline.components}
    example_gen = nodes["ParallelCorpusExampleGen"].exec_properties
    assert '"source_lang": "fr"' in example_gen["custom_config"]
    assert '"target_lang": "en"' in example_gen["custom_config"]  # the task's default
    resolved = resolve_layout(nodes["ParallelCorpusExampleGen"])  # found when it runs
    assert '"name": "eval"' in resolved["input_config"]  # valid.* kept as the eval split
    transform = nodes["Transform"].exec_properties
    assert transform["preprocessing_fn"] == (
        "trainer_module.translator.preprocessing.preprocessing_fn"
    )
    assert json.loads(transform["custom_config"])["max_target_length"] == 16
    assert nodes["Trainer"].exec_properties["run_fn"] == "trainer_module.translator.training.run_fn"
    evaluator = nodes["Evaluator"].exec_properties
    assert evaluator["module_path"] == "trainer_module.translator.metrics"
    for text in (
        '"DecodedBleu"',
        '"MaskedTokenAccuracy"',
        '"label_key": "reference"',
        '"prediction_key": "translation"',
    ):
        assert text in evaluator["eval_config"]
    assert gate_bound(nodes["Evaluator"]) == 30.0


def test_data_options_a_task_does_not_take_are_refused(aclimdb_dir, tmp_path):
    with pytest.raises(
        ValueError, match=r"task 'imdb' takes no data option\(s\) \['source_lang'\]"
    ):
        build(aclimdb_dir, tmp_path, data_options={"source_lang": "de"})


def test_cifar10_task_wires_image_example_gen_vit_and_multiclass_metrics(tmp_path):
    from tests.image_util import write_binary_release

    write_binary_release(tmp_path / "cifar", batches=1)
    pipeline = build(
        tmp_path / "cifar", tmp_path, task="cifar10", preset="tiny", blessing_threshold=0.7
    )
    nodes = {c.id: c for c in pipeline.components}
    # Built with the data folder and the options; the layout is found when it runs.
    example_gen = nodes["ImageExampleGen"].exec_properties
    options = json.loads(example_gen["custom_config"])["custom_config"]["value"]
    assert options == {"split_seed": 42, "eval_percent": 10}
    resolved = resolve_layout(nodes["ImageExampleGen"])
    options = json.loads(resolved["custom_config"])["custom_config"]["value"]
    assert options["format"] == "cifar10_binary"
    assert options["class_names"] == ["airplane", "automobile", "bird"]
    assert '"hash_buckets": 10' in resolved["output_config"]  # the seeded 90/10 split
    assert nodes["Transform"].exec_properties["custom_config"] == '{"image_size": 16}'
    assert nodes["Trainer"].exec_properties["run_fn"] == "trainer_module.vit.training.run_fn"
    eval_config = nodes["Evaluator"].exec_properties["eval_config"]
    for text in (
        '"SparseCategoricalAccuracy"',
        '"SparseTopKCategoricalAccuracy"',
        '"MultiClassConfusionMatrixPlot"',
        '"label_name"',
        '"prediction_key": "probabilities"',
    ):
        assert text in eval_config
    assert gate_bound(nodes["Evaluator"]) == 0.7


def test_drift_thresholds_are_set_per_feature_and_unknown_features_are_refused(
    aclimdb_dir, tmp_path
):
    pipeline = build(
        aclimdb_dir, tmp_path, drift_thresholds=(("label", 0.25), ("text_tokens", 0.2))
    )
    (validator,) = [c for c in pipeline.components if c.id == "DistributionValidator"]
    config = validator.exec_properties["distribution_validator_config"]
    checks = {
        c.path.step[0]: c.distribution_comparator for c in config.default_slice_config.feature
    }
    assert checks["label"].jensen_shannon_divergence.threshold == 0.25
    assert checks["text_tokens"].infinity_norm.threshold == 0.2
    assert checks["text_words"].jensen_shannon_divergence.threshold == 0.25  # the default
    with pytest.raises(
        ValueError,
        match="task 'imdb' checks no feature 'text' for drift; "
        r"it checks \['label', 'text_tokens', 'text_words'\]",
    ):
        build(aclimdb_dir, tmp_path, drift_thresholds=(("text", 0.1),))
    # Translation checks its source sentences' profile.
    translation = build(aclimdb_dir, tmp_path, task="translation")
    (validator,) = [c for c in translation.components if c.id == "DistributionValidator"]
    config = validator.exec_properties["distribution_validator_config"]
    assert sorted(c.path.step[0] for c in config.default_slice_config.feature) == [
        "source_tokens",
        "source_words",
    ]


def test_the_inference_pipeline_scores_with_the_champion_and_checks_text_skew(tmp_path):
    from pipeline.factory import create_inference_pipeline

    def nodes(task):
        pipeline = create_inference_pipeline(
            PipelineOptions(task=task).resolve(),
            pipeline_root=str(tmp_path / "root"),
            data_dir=str(tmp_path / "unlabeled"),
        )
        return pipeline.pipeline_info.pipeline_name, {c.id: c for c in pipeline.components}

    name, imdb = nodes("imdb")
    assert name == "imdb-text-encoder"  # the training pipeline's: its models are in reach
    inferrer = imdb["BulkInferrer"]
    assert inferrer.inputs["model"].producer_component_id == "champion_resolver"
    assert json.loads(inferrer.exec_properties["model_spec"]) == {
        "model_signature_name": ["bulk_inference"]
    }
    assert imdb["PredictionsWriter"].exec_properties["feature"] == "text"
    skew = imdb["SkewValidator"]
    assert skew.exec_properties["include_split_pairs"] == '[["unlabeled", "train"]]'
    config = skew.exec_properties["distribution_validator_config"]
    assert sorted(c.path.step[0] for c in config.default_slice_config.feature) == [
        "text_tokens",
        "text_words",
    ]  # not the label, which unlabeled data has not
    name, cifar = nodes("cifar10")
    assert name == "cifar10-vit"
    assert set(cifar) == {
        "UnlabeledExampleGen",
        "champion_resolver",
        "BulkInferrer",
        "PredictionsWriter",
    }


def test_two_pipeline_names_share_no_folder_metadata_model_or_serving_folder(aclimdb_dir, tmp_path):
    """Two data sets of one task under --pipeline-name: nothing the warm start, the drift
    baseline or the champion is looked up in is shared, though the output folder is."""
    import json as json_module

    from pipeline.runner import build_local_pipeline

    built = {}
    for name in ("reviews-shop", "reviews-films"):
        options = PipelineOptions(
            task="imdb", data=str(aclimdb_dir), output=str(tmp_path / "out"), pipeline_name=name
        )
        pipeline, paths = build_local_pipeline(options)
        assert pipeline.pipeline_info.pipeline_name == name
        registry = json_module.loads(
            {c.id: c for c in pipeline.components}["ModelRegistry"].exec_properties["registry"]
        )
        built[name] = (paths, pipeline.metadata_connection_config.sqlite.filename_uri, registry)
    (a_paths, a_metadata, a_registry), (b_paths, b_metadata, b_registry) = built.values()
    for key in ("pipeline_root", "metadata_path", "serving_model_dir"):
        assert a_paths[key] != b_paths[key] and a_paths[key].endswith(
            "/reviews-shop" if key != "metadata_path" else "/reviews-shop/metadata.sqlite"
        )
    assert a_metadata != b_metadata  # ML Metadata: each pipeline's own resolvers and cache
    # One MLflow registry for the output, a registered model per pipeline name (the
    # ModelRegistry names the model after the pipeline it runs in).
    assert a_registry == b_registry
    with pytest.raises(ValueError, match="pipeline name 'Reviews_A': use lower-case letters"):
        PipelineOptions(task="imdb", pipeline_name="Reviews_A").check()
    assert PipelineOptions(task="imdb").name == "imdb-text-encoder"


def test_a_run_that_pretrains_reads_the_unlabelled_texts_for_pretraining_alone(
    aclimdb_dir, tmp_path
):
    from tfx.proto import trainer_pb2, transform_pb2
    from tfx.utils import proto_utils

    def reading(node):  # ExampleGen's custom_config: an Any holding a Struct
        return json.loads(node.exec_properties["custom_config"])["custom_config"]["value"]

    def wiring(pipeline):
        nodes = {c.id: c for c in pipeline.components}
        props = {name: node.exec_properties for name, node in nodes.items()}
        train_args = proto_utils.json_to_proto(
            props["Trainer"]["train_args"], trainer_pb2.TrainArgs()
        )
        transform = props["Transform"]["splits_config"]
        return {
            "reads": reading(nodes["ReviewsExampleGen"]).get("unlabeled", False),
            "schema": json.loads(props["SchemaGen"]["exclude_splits"] or "[]"),
            "validator": json.loads(props["ExampleValidator"]["exclude_splits"] or "[]"),
            "drift": json.loads(props["DistributionValidator"]["include_split_pairs"] or "null"),
            "transform": proto_utils.json_to_proto(transform, transform_pb2.SplitsConfig())
            if transform
            else None,
            "trainer": list(train_args.splits),
        }

    plain = wiring(build(aclimdb_dir, tmp_path / "a", preset="tiny"))
    assert plain == {
        "reads": False,
        "schema": [],
        "validator": [],
        "drift": None,
        "transform": None,
        "trainer": [],
    }
    pretrains = wiring(
        build(aclimdb_dir, tmp_path / "b", preset="tiny", overrides={"pretrain_epochs": 1.0})
    )
    assert pretrains["reads"] is True
    assert pretrains["schema"] == pretrains["validator"] == ["unlabeled"]
    assert pretrains["drift"] == [["train", "train"], ["eval", "eval"]]
    assert list(pretrains["transform"].analyze) == ["train"]
    assert list(pretrains["transform"].transform) == ["train", "eval", "unlabeled"]
    assert pretrains["trainer"] == ["train", "unlabeled"]
