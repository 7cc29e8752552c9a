"""The Trainer's entry point: picks the model family named in custom_config and trains it."""
import importlib

from tfx.components.trainer.fn_args_utils import FnArgs

# Model family -> module with `train_and_export(fn_args)`. Imported lazily so that a family's
# dependencies load only when it is used.
MODEL_FAMILIES = {
    "transformer": "trainer_module.training.text_classification",
    "bert": "trainer_module.training.bert_classification",
}


def run_fn(fn_args: FnArgs) -> None:
    """TFX Trainer entry point (`Trainer(run_fn='trainer_module.training.run_fn.run_fn')`)."""
    family = fn_args.custom_config["model"]
    if family not in MODEL_FAMILIES:
        raise ValueError(f"unknown model family {family!r}; known: {sorted(MODEL_FAMILIES)}")
    importlib.import_module(MODEL_FAMILIES[family]).train_and_export(fn_args)
