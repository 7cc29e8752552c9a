"""A pretrained KerasHub BERT, fine-tuned: config.py (config, presets), model.py,
preprocessing.py (the preset's WordPiece tokenizer in tf.Transform), training.py (two phases),
serving.py, tiny_preset.py (an offline, randomly initialised preset)."""
from trainer_module.bert import config
from trainer_module.family import TEXT_CLASSIFIER, ModelFamily, Option

FAMILY = ModelFamily(
    name="bert",
    kind=TEXT_CLASSIFIER,
    description="a pretrained KerasHub BERT backbone, fine-tuned with a classification head",
    presets=config.PRESETS,
    default_preset="default",
    transform_config=config.transform_config,
    preprocessing_fn="trainer_module.bert.preprocessing.preprocessing_fn",
    run_fn="trainer_module.bert.training.run_fn",
    # The exported tokenizer runs tensorflow-text's ops: the Evaluator registers them first.
    evaluator_module="trainer_module.serving.custom_ops",
    options=(Option("bert_preset", help="a KerasHub BERT preset name (downloaded at run "
                                        "time) or a local preset directory",
                    config_field="backbone_preset", is_path=True),),
)
