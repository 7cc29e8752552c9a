"""Model families by kind of task: what each adds to the pipeline (preprocessing, presets).

A task lists the families it accepts; a family brings its tf.Transform preprocessing_fn (the
tokenisation belongs to the model: BERT needs its preset's WordPiece vocabulary), its presets
and what Transform needs from them, and the module that trains and exports it (the Trainer's
run_fn calls it: trainer_module/training/run_fn.py).
"""
import dataclasses
from typing import Any, Callable, Mapping, Optional

from trainer_module.models import bert_presets, presets, translator_presets, vit_presets


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    name: str
    preprocessing_fn: str  # dotted path
    default_preset: str
    # (preset, overrides) -> Transform's custom_config; raises on an unknown preset or field.
    transform_config: Callable[[str, Mapping[str, Any]], dict]
    # Dotted path of the module whose `train_and_export(fn_args)` the Trainer runs.
    training_module: str
    # Imported by the Evaluator before it loads the model (ops the graph needs), if any.
    evaluator_module: Optional[str] = None
    # Whether the optional Tuner can search it: its training module has `prepare(fn_args)`
    # and its config maps the search space (trainer_module/training/tuning.py).
    tunable: bool = True


def _encoder_transform_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    config = presets.get_preset(preset, overrides)
    return {"vocab_size": config.vocab_size, "max_length": config.max_length,
            "truncation_head": config.truncation_head}


def _bert_transform_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    config = bert_presets.get_preset(preset, overrides)
    return {"backbone_preset": config.backbone_preset, "sequence_length": config.sequence_length}


def _translator_transform_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    config = translator_presets.get_preset(preset, overrides)
    return {name: getattr(config, name) for name in (
        "source_vocab_size", "target_vocab_size", "min_frequency", "shared_vocabulary",
        "max_source_length", "max_target_length")}


def _vit_transform_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    return {"image_size": vit_presets.get_preset(preset, overrides).image_size}


TEXT_CLASSIFIERS: Mapping[str, ModelFamily] = {
    "transformer": ModelFamily(
        name="transformer",
        preprocessing_fn="trainer_module.preprocessing.text.preprocessing_fn",
        default_preset="small",
        transform_config=_encoder_transform_config,
        training_module="trainer_module.training.text_classification",
    ),
    "bert": ModelFamily(
        name="bert",
        preprocessing_fn="trainer_module.preprocessing.bert.preprocessing_fn",
        default_preset="default",
        transform_config=_bert_transform_config,
        training_module="trainer_module.training.bert_classification",
        evaluator_module="trainer_module.serving.custom_ops",
        tunable=False,  # a pretrained backbone: its layers and width are given
    ),
}

TRANSLATORS: Mapping[str, ModelFamily] = {
    "transformer": ModelFamily(
        name="transformer",
        preprocessing_fn="trainer_module.preprocessing.translation.preprocessing_fn",
        default_preset="small",
        transform_config=_translator_transform_config,
        training_module="trainer_module.training.translation",
        # TFMA's BLEU and token accuracy, fed by the served model's outputs.
        evaluator_module="pipeline.tasks.translation_metrics",
    ),
}

IMAGE_CLASSIFIERS: Mapping[str, ModelFamily] = {
    "vit": ModelFamily(
        name="vit",
        preprocessing_fn="trainer_module.preprocessing.image.preprocessing_fn",
        default_preset="small",
        transform_config=_vit_transform_config,
        training_module="trainer_module.training.image_classification",
    ),
}
