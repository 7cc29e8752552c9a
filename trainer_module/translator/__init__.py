"""The from-scratch encoder-decoder Transformer for translation: config.py (config, presets,
search space), model.py, preprocessing.py (tf.Transform), training.py, serving.py (decoding in
the graph) and metrics.py (TFMA BLEU and token accuracy)."""

from trainer_module.family import TRANSLATOR, ModelFamily
from trainer_module.translator import config

FAMILY = ModelFamily(
    name="translator",
    kind=TRANSLATOR,
    description="a from-scratch encoder-decoder Transformer over word vocabularies",
    presets=config.PRESETS,
    default_preset="small",
    transform_config=config.transform_config,
    preprocessing_fn="trainer_module.translator.preprocessing.preprocessing_fn",
    run_fn="trainer_module.translator.training.run_fn",
    tuner_fn="trainer_module.translator.training.tuner_fn",
    search_space=config.SEARCH_SPACE,
    # TFMA's BLEU and token accuracy over the served model's outputs.
    evaluator_module="trainer_module.translator.metrics",
)
