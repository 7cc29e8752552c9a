"""The model families, by name: each family's folder of trainer_module defines its `FAMILY`
record in its __init__ (a new family adds a folder and a line here). Importing this loads each
family's config and presets only: no TensorFlow, no Keras."""

from typing import Dict

from trainer_module.bert import FAMILY as BERT
from trainer_module.family import ModelFamily
from trainer_module.text_encoder import FAMILY as TEXT_ENCODER
from trainer_module.translator import FAMILY as TRANSLATOR
from trainer_module.vit import FAMILY as VIT

FAMILIES: Dict[str, ModelFamily] = {f.name: f for f in (BERT, TEXT_ENCODER, TRANSLATOR, VIT)}


def get_family(name: str) -> ModelFamily:
    if name not in FAMILIES:
        raise ValueError(f"unknown model family {name!r}; known: {sorted(FAMILIES)}")
    return FAMILIES[name]
