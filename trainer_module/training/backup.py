"""Training that survives a kill or a preemption: Keras's BackupAndRestore, in a folder that a
rerun of the same training finds.

The backup (weights and optimizer state, hence the step and the learning-rate schedule's
position, and the number of finished evaluation intervals) is written at the end of each
evaluation interval (the Keras epochs of history.fit_with_evaluations), keeping the previous one
as well, so that a kill while writing falls back to it. It lives beside the Trainer's executions
(`<pipeline root>/Trainer/backup/<key>`), keyed by everything the training depends on: its
data, transform graph, settings and hyperparameters. A rerun after a kill (a new execution, with
the cached inputs) restores it and trains only the remaining intervals; any other training
starts afresh. Only the chief writes it, every worker restores it, and the chief removes it once
the model is exported. The training data (shuffled with a fixed seed) continues where the
backed-up run was: the resumed run skips the batches already trained on (`finished_steps`).
"""

import hashlib
import json
import os
import tempfile

import keras
import tensorflow as tf
from absl import logging

BACKUP_FOLDER = "backup"
# Set in custom_config by training.run_fn: the folder, and whether this worker writes it.
BACKUP_DIR_KEY, BACKUP_WRITER_KEY = "backup_dir", "backup_writer"


def backup_dir(fn_args) -> str:
    """`<Trainer folder>/backup/<sha256 of what the training depends on>`, from the Trainer's
    model run directory `<Trainer folder>/model_run/<execution id>`."""
    depends_on = {
        "train_files": fn_args.train_files,
        "eval_files": fn_args.eval_files,
        "transform_output": fn_args.transform_output,
        "train_steps": fn_args.train_steps,
        "eval_steps": fn_args.eval_steps,
        "custom_config": {
            k: v
            for k, v in (fn_args.custom_config or {}).items()
            if k not in (BACKUP_DIR_KEY, BACKUP_WRITER_KEY)
        },
        "hyperparameters": fn_args.hyperparameters,
    }
    key = hashlib.sha256(json.dumps(depends_on, sort_keys=True, default=str).encode())
    trainer_dir = os.path.dirname(os.path.dirname(fn_args.model_run_dir.rstrip("/")))
    return os.path.join(trainer_dir, BACKUP_FOLDER, key.hexdigest()[:24])


class Backup(keras.callbacks.BackupAndRestore):
    """BackupAndRestore at the end of each interval; records the optimizer step training
    resumed from (0 for a fresh start). Every worker restores from `directory`, and every
    worker saves (reading distributed variables is collective), but only the chief saves there:
    the others save to a scratch folder."""

    def __init__(self, directory: str, chief: bool = True):
        super().__init__(
            directory, save_freq="epoch", double_checkpoint=True, delete_checkpoint=False
        )  # run_fn removes it after the export
        self.chief = chief
        self.resumed_from_step = 0
        self.scratch = None if chief else tempfile.mkdtemp(prefix="tfx-transformers-backup-")

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self.resumed_from_step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if self.resumed_from_step:
            logging.info(
                "Resumed from the backup in %s at step %d (%d intervals done)",
                self.backup_dir,
                self.resumed_from_step,
                self.model._initial_epoch,
            )

    def finished_intervals(self) -> int:
        """The intervals the backup says were trained (0 without one), before fit restores it."""
        if not tf.io.gfile.exists(self._training_metadata_path):
            return 0
        with tf.io.gfile.GFile(self._training_metadata_path) as f:
            return int(json.load(f).get("epoch", 0))

    def _save_model(self):
        # Keras creates the folder when it does not exist yet, failing when another worker
        # created it in between (seen with two workers on a busy machine); this tolerates it.
        tf.io.gfile.makedirs(self.backup_dir)
        if self.chief:
            return super()._save_model()
        self._use(self.scratch)
        try:
            super()._save_model()
        finally:
            self._use(self.backup_dir)

    def _use(self, directory: str) -> None:
        """Points the (Keras 3.12) callback's four files into `directory`."""
        self._weights_path = os.path.join(directory, "latest.weights.h5")
        self._training_metadata_path = os.path.join(directory, "training_metadata.json")
        self._prev_weights_path = f"{self._weights_path}.bkp"
        self._prev_training_metadata_path = f"{self._training_metadata_path}.bkp"


def callback(fn_args, phase: str = "") -> "Backup | None":
    """The Backup for this training (for one `phase` of a training in several fits, each
    backed up on its own), when run_fn set a backup folder."""
    directory = (fn_args.custom_config or {}).get(BACKUP_DIR_KEY)
    if not directory:
        return None
    return Backup(
        os.path.join(directory, phase) if phase else directory,
        chief=fn_args.custom_config.get(BACKUP_WRITER_KEY, True),
    )


def continued(train, restore: "Backup | None", steps_per_interval: int):
    """`train` from the batch the backed-up run had reached (it is repeated and seeded, so
    skipping those batches gives the ones that run would have read next)."""
    done = restore.finished_intervals() * steps_per_interval if restore else 0
    if done:
        logging.info("Skipping the %d training batches the backed-up run read", done)
        return train.skip(done)
    return train


def remove(directory: str) -> None:
    if directory and tf.io.gfile.exists(directory):
        tf.io.gfile.rmtree(directory)
