"""The layers of the code import one way (docs/design.md): the TFX workers that run Transform,
the Trainer, the Tuner and the Evaluator on Dataflow or Vertex AI import the model families and
the components alone, never the CLI's and the factory's package; no product code imports the
lab (lab/, benchmarks/, tests/); the model code runs under any Keras 3 backend."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# What the product (the wheel, the pipeline image) never imports: the tests' and benchmarks'
# support package, the benchmarks, the tests.
LAB = {"lab", "benchmarks", "tests"}


def imported_modules(path: pathlib.Path) -> set:
    """Every module a file imports, at any depth (imports inside functions included)."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
    return modules


def files(package: str):
    return sorted((ROOT / package).rglob("*.py"))


def top(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize(
    "package, forbidden",
    [
        ("trainer_module", {"pipeline", "components", *LAB}),
        ("components", {"pipeline", *LAB}),
        ("pipeline", LAB),
        ("tfx_transformers", {"pipeline", *LAB}),
    ],
)
def test_lower_layers_never_import_higher_ones(package, forbidden):
    offending = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if top(m) in forbidden
        )
        for path in files(package)
    }
    assert not {path: modules for path, modules in offending.items() if modules}


def test_model_code_imports_no_tensorflow():
    model_code = (
        files("trainer_module/layers")
        + sorted(ROOT.glob("trainer_module/*/config.py"))
        + sorted(ROOT.glob("trainer_module/*/model.py"))
    )
    assert len(model_code) > 8
    offending = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if top(m) in {"tensorflow", "tensorflow_transform"}
        )
        for path in model_code
    }
    assert not {path: modules for path, modules in offending.items() if modules}


def test_the_checks_find_an_offending_import(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def f():\n    from pipeline.predict import answer\nimport tensorflow as tf\n")
    assert imported_modules(path) == {"pipeline.predict", "tensorflow"}


def test_the_benchmarks_are_a_package_without_path_edits_or_an_import_loop():
    """benchmarks/ runs as `python -m benchmarks.<name>`: its modules import one another as
    `benchmarks.<module>`, none edits sys.path, and the shared helpers import one way: report
    imports no benchmark, recipes only report."""
    modules = {path.stem: path for path in files("benchmarks") if path.parent.name == "benchmarks"}
    assert {"__init__", "report", "hardware", "imdb_pipeline"} <= set(modules)
    for name, path in modules.items():
        assert "sys.path" not in path.read_text(encoding="utf-8"), name
        siblings = {m for m in imported_modules(path) if m in modules}  # "import report"
        assert not siblings, (name, siblings)
    for helper, allowed in (("report", set()), ("recipes", {"report"})):
        assert benchmark_imports(modules[helper]) <= allowed, helper


def benchmark_imports(path: pathlib.Path) -> set:
    """The benchmarks modules a file imports: `from benchmarks import x`, `benchmarks.x`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "benchmarks":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks."):
            found.add(node.module.split(".")[1])
    return found
