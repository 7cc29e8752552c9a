"""The from-scratch Vision Transformer (with the Compact Convolutional Transformer's options):
config.py (config, presets, search space), model.py, preprocessing.py (tf.Transform),
training.py (augmentation, train-and-export), serving.py."""

from trainer_module.family import IMAGE_CLASSIFIER, ModelFamily, Option
from trainer_module.vit import config

FAMILY = ModelFamily(
    name="vit",
    kind=IMAGE_CLASSIFIER,
    description="a from-scratch Vision Transformer (patch or convolutional tokenizer)",
    presets=config.PRESETS,
    default_preset="small",
    transform_config=config.transform_config,
    preprocessing_fn="trainer_module.vit.preprocessing.preprocessing_fn",
    run_fn="trainer_module.vit.training.run_fn",
    tuner_fn="trainer_module.vit.training.tuner_fn",
    search_space=config.SEARCH_SPACE,
    options=(
        Option(
            "image_size",
            type=int,
            help="the side (pixels) every image is resized to, in Transform and in the served "
            "model; images of any size and aspect are read (default: the preset's, 32)",
            config_field="image_size",
        ),
    ),
)
