"""A text classifier's classes are read from the data when the pipeline is built: the
ExampleGen, the model's head, the n-gram path and the EvalConfig follow them; IMDB's binary
recipe and metrics stay exactly as they were."""

import pytest

from pipeline.options import PipelineOptions
from pipeline.tasks import get_task
from trainer_module import features


def tickets(folder, labels=("shipping", "billing", "login", "refund")):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [f"ticket {i} text,{labels[i % len(labels)]}" for i in range(len(labels) * 3)]
    (folder / "tickets.csv").write_text("text,label\n" + "\n".join(rows) + "\n", "utf-8")
    return str(folder)


def test_the_embedded_imdb_run_keeps_its_binary_recipe_and_metrics():
    run = PipelineOptions(task="imdb").resolve()
    assert run.classes == features.LABEL_NAMES
    assert run.overrides == {}  # the preset as it is: two classes, the n-gram path on
    assert run.model_config.num_classes == 2 and run.model_config.ngram_buckets > 0
    config = run.task.blessing_eval_config(run.family, None, run.classes)
    assert config == run.task.blessing_eval_config(run.family)  # the binary EvalConfig
    (spec,) = config.model_specs
    assert spec.prediction_key == "score"
    names = [m.class_name for m in config.metrics_specs[0].metrics]
    assert names[:3] == ["ExampleCount", "BinaryAccuracy", "AUC"]


@pytest.mark.parametrize("model", ["text_encoder", "bert"])
def test_four_classes_set_the_head_the_one_vs_rest_ngram_path_and_the_multiclass_metrics(
    tmp_path, model
):
    run = PipelineOptions(task="imdb", model=model, data=tickets(tmp_path / "t")).resolve()
    assert run.classes == ("billing", "login", "refund", "shipping")
    assert run.reading["classes"] == "billing,login,refund,shipping"  # what the ExampleGen gets
    assert run.overrides == {"num_classes": 4}
    preset = run.family.config(run.preset)
    assert run.model_config == preset.replace(num_classes=4)  # the n-gram path kept
    trainer = run.trainer_settings(tmp_path / "t").custom_config
    assert trainer["overrides"] == {"num_classes": 4}  # the Trainer's too
    transform = run.family.transform_config(run.model_config)
    assert transform["num_classes"] == 4  # Transform counts each class's n-grams
    assert "num_classes" not in run.family.transform_config(preset)  # binary: as it was
    config = run.task.blessing_eval_config(run.family, 0.5, run.classes)
    (spec,) = config.model_specs
    assert (spec.label_key, spec.prediction_key) == ("label", "probabilities")
    gated, per_class, calibration = config.metrics_specs
    assert [m.class_name for m in gated.metrics] == [
        "ExampleCount",
        "SparseCategoricalAccuracy",
        "MultiClassConfusionMatrixPlot",
    ]
    assert list(per_class.binarize.class_ids.values) == [0, 1, 2, 3]
    assert per_class.aggregate.macro_average
    assert [m.class_name for m in per_class.metrics] == ["Precision", "Recall", "F1Score"]
    assert [m.class_name for m in calibration.metrics] == ["CalibrationPlot"]
    assert list(calibration.binarize.class_ids.values) == [0, 1, 2, 3]
    card = run.task.model_card(run.family.name, run.preset, tmp_path / "t", run.classes)
    assert card["gating_metric"] == "sparse_categorical_accuracy"
    assert card["classes"] == ["billing", "login", "refund", "shipping"]
    assert card["description"].startswith("Text classification into 4 classes (billing,")


def test_the_classes_option_wins_and_unreadable_data_gets_the_tasks_classes(tmp_path):
    given = PipelineOptions(
        task="imdb", data="gs://bucket/tickets", data_options={"classes": "a,b,c"}
    ).resolve()
    assert given.classes == ("a", "b", "c") and given.model_config.num_classes == 3
    remote = PipelineOptions(task="imdb", data="gs://bucket/tickets").resolve()
    assert remote.classes == features.LABEL_NAMES


def test_set_turns_the_ngram_path_off_on_four_classes(tmp_path):
    run = PipelineOptions(
        task="imdb", data=tickets(tmp_path / "t"), overrides={"ngram_buckets": 0}
    ).resolve()
    assert run.overrides == {"num_classes": 4, "ngram_buckets": 0}
    assert "num_classes" not in run.family.transform_config(run.model_config)


def test_a_single_class_csv_is_refused_when_the_pipeline_is_built(tmp_path):
    with pytest.raises(ValueError, match=r"tickets\.csv: 1 distinct label\(s\) \['spam'\]"):
        PipelineOptions(task="imdb", data=tickets(tmp_path / "t", ("spam",))).resolve()


def test_tasks_whose_model_fixes_or_reads_its_outputs_read_no_classes():
    assert get_task("translation").read_classes is None
    assert get_task("cifar10").read_classes is None
