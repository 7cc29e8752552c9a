"""The from-scratch Transformer encoder for text classification: config.py (config, presets,
search space), model.py, preprocessing.py (tf.Transform), training.py, serving.py."""

from trainer_module.family import TEXT_CLASSIFIER, ModelFamily
from trainer_module.text_encoder import config

FAMILY = ModelFamily(
    name="text_encoder",
    kind=TEXT_CLASSIFIER,
    description="a from-scratch Transformer encoder over a word vocabulary",
    presets=config.PRESETS,
    default_preset="small",
    transform_config=config.transform_config,
    preprocessing_fn="trainer_module.text_encoder.preprocessing.preprocessing_fn",
    run_fn="trainer_module.text_encoder.training.run_fn",
    tuner_fn="trainer_module.text_encoder.training.tuner_fn",
    search_space=config.SEARCH_SPACE,
)
