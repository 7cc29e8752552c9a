"""The installed package states what it needs to run: requirements/runtime.in, the one list the
lock and the pipeline image are resolved from."""

import importlib.metadata
import pathlib

from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parents[1]


def requirements(lines) -> dict:
    parsed = (Requirement(line) for line in lines)
    return {r.name.lower(): str(r.specifier) for r in parsed}


def test_the_package_metadata_lists_the_runtime_requirements():
    runtime = [
        line.strip()
        for line in (ROOT / "requirements" / "runtime.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    stated = importlib.metadata.requires("tfx-transformers")
    assert requirements(stated) == requirements(runtime)
    assert "tfx" in requirements(stated) and "mlflow" in requirements(stated)


def test_no_module_of_a_folder_scripts_run_from_shadows_the_standard_library():
    """`python pipeline/local_runner.py` (the TFX CLI's DSL file) and `python
    kubeflow/imdb_runner.py` put their folder first on the path: a module there named like one
    of the standard library's (platform.py, say) would be imported in its place, by TensorFlow
    too."""
    import sys

    for folder in ("pipeline", "kubeflow", "scripts", "benchmarks"):
        names = {p.stem for p in (ROOT / folder).glob("*.py")} | {
            p.name for p in (ROOT / folder).iterdir() if p.is_dir()
        }
        assert not names & set(sys.stdlib_module_names), folder
