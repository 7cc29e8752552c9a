"""The model families, by name: every package of trainer_module with a config.py, whose
__init__ defines its `FAMILY` record (adding a family adds one folder). Importing this loads
each family's config and presets only: no TensorFlow, no Keras."""

import importlib
import os
import pkgutil
from typing import Dict

import trainer_module
from trainer_module.family import ModelFamily


def _discover() -> Dict[str, ModelFamily]:
    families = {}
    for module in sorted(pkgutil.iter_modules(trainer_module.__path__), key=lambda m: m.name):
        if module.ispkg and os.path.exists(
            os.path.join(module.module_finder.path, module.name, "config.py")
        ):
            family = importlib.import_module(f"trainer_module.{module.name}").FAMILY
            families[family.name] = family
    return families


FAMILIES: Dict[str, ModelFamily] = _discover()


def get_family(name: str) -> ModelFamily:
    if name not in FAMILIES:
        raise ValueError(f"unknown model family {name!r}; known: {sorted(FAMILIES)}")
    return FAMILIES[name]
