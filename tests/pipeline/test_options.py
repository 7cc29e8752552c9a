"""The one options object: the same settings from flags and from TFXT_* variables, declared
once (tasks' and families' options included)."""

import argparse
import dataclasses

import pytest

from pipeline.cli import build_parser
from pipeline.options import PipelineOptions, add_arguments

FLAGS = [
    "--task",
    "translation",
    "--data",
    "/corpus",
    "--preset",
    "tiny",
    "--set",
    "d_model=16",
    "--set",
    "norm_first=false",
    "--train-steps",
    "3",
    "--eval-steps",
    "2",
    "--blessing-threshold",
    "25",
    "--tune",
    "--tuner-trials",
    "2",
    "--source-lang",
    "fr",
    "--mixed-precision",
    "off",
    "--no-cache",
    "--registry",
    "none",
    "--output",
    "/out",
    "--beam-mode",
    "multi_processing",
]
ENVIRONMENT = {
    "TFXT_TASK": "translation",
    "TFXT_DATA": "/corpus",
    "TFXT_PRESET": "tiny",
    "TFXT_SET": "d_model=16 norm_first=false",
    "TFXT_TRAIN_STEPS": "3",
    "TFXT_EVAL_STEPS": "2",
    "TFXT_BLESSING_THRESHOLD": "25",
    "TFXT_TUNE": "1",
    "TFXT_TUNER_TRIALS": "2",
    "TFXT_SOURCE_LANG": "fr",
    "TFXT_MIXED_PRECISION": "off",
    "TFXT_NO_CACHE": "true",
    "TFXT_REGISTRY": "none",
    "TFXT_OUTPUT": "/out",
    "TFXT_BEAM_MODE": "multi_processing",
}


def parse(*argv) -> PipelineOptions:
    return PipelineOptions.from_args(build_parser().parse_args(["run", *argv]))


def test_flags_and_environment_variables_build_the_same_options():
    from_flags = parse(*FLAGS)
    assert from_flags == PipelineOptions.from_environment(ENVIRONMENT)
    assert from_flags == PipelineOptions(
        task="translation",
        data="/corpus",
        preset="tiny",
        overrides={"d_model": 16, "norm_first": False},
        data_options={"source_lang": "fr"},
        train_steps=3,
        eval_steps=2,
        blessing_threshold=25.0,
        tune=True,
        tuner_trials=2,
        mixed_precision="off",
        no_cache=True,
        registry="none",
        output="/out",
        beam_mode="multi_processing",
    )
    assert from_flags.check().name == "corpus-translator"  # named after --data /corpus


def test_a_run_on_other_data_is_named_after_it_and_the_embedded_corpus_keeps_the_tasks_name():
    from pipeline.tasks import get_task

    def name(**options) -> str:
        return PipelineOptions(task="imdb", **options).name

    assert name() == "imdb-text-encoder"
    assert name(data=get_task("imdb").default_data_dir + "/") == "imdb-text-encoder"
    assert name(data="/home/me/Shop Reviews/") == "shop-reviews-text-encoder"
    assert name(data="shop-reviews", model="bert") == "shop-reviews-bert"
    assert name(data="gs://bucket/reviews/span-{SPAN}/v-{VERSION}") == "reviews-text-encoder"
    assert name(data="exports/reviews.csv") == "reviews-text-encoder"
    assert name(data="/", pipeline_name="mine") == "mine"  # --pipeline-name wins
    assert name(data="/") == "data-text-encoder"
    long = name(data="x" * 80)
    assert long == "x" * 50 + "-text-encoder" and len(long) == 63


def test_the_text_and_images_aliases_are_the_imdb_and_cifar10_tasks_under_their_own_names():
    assert parse("--task", "text") == parse("--task", "imdb")
    assert parse("--task", "text", "--data", "/tickets").check().name == "tickets-text-encoder"
    images = parse("--task", "images", "--data", "/photos")
    assert images == PipelineOptions(task="cifar10", data="/photos")
    assert images.check().name == "photos-vit"
    assert PipelineOptions(task="images").name == "cifar10-vit"  # the embedded sample's name
    with pytest.raises(ValueError, match=r"unknown task 'texts'.*text for imdb"):
        PipelineOptions(task="texts")


def test_every_option_has_a_flag_and_a_variable():
    parser = argparse.ArgumentParser()
    add_arguments(parser, local=True)
    flags = {a.dest for a in parser._actions}
    for field in dataclasses.fields(PipelineOptions):
        if field.name not in ("data_options",):
            assert field.name in flags, field.name
    # The tasks' data options and the families' options are generated from their declarations.
    assert {"source_lang", "target_lang", "image_size", "bert_preset"} <= flags
    assert parse("--task", "cifar10", "--image-size", "16").overrides == {"image_size": 16}
    assert PipelineOptions.from_environment(
        {"TFXT_TASK": "cifar10", "TFXT_IMAGE_SIZE": "16"}
    ).overrides == {"image_size": 16}


def test_unset_and_empty_variables_keep_the_defaults():
    assert PipelineOptions.from_environment({}) == PipelineOptions()
    assert PipelineOptions.from_environment({"TFXT_MODEL": "", "TFXT_TUNE": "0"}) == (
        PipelineOptions()
    )


def test_a_bad_variable_names_itself():
    with pytest.raises(ValueError, match="TFXT_TRAIN_STEPS='-3': must be a positive integer"):
        PipelineOptions.from_environment({"TFXT_TRAIN_STEPS": "-3"})


def test_a_family_option_sets_its_config_field_and_needs_its_family(tmp_path):
    options = parse("--task", "imdb", "--model", "bert", "--bert-preset", "bert_base_en")
    assert options.overrides == {"backbone_preset": "bert_base_en"}
    assert options.model_config().backbone_preset == "bert_base_en"
    local = parse("--task", "imdb", "--model", "bert", "--bert-preset", str(tmp_path))
    assert local.local_paths().overrides["backbone_preset"] == str(tmp_path)
    with pytest.raises(ValueError, match="--bert-preset goes with --model bert"):
        parse("--task", "imdb", "--bert-preset", "bert_base_en")
    with pytest.raises(ValueError, match="--bert-preset goes with --model bert"):
        PipelineOptions.from_environment({"TFXT_BERT_PRESET": "bert_base_en"})


def test_a_cloud_pipeline_refuses_a_local_bert_preset_or_schema(tmp_path):
    local = parse("--task", "imdb", "--model", "bert", "--bert-preset", "./presets/bert")
    with pytest.raises(ValueError, match=r"--bert-preset ./presets/bert is a local path.*gs://"):
        local.check_cloud_paths()
    for name in ("gs://bucket/presets/bert", "bert_tiny_en_uncased", "kaggle://keras/bert/x"):
        parse("--task", "imdb", "--model", "bert", "--bert-preset", name).check_cloud_paths()
    with pytest.raises(ValueError, match="--schema /schemas/s.pbtxt is a local path"):
        parse("--schema", "/schemas/s.pbtxt").check_cloud_paths()


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(task="mnist"), "unknown task 'mnist'"),
        (dict(model="vit"), "task 'imdb' has no model family 'vit'"),
        (dict(model="transformer"), "unknown model family 'transformer'"),
        (dict(preset="huge"), "unknown text_encoder preset 'huge'"),
        (dict(overrides={"depth": 2}), "unknown TextEncoderConfig fields"),
        (
            dict(data_options={"source_lang": "de"}),
            r"task 'imdb' takes no data option\(s\) \['source_lang'\]",
        ),
        (dict(model="bert", tune=True), "'bert' model family has no search space"),
        (dict(beam_mode="spark"), "beam_mode must be one of"),
        (dict(registry="sagemaker"), "registry must be one of"),
        (dict(mixed_precision="fp8"), "mixed_precision must be one of"),
        (dict(epochs=2.0, train_steps=10), r"give epochs \(2\) or train_steps \(10\), not both"),
    ],
)
def test_options_that_cannot_work_are_refused_naming_the_setting(options, message):
    with pytest.raises(ValueError, match=message):
        PipelineOptions(**options).check()


@pytest.mark.parametrize(
    "task, bound, message",
    [
        ("imdb", 85, r"85 is outside binary_accuracy's range \(accuracy, a fraction from 0 to 1\)"),
        ("cifar10", -0.1, "outside sparse_categorical_accuracy's range"),
        (
            "translation",
            101,
            r"outside bleu's range \(corpus BLEU \(cased, sacreBLEU 13a\), in "
            r"points from 0 to 100\)",
        ),
    ],
)
def test_the_blessing_threshold_is_checked_in_the_gating_metrics_unit(task, bound, message):
    with pytest.raises(ValueError, match=message):
        PipelineOptions(task=task, blessing_threshold=bound).check()
    PipelineOptions(task="translation", blessing_threshold=35).check()


def test_the_threshold_help_names_each_tasks_metric_and_unit(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "imdb: binary_accuracy (accuracy, a fraction from 0 to 1, default 0.6)" in help_text
    assert (
        "translation: bleu (corpus BLEU (cased, sacreBLEU 13a), in points from 0 to 100, "
        "default 20)"
    ) in help_text


def test_the_preset_is_the_tasks_recipe_on_your_data_and_the_familys_default_on_the_corpus():
    from pipeline.tasks import get_task

    cifar10, imdb = get_task("cifar10"), get_task("imdb")
    assert cifar10.recipe_preset == "hybrid_airbench" and imdb.recipe_preset is None
    assert get_task("translation").recipe_preset == "base"

    def preset(**options):
        resolved = PipelineOptions(**options).resolve()
        assert resolved.model_config == resolved.family.config(resolved.preset)
        return resolved.preset

    assert preset(task="cifar10", data="/cifar-10-batches-bin") == "hybrid_airbench"
    assert preset(task="cifar10") == preset(task="cifar10", data=cifar10.default_data_dir)
    assert preset(task="cifar10") == "small"  # the family's default, sized for the shapes
    assert preset(task="cifar10", data="/cifar", preset="base") == "base"
    assert preset(task="imdb", data="/aclImdb") == "small"  # no recipe preset: the family's


def test_each_family_trains_its_own_recipes_epochs_on_your_data(monkeypatch):
    from pipeline import tasks
    from pipeline.tasks import get_task
    from trainer_module import families
    from trainer_module.bert.config import RECIPE_EPOCHS

    imdb = get_task("imdb")
    # BERT's fine-tuning passes are its family's, on any task; the text encoder's the task's.
    assert imdb.recipe_epochs("bert") == families.get_family("bert").recipe_epochs == RECIPE_EPOCHS
    assert imdb.recipe_epochs() == imdb.recipe_epochs("text_encoder") == imdb.default_epochs
    # Epochs that differ by family reach each family's run (and only on your data).
    monkeypatch.setitem(tasks.TASKS, "imdb", dataclasses.replace(imdb, default_epochs=2.0))
    bert = dataclasses.replace(families.get_family("bert"), recipe_epochs=3.0)
    monkeypatch.setitem(families.FAMILIES, "bert", bert)

    def epochs(model, data="/reviews"):
        return PipelineOptions(task="imdb", model=model).training_epochs(data)

    assert epochs("bert") == 3.0 and epochs("text_encoder") == 2.0 and epochs(None) == 2.0
    assert epochs("bert", data=imdb.default_data_dir) is None  # the embedded corpus: steps
    assert PipelineOptions(task="imdb", model="bert", epochs=1.0).training_epochs("/r") == 1.0
