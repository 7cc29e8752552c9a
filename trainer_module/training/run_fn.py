"""What every family's Trainer entry point runs: sets up where training runs (strategy, chief,
precision), then one train-and-export for every family (fit_and_export)."""

import tempfile
import time
from typing import Callable

import keras
import tensorflow as tf
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module import quiet_shutdown
from trainer_module.serving import onnx_export, quantization
from trainer_module.training import backup, distribution, plan, pretraining
from trainer_module.training.history import throughput, write_history
from trainer_module.training.inputs import Prepared, TrainerRun
from trainer_module.training.precision import precision_policy


def sharded(factory):
    """TFX's dataset factory, its datasets sharded by batch across the job's workers."""
    return lambda *args, **kwargs: distribution.shard_by_data(factory(*args, **kwargs))


def run(fn_args: FnArgs, train_and_export: Callable[[TrainerRun], keras.Model]) -> keras.Model:
    """Runs `train_and_export` (a family's, from its `run_fn`) on the TrainerRun read from
    `fn_args`, inside the distribution
    strategy the environment calls for (distribution.strategy_for), with every dataset sharded
    by batch across workers and the pipeline's `mixed_precision` policy (auto: mixed
    precision where the hardware has it), restored afterwards.

    On a multi-worker job every worker trains and exports (saving is collective), but only the
    chief writes to the Trainer's outputs: the others write to a local temporary folder.

    Training backs up to a folder a rerun of the same training finds (training/backup.py),
    removed once the model is exported.
    """
    quiet_shutdown.install()  # a Trainer in its own process (a cloud job) exits quietly too
    given = TrainerRun.from_fn_args(fn_args)  # as TFX gave it
    tf_config = distribution.cluster_spec()
    gpus = len(tf.config.list_physical_devices("GPU"))
    strategy = distribution.strategy_for(tf_config, gpus)  # before any other op runs
    policy = precision_policy(given.options.mixed_precision, gpus)
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
    trainer_run = given.replace(
        backup_dir=backup.backup_dir(given),  # from the Trainer's folder, as TFX gave it
        backup_writer=chief,
        # Every worker reads its own batches of each dataset.
        data_accessor=given.data_accessor._replace(
            tf_dataset_factory=sharded(given.data_accessor.tf_dataset_factory)
        ),
    )
    if not chief:
        scratch = tempfile.mkdtemp(prefix="tfx-transformers-worker-")
        trainer_run = trainer_run.replace(
            serving_model_dir=f"{scratch}/serving_model", model_run_dir=f"{scratch}/model_run"
        )
        logging.info("Not the chief: this worker's model and logs go to %s", scratch)
    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        with strategy.scope():
            model = train_and_export(trainer_run)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    if chief:
        backup.remove(trainer_run.backup_dir)
    else:
        # TFX's Trainer executor checks, on every worker, that fn_args.serving_model_dir
        # exists once run_fn returns: every replica is handed the same outputs (as on Vertex
        # AI), and the chief's export is the one that lands there.
        wait_for_export(given.serving_model_dir)
    logging.info(
        "Training finished as %s after %d optimizer steps",
        role,
        int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
    )
    return model


CHIEF_EXPORT_SECONDS = 30 * 60  # how long a worker waits for the chief's model


def wait_for_export(serving_model_dir: str) -> None:
    """Returns once the chief's export exists at `serving_model_dir`, which a worker that is
    not the chief neither writes nor redirects; an error naming it after CHIEF_EXPORT_SECONDS
    (the chief failed: the job fails on this worker too)."""
    deadline = time.monotonic() + CHIEF_EXPORT_SECONDS
    if not tf.io.gfile.exists(serving_model_dir):
        logging.info("Waiting for the chief's model at %s", serving_model_dir)
    while not tf.io.gfile.exists(serving_model_dir):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the chief's model did not appear at {serving_model_dir} within "
                f"{CHIEF_EXPORT_SECONDS / 60:g} min of this worker's export: see the chief's log"
            )
        time.sleep(1)


def fit_and_export(trainer_run: TrainerRun, prepare: Callable[[TrainerRun], Prepared]):
    """Every family's train-and-export: what `prepare` returns (inputs.Prepared: the run with
    its examples counted and its steps), the plan (with a time budget, the steps that fit it:
    training/plan.py), the model built over those steps and fitted (after masked-token
    pretraining when the family offers it and the config asks for it:
    training/pretraining.py), what trains after it (the text classifiers' wide path and
    combination: training/wide_path.py), the model to export (`Prepared.served`'s) quantized
    when the config asks for it (serving/quantization.py), history.json written, and that model
    exported, with its ONNX runtimes beside it on the chief when the config asks for them
    (serving/onnx_export.py). Returns the model that trained (quantized with it)."""
    prepared = prepare(trainer_run)
    config = prepared.config
    planned = plan.fit_to_budget(prepared.run, prepared)
    trainer_run = prepared.run.replace(train_steps=planned.train_steps)
    model = prepared.build(config, trainer_run.train_steps)
    plan.describe_schedule(model, trainer_run.train_steps)

    def pretrain() -> dict:
        record = pretraining.pretrain(
            prepared.pretraining(model),
            planned.pretrain_steps,
            config.batch_size,
            config.pretrain_learning_rate,
            config.weight_decay,
        )
        texts = plan.pretraining_texts(trainer_run)
        return {**record, "texts": texts, "unlabeled_texts": trainer_run.unlabeled_examples}

    fitted = prepared.fit(model, trainer_run, pretrain if planned.pretrain_steps else None)
    paths = prepared.after_fit(model, trainer_run)
    served = prepared.served(model)
    quantized = quantization.quantize(served, getattr(config, "quantize", None))
    write_history(
        trainer_run.model_run_dir,
        config.to_dict(),
        fitted.history,
        paths=paths or None,
        learning_rate=plan.schedule_as_trained(model),
        pretraining=fitted.pretraining,
        **prepared.describe(model),
        **({"quantized_layers": quantized} if quantized else {}),
        **throughput(
            fitted.fit_seconds,
            trainer_run,
            config.batch_size,
            resumed_from_step=fitted.resumed_from_step,
            warm_start=fitted.warm_start,
        ),
    )
    prepared.export(served, trainer_run.serving_model_dir)
    if getattr(config, "serving_runtimes", "none") == "onnx" and trainer_run.backup_writer:
        onnx_export.write(
            trainer_run.serving_model_dir,
            trainer_run.eval_files,
            prepared.tf_transform_output.transformed_feature_spec(),
        )
    return model


def trainer_entry_point(prepare: Callable[[TrainerRun], Prepared]):
    """A family's TFX Trainer entry point (its FAMILY.run_fn): `run` around fit_and_export of
    the family's `prepare`."""

    def run_fn(fn_args: FnArgs) -> keras.Model:
        return run(fn_args, lambda trainer_run: fit_and_export(trainer_run, prepare))

    return run_fn


def tuner_entry_point(prepare, search_space):
    """A family's TFX Tuner entry point (its FAMILY.tuner_fn): a search of `search_space` over
    the models `prepare` builds (training/tuning.py; KerasTuner loads only here)."""

    def tuner_fn(fn_args: FnArgs):
        from trainer_module.training.tuning import tune

        return tune(fn_args, prepare, search_space)

    return tuner_fn
