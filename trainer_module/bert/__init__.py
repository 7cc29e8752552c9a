"""A pretrained BERT, fine-tuned: config.py (config, presets), checkpoint.py (KerasHub presets and
Hugging Face checkpoints), model.py, preprocessing.py (the checkpoint's WordPiece tokenizer in
tf.Transform), training.py (two phases), serving.py. Offline, randomly initialised presets and
checkpoints for tests and benchmarks: lab/tiny_bert.py."""

from trainer_module.bert import config
from trainer_module.family import TEXT_CLASSIFIER, ModelFamily, Option

FAMILY = ModelFamily(
    name="bert",
    kind=TEXT_CLASSIFIER,
    description="a pretrained BERT (a KerasHub preset or a Hugging Face checkpoint), fine-tuned "
    "with a classification head",
    presets=config.PRESETS,
    default_preset="default",
    transform_config=config.transform_config,
    preprocessing_fn="trainer_module.bert.preprocessing.preprocessing_fn",
    run_fn="trainer_module.bert.training.run_fn",
    recipe_epochs=config.RECIPE_EPOCHS,
    # The exported tokenizer runs tensorflow-text's ops: the Evaluator registers them first.
    evaluator_module="trainer_module.serving.custom_ops",
    options=(
        Option(
            "bert_preset",
            help="a KerasHub BERT preset (a name, downloaded at run "
            "time, or a folder) or a Hugging Face BERT checkpoint "
            "(a folder, gs:// or hf://)",
            config_field="backbone_preset",
            is_path=True,
        ),
    ),
)
