import json
import os

import pytest

from pipeline import cli
from pipeline.predict import resolve_model_dir


def test_run_arguments_and_overrides():
    args = cli.build_parser().parse_args(
        ["run", "--task", "imdb", "--train-steps", "5", "--set", "d_model=32",
         "--set", "positional=learned", "--set", "norm_first=true", "--beam-mode",
         "multi_processing"])
    assert args.train_steps == 5 and args.beam_mode == "multi_processing"
    assert dict(args.overrides) == {"d_model": 32, "positional": "learned", "norm_first": True}


@pytest.mark.parametrize("argv", [["run", "--task", "imdb", "--train-steps", "0"],
                                  ["run", "--task", "imdb", "--set", "d_model"],
                                  ["run", "--model", "transformer"]])
def test_bad_arguments_exit_with_usage(argv):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(argv)


def test_run_reports_an_unknown_task(tmp_path, capsys):
    code = cli.main(["run", "--task", "nope", "--output", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "unknown task 'nope'; known tasks: ['cifar10', 'imdb', 'translation']" in err


def test_bert_preset_needs_the_bert_model(tmp_path, capsys):
    code = cli.main(["run", "--task", "imdb", "--bert-preset", str(tmp_path),
                     "--output", str(tmp_path / "out")])
    assert code == 2
    assert "--bert-preset goes with --model bert" in capsys.readouterr().err


def test_run_reports_a_missing_data_directory_as_json(tmp_path, capsys):
    code = cli.main(["run", "--task", "imdb", "--data", str(tmp_path / "missing"),
                     "--output", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2
    assert json.loads(out.strip().splitlines()[-1])["status"] == "failed"
    assert "review data directory not found" in err


def test_report_without_any_run_says_so(tmp_path, capsys):
    code = cli.main(["report", "--output", str(tmp_path)])
    assert code == 2
    assert f"no run report under {tmp_path}" in capsys.readouterr().err


def test_report_regeneration_needs_a_known_pipeline(tmp_path, capsys):
    code = cli.main(["report", "--output", str(tmp_path), "--pipeline", "imdb-transformer",
                     "--regenerate"])
    assert code == 2
    assert "no pipeline 'imdb-transformer'" in capsys.readouterr().err


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
