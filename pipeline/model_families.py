"""Model families by kind of task: what each adds to the pipeline (preprocessing, presets).

A task lists the families it accepts; a family brings its tf.Transform preprocessing_fn (the
tokenisation belongs to the model: BERT needs its preset's WordPiece vocabulary), its presets
and what Transform needs from them. The Trainer's run_fn picks the family's training module
(trainer_module/training/run_fn.py).
"""
import dataclasses
from typing import Any, Callable, Mapping, Optional

from trainer_module.models import bert_presets, presets


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    name: str
    preprocessing_fn: str  # dotted path
    default_preset: str
    # (preset, overrides) -> Transform's custom_config; raises on an unknown preset or field.
    transform_config: Callable[[str, Mapping[str, Any]], dict]
    # Imported by the Evaluator before it loads the model (ops the graph needs), if any.
    evaluator_module: Optional[str] = None


def _encoder_transform_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    config = presets.get_preset(preset, overrides)
    return {"vocab_size": config.vocab_size, "max_length": config.max_length,
            "truncation_head": config.truncation_head}


def _bert_transform_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    config = bert_presets.get_preset(preset, overrides)
    return {"backbone_preset": config.backbone_preset, "sequence_length": config.sequence_length}


TEXT_CLASSIFIERS: Mapping[str, ModelFamily] = {
    "transformer": ModelFamily(
        name="transformer",
        preprocessing_fn="trainer_module.preprocessing.text.preprocessing_fn",
        default_preset="small",
        transform_config=_encoder_transform_config,
    ),
    "bert": ModelFamily(
        name="bert",
        preprocessing_fn="trainer_module.preprocessing.bert.preprocessing_fn",
        default_preset="default",
        transform_config=_bert_transform_config,
        evaluator_module="trainer_module.serving.custom_ops",
    ),
}
