"""The Trainer's entry point: runs the training module the model family names."""
import importlib

from tfx.components.trainer.fn_args_utils import FnArgs

TRAINING_PACKAGE = "trainer_module.training."


def run_fn(fn_args: FnArgs) -> None:
    """TFX Trainer entry point (`Trainer(run_fn='trainer_module.training.run_fn.run_fn')`).

    `custom_config["training_module"]` (set by the pipeline factory from the model family) is a
    module of this package with `train_and_export(fn_args)`; it is imported only when used, so
    a family's dependencies load only for it.
    """
    module = fn_args.custom_config.get("training_module", "")
    if not module.startswith(TRAINING_PACKAGE):
        raise ValueError(f"training_module must be a module of {TRAINING_PACKAGE[:-1]}, "
                         f"not {module!r}")
    importlib.import_module(module).train_and_export(fn_args)
