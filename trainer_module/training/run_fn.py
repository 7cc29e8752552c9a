"""The Trainer's entry point: sets up where training runs, then runs the training module the
model family names."""
import importlib
import tempfile

import keras
import tensorflow as tf
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module.training import distribution

TRAINING_PACKAGE = "trainer_module.training."


def run_fn(fn_args: FnArgs) -> None:
    """TFX Trainer entry point (`Trainer(run_fn='trainer_module.training.run_fn.run_fn')`).

    `custom_config["training_module"]` (set by the pipeline factory from the model family) is a
    module of this package with `train_and_export(fn_args) -> keras.Model`; it is imported only
    when used, so a family's dependencies load only for it.

    The module runs inside the distribution strategy the environment calls for
    (distribution.strategy_for), with every dataset sharded by batch across workers and the
    `custom_config["mixed_precision"]` policy (auto: mixed_float16 on GPUs). On a multi-worker
    job every worker trains and exports (saving is collective), but only the chief writes to
    the Trainer's outputs: the others write to a local temporary folder.
    """
    module = fn_args.custom_config.get("training_module", "")
    if not module.startswith(TRAINING_PACKAGE):
        raise ValueError(f"training_module must be a module of {TRAINING_PACKAGE[:-1]}, "
                         f"not {module!r}")
    tf_config = distribution.cluster_spec()
    gpus = len(tf.config.list_physical_devices("GPU"))
    strategy = distribution.strategy_for(tf_config, gpus)  # before any other op runs
    policy = distribution.precision_policy(
        fn_args.custom_config.get("mixed_precision", "auto"), gpus)
    chief = distribution.is_chief(tf_config)
    role = "chief" if chief else f"{tf_config['task']['type']} {tf_config['task']['index']}"
    logging.info("Training as %s: %s with %d replicas, %d GPUs, dtype policy %s", role,
                 type(strategy).__name__, strategy.num_replicas_in_sync, gpus, policy)
    if not chief:
        scratch = tempfile.mkdtemp(prefix="tfx-transformers-worker-")
        fn_args.serving_model_dir = f"{scratch}/serving_model"
        fn_args.model_run_dir = f"{scratch}/model_run"
        logging.info("Not the chief: this worker's model and logs go to %s", scratch)
    factory = fn_args.data_accessor.tf_dataset_factory
    fn_args.data_accessor = fn_args.data_accessor._replace(
        tf_dataset_factory=lambda *args, **kwargs: distribution.shard_by_data(
            factory(*args, **kwargs)))

    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        with strategy.scope():
            model = importlib.import_module(module).train_and_export(fn_args)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    logging.info("Training finished as %s after %d optimizer steps", role,
                 int(keras.ops.convert_to_numpy(model.optimizer.iterations)))
