import json
import os

import pytest

from pipeline import cli
from pipeline.predict import resolve_model_dir


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--task", "imdb", "--train-steps", "0"], "must be a positive integer, not 0"),
        (["run", "--task", "imdb", "--set", "d_model"], "expected KEY=VALUE, got 'd_model'"),
        (["run", "--image-size", "big"], "invalid literal for int"),
        (["predict"], "one of the arguments --saved-model --model is required"),
    ],
)
def test_bad_arguments_exit_with_usage_naming_the_problem(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_run_reports_an_unknown_task_with_the_known_ones_and_their_aliases(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["run", "--task", "nope", "--output", str(tmp_path)])
    assert stopped.value.code == 2  # argparse's usage error, before anything runs
    assert (
        "argument --task: unknown task 'nope'; known tasks: cifar10, imdb, translation "
        "(or images for cifar10, text for imdb)" in capsys.readouterr().err
    )


def test_bert_preset_needs_the_bert_model(tmp_path, capsys):
    code = cli.main(
        ["run", "--task", "imdb", "--bert-preset", str(tmp_path), "--output", str(tmp_path / "out")]
    )
    assert code == 2
    assert "--bert-preset goes with --model bert" in capsys.readouterr().err


def test_run_reports_a_missing_data_directory_as_json(tmp_path, capsys):
    code = cli.main(
        [
            "run",
            "--task",
            "imdb",
            "--data",
            str(tmp_path / "missing"),
            "--output",
            str(tmp_path / "out"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert json.loads(out.strip().splitlines()[-1])["status"] == "failed"
    assert "review data directory not found" in err


def test_run_refuses_a_threshold_in_the_wrong_unit(tmp_path, capsys):
    code = cli.main(
        ["run", "--task", "imdb", "--blessing-threshold", "90", "--output", str(tmp_path)]
    )
    assert code == 2
    assert "outside binary_accuracy's range (accuracy, a fraction from 0 to 1)" in (
        capsys.readouterr().err
    )


def test_report_without_any_run_says_so(tmp_path, capsys):
    code = cli.main(["report", "--output", str(tmp_path)])
    assert code == 2
    assert f"no run report under {tmp_path}" in capsys.readouterr().err


def test_report_regeneration_needs_a_known_pipeline(tmp_path, capsys):
    code = cli.main(
        ["report", "--output", str(tmp_path), "--pipeline", "imdb-text-encoder", "--regenerate"]
    )
    assert code == 2
    assert "no pipeline 'imdb-text-encoder'" in capsys.readouterr().err


@pytest.mark.parametrize("position", ["before", "after"])
def test_registry_takes_output_before_or_after_the_action(
    tmp_path, mlflow_imported, capfd, position
):
    from components.model_registry.backends import from_config, mlflow_config

    from_config(mlflow_config(str(tmp_path / "mlflow")))  # an empty registry, as a run makes
    argv = (
        ["registry", "--output", str(tmp_path), "list"]
        if position == "before"
        else ["registry", "list", "--output", str(tmp_path)]
    )
    assert cli.main(argv) == 0
    assert capfd.readouterr().out == ""  # no version


@pytest.mark.parametrize(
    "argv",
    [
        ["registry", "list"],
        ["registry", "show", "imdb-text-encoder"],
        ["registry", "promote", "imdb-text-encoder", "1"],
        ["serve"],
    ],
)
def test_commands_reading_a_registry_that_is_not_there_say_where_they_looked_and_create_nothing(
    tmp_path, monkeypatch, mlflow_imported, capfd, argv
):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    typo = tmp_path / "outptus"
    assert cli.main([*argv, "--output", str(typo)]) == 2
    err = capfd.readouterr().err
    assert f"error: no model registry in {typo / 'mlflow'}" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_serve_on_a_folder_that_is_not_there_says_so(tmp_path, capfd):
    assert cli.main(["serve", str(tmp_path / "serving_modle"), "--output", str(tmp_path)]) == 2
    err = capfd.readouterr().err
    assert f"error: {tmp_path / 'serving_modle'}: no such model folder" in err
    assert "Traceback" not in err


def test_an_unreachable_tracking_server_is_an_error_line_not_a_traceback(
    monkeypatch, mlflow_imported, capfd
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # nothing listens
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    monkeypatch.setenv("TFXT_REGISTRY_RETRY_SECONDS", "1")  # the retries' budget, for the test
    assert cli.main(["registry", "list"]) == 2
    err = capfd.readouterr().err
    assert "error: the MLflow tracking server http://127.0.0.1:9 did not answer" in err
    assert "Traceback" not in err


def test_resolve_model_dir_picks_the_newest_complete_version(tmp_path):
    for version in ("9", "10", "11"):
        os.makedirs(tmp_path / version)
    for version in ("9", "10"):
        (tmp_path / version / "saved_model.pb").write_text("")
    (tmp_path / ".staging-abc").mkdir()
    assert resolve_model_dir(str(tmp_path)) == str(tmp_path / "10")  # 11 is incomplete
    assert resolve_model_dir(str(tmp_path / "9")) == str(tmp_path / "9")
    with pytest.raises(FileNotFoundError):
        resolve_model_dir(str(tmp_path / "missing"))


def test_version_and_a_bare_command_print_and_exit_0(capsys):
    from pipeline import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("tfx-transformers 0.")
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tfx-transformers") and "runs" in out and "predict" in out


def test_submit_takes_target_as_compile_does_and_report_pipeline_name():
    from pipeline.cli import build_parser

    parser = build_parser(pipeline_options=False)
    for flag in ("--target", "--engine"):
        assert parser.parse_args(["submit", "job.json", flag, "kubeflow"]).engine == "kubeflow"
    for flag in ("--pipeline-name", "--pipeline"):
        assert parser.parse_args(["report", flag, "imdb-bert"]).pipeline == "imdb-bert"


@pytest.mark.parametrize(
    "uri, parsed",
    [
        ("models:/imdb-text-encoder@champion", ("imdb-text-encoder", "champion", None)),
        ("models:/shop/12", ("shop", None, "12")),
    ],
)
def test_a_registered_models_uri_names_its_version_or_alias(uri, parsed):
    from pipeline.serve import parse_model_uri

    assert parse_model_uri(uri) == parsed
    with pytest.raises(ValueError, match="models:/NAME@ALIAS or models:/NAME/VERSION"):
        parse_model_uri(uri + "/extra")


def test_presets_lists_each_familys_presets_with_their_fields(capsys):
    import json

    from pipeline import cli
    from trainer_module.families import get_family

    assert cli.main(["presets", "--model", "text_encoder"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    family = get_family("text_encoder")
    assert sorted(r["preset"] for r in rows) == sorted(family.presets)
    (default,) = [r for r in rows if r["default"]]
    assert default["preset"] == family.default_preset
    assert default["fields"]["num_classes"] == 2 and "d_model" in default["fields"]
    assert cli.main(["presets", "--model", "nope"]) == 2


def test_every_option_of_every_command_says_what_it_does():
    import argparse

    from pipeline.cli import build_parser

    def commands(parser, prefix=""):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield f"{prefix}{name}", sub
                    yield from commands(sub, f"{prefix}{name} ")

    silent = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in commands(build_parser())
        for action in sub._actions
        if not action.help and not isinstance(action, argparse._HelpAction)
    ]
    assert silent == []
