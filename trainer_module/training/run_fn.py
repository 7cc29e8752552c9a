"""What every family's Trainer entry point runs: sets up where training runs (strategy, chief,
precision), then the family's train-and-export."""

import tempfile
from typing import Callable

import keras
import tensorflow as tf
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module.training import backup, distribution
from trainer_module.training.precision import precision_policy


def run(fn_args: FnArgs, train_and_export: Callable[[FnArgs], keras.Model]) -> keras.Model:
    """Runs `train_and_export(fn_args)` (a family's, from its `run_fn`) inside the distribution
    strategy the environment calls for (distribution.strategy_for), with every dataset sharded
    by batch across workers and the `custom_config["mixed_precision"]` policy (auto: mixed
    precision where the hardware has it), restored afterwards.

    On a multi-worker job every worker trains and exports (saving is collective), but only the
    chief writes to the Trainer's outputs: the others write to a local temporary folder.

    Training backs up to a folder a rerun of the same training finds (training/backup.py),
    removed once the model is exported.
    """
    tf_config = distribution.cluster_spec()
    gpus = len(tf.config.list_physical_devices("GPU"))
    strategy = distribution.strategy_for(tf_config, gpus)  # before any other op runs
    policy = precision_policy(fn_args.custom_config.get("mixed_precision", "auto"), gpus)
    chief = distribution.is_chief(tf_config)
    role = "chief" if chief else f"{tf_config['task']['type']} {tf_config['task']['index']}"
    logging.info(
        "Training as %s: %s with %d replicas, %d GPUs, dtype policy %s",
        role,
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
        gpus,
        policy,
    )
    backup_dir = backup.backup_dir(fn_args)  # from the Trainer's folder: before scratch below
    fn_args.custom_config = {
        **(fn_args.custom_config or {}),
        backup.BACKUP_DIR_KEY: backup_dir,
        backup.BACKUP_WRITER_KEY: chief,
    }
    if not chief:
        scratch = tempfile.mkdtemp(prefix="tfx-transformers-worker-")
        fn_args.serving_model_dir = f"{scratch}/serving_model"
        fn_args.model_run_dir = f"{scratch}/model_run"
        logging.info("Not the chief: this worker's model and logs go to %s", scratch)
    factory = fn_args.data_accessor.tf_dataset_factory
    fn_args.data_accessor = fn_args.data_accessor._replace(
        tf_dataset_factory=lambda *args, **kwargs: distribution.shard_by_data(
            factory(*args, **kwargs)
        )
    )

    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        with strategy.scope():
            model = train_and_export(fn_args)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    if chief:
        backup.remove(backup_dir)
    logging.info(
        "Training finished as %s after %d optimizer steps",
        role,
        int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
    )
    return model


def trainer_entry_point(train_and_export: Callable[[FnArgs], keras.Model]):
    """A family's TFX Trainer entry point (its FAMILY.run_fn): `run` around its training."""

    def run_fn(fn_args: FnArgs) -> keras.Model:
        return run(fn_args, train_and_export)

    return run_fn


def tuner_entry_point(prepare, search_space):
    """A family's TFX Tuner entry point (its FAMILY.tuner_fn): a search of `search_space` over
    the models `prepare(fn_args)` builds (training/tuning.py; KerasTuner loads only here)."""

    def tuner_fn(fn_args: FnArgs):
        from trainer_module.training.tuning import tune

        return tune(fn_args, prepare, search_space)

    return tuner_fn
