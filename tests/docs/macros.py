"""scripts/docs_macros.py as the docs build loads it (mkdocs-macros loads it from its path)."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load():
    spec = importlib.util.spec_from_file_location(
        "docs_macros", ROOT / "scripts" / "docs_macros.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docs_macros = load()
