"""Training that survives a kill or a preemption: Keras's BackupAndRestore, in a folder that a
rerun of the same training finds.

The backup (weights and optimizer state, hence the step and the learning-rate schedule's
position, and the number of finished evaluation intervals) is written at the end of each
evaluation interval (the Keras epochs of history.fit_with_evaluations) into a folder of its own,
`interval-<n>/`: the weights, then `training_metadata.json` through a temporary name. A folder
without that file is one a kill interrupted, and is ignored: a rerun restores the newest
complete folder, so a kill at any moment of a save falls back to the interval before. Older
folders are removed once a newer one is complete. It lives beside the Trainer's executions
(`<pipeline root>/Trainer/backup/<key>`), keyed by everything the training depends on: its
data, transform graph, settings and hyperparameters. A rerun after a kill (a new execution, with
the cached inputs) restores it and trains only the remaining intervals; any other training
starts afresh. Only the chief writes it, every worker restores it, and the chief removes it once
the model is exported. The training data (shuffled with a fixed seed) continues where the
backed-up run was: the resumed run skips the batches already trained on (`finished_steps`).

The key reads what the training reads, not where it lies: the records of each split (their
count and an order-free digest of their bytes), the vocabularies and schema Transform wrote,
the settings. A resubmitted job whose data steps run again (a Kubeflow Pipelines 2 backend
serves no ExampleGen from its cache, so every step after it has new folders) finds the backup
as long as the data and the settings are the same.
"""

import hashlib
import json
import os
import tempfile

import keras
import tensorflow as tf
from absl import logging
from google.protobuf import message

from trainer_module import compat, faults

BACKUP_FOLDER = "backup"
INTERVAL_PREFIX = "interval-"
WEIGHTS, METADATA = "latest.weights.h5", "training_metadata.json"
# Set in custom_config by compiled jobs (pipeline/cloud.py): a folder outside the job's own,
# so that a resubmitted job (a new job folder, the cached inputs) finds the backup.
BACKUP_ROOT_KEY = "backup_root"


def backup_dir(run) -> str:
    """`<Trainer folder>/backup/<sha256 of what the training depends on>`, from the Trainer's
    model run directory `<Trainer folder>/model_run/<execution id>` (`run`: the TrainerRun as
    TFX gave it); with a `backup_root` in the custom_config (compiled jobs, whose Trainer
    folder is the job's), `<backup_root>/<sha>`. What it depends on: the module docstring's
    last paragraph."""
    depends_on = {
        "train_files": records_digest([*run.train_files, *run.unlabeled_files]),
        "eval_files": records_digest(run.eval_files),
        "transform_output": folder_digest(run.transform_output, TRANSFORM_CONTENT),
        "train_steps": run.train_steps,
        "eval_steps": run.eval_steps,
        "custom_config": {k: v for k, v in run.custom_config.items() if k != BACKUP_ROOT_KEY},
        "hyperparameters": run.hyperparameters,
    }
    key = hashlib.sha256(json.dumps(depends_on, sort_keys=True, default=str).encode())
    root = run.custom_config.get(BACKUP_ROOT_KEY)
    if root:
        return os.path.join(root, key.hexdigest()[:24])
    trainer_dir = os.path.dirname(os.path.dirname(run.model_run_dir.rstrip("/")))
    return os.path.join(trainer_dir, BACKUP_FOLDER, key.hexdigest()[:24])


# What of Transform's output the training reads besides its examples: the vocabularies and
# other assets, and the transformed schema (the graph's bytes differ from one trace to the next).
TRANSFORM_CONTENT = ("transform_fn/assets", "transformed_metadata")


def records_digest(file_patterns) -> dict:
    """{"records", "sum", "xor"} of the tf.Example records in the TFRecord files
    `file_patterns` match: their count and the wrapping sum and the xor of a 64-bit hash of
    each record's canonical bytes (its features in name order: two processes may write the
    same example's features in another order), so that the same records in another order or
    other shards give the same digest. One pass over the data (about a second for 20,000
    IMDB reviews)."""
    files = sorted(f for pattern in file_patterns or () for f in tf.io.gfile.glob(pattern))
    count = total = xor = 0
    if files:
        compression = "GZIP" if files[0].endswith(".gz") else None
        records = tf.data.TFRecordDataset(files, compression_type=compression)
        for record in records.as_numpy_iterator():
            try:
                example = tf.train.Example.FromString(record)
                canonical = example.SerializeToString(deterministic=True)
            except message.DecodeError:  # not a tf.Example: its bytes as they are
                canonical = record
            value = int.from_bytes(hashlib.blake2b(canonical, digest_size=8).digest(), "little")
            count, total, xor = count + 1, (total + value) % 2**64, xor ^ value
    return {"records": count, "sum": total, "xor": xor}


def folder_digest(folder: str, parts) -> str:
    """sha256 of the files under `folder`'s `parts` (their paths below `folder` and bytes)."""
    digest = hashlib.sha256()
    for part in parts:
        root = os.path.join(folder or "", part)
        if not folder or not tf.io.gfile.isdir(root):
            continue
        for directory, _, names in sorted(tf.io.gfile.walk(root)):
            for name in sorted(names):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, folder).encode() + b"\0")
                with tf.io.gfile.GFile(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()


class Backup(keras.callbacks.BackupAndRestore):
    """BackupAndRestore at the end of each interval, each save complete or ignored (see the
    module's docstring); records the optimizer step training resumed from (0 for a fresh
    start). Every worker restores from `directory`, and every worker saves (reading distributed
    variables is collective), but only the chief saves there: the others save to a scratch
    folder."""

    def __init__(self, directory: str, chief: bool = True):
        super().__init__(directory, save_freq="epoch", delete_checkpoint=False)
        # (run_fn removes it after the export)
        self.chief = chief
        self.resumed_from_step = 0
        self.scratch = "" if chief else tempfile.mkdtemp(prefix="tfx-transformers-backup-")

    def latest(self) -> "str | None":
        """The newest complete interval folder, or None."""
        pattern = os.path.join(self.backup_dir, f"{INTERVAL_PREFIX}*", METADATA)
        complete = sorted(tf.io.gfile.glob(pattern), key=_interval_of)
        return os.path.dirname(complete[-1]) if complete else None

    def on_train_begin(self, logs=None):
        latest = self.latest()
        self._use(latest or os.path.join(self.backup_dir, "none"))
        super().on_train_begin(logs)
        self.resumed_from_step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if self.resumed_from_step:
            logging.info(
                "Resumed from the backup in %s at step %d (%d intervals done)",
                latest,
                self.resumed_from_step,
                compat.initial_epoch(self.model),
            )

    def finished_intervals(self) -> int:
        """The intervals the backup says were trained (0 without one), before fit restores it."""
        latest = self.latest()
        if not latest:
            return 0
        with tf.io.gfile.GFile(os.path.join(latest, METADATA)) as f:
            return int(json.load(f).get("epoch", 0))

    def _save_model(self):
        interval = f"{INTERVAL_PREFIX}{self._current_epoch:06d}"
        folder = os.path.join(self.backup_dir, interval) if self.chief else self.scratch
        # Keras would create the folder only when it does not exist yet, failing when another
        # worker created it in between (seen with two workers on a busy machine).
        tf.io.gfile.makedirs(folder)
        self.model.save_weights(os.path.join(folder, WEIGHTS), overwrite=True)
        if not self.chief:
            return
        metadata = os.path.join(folder, METADATA)
        with tf.io.gfile.GFile(metadata + ".tmp", "w") as f:
            f.write(json.dumps({"epoch": self._current_epoch, "batch": self._last_batch_seen}))
        tf.io.gfile.rename(metadata + ".tmp", metadata, overwrite=True)  # now complete
        for name in tf.io.gfile.listdir(self.backup_dir):
            name = name.rstrip("/")
            if name.startswith(INTERVAL_PREFIX) and name != interval:
                tf.io.gfile.rmtree(os.path.join(self.backup_dir, name))
        faults.point("trainer.backed_up")

    def _use(self, directory: str) -> None:
        """Points the (Keras 3.12) callback's four files into `directory`."""
        self._weights_path = os.path.join(directory, WEIGHTS)
        self._training_metadata_path = os.path.join(directory, METADATA)
        self._prev_weights_path = f"{self._weights_path}.bkp"
        self._prev_training_metadata_path = f"{self._training_metadata_path}.bkp"


def _interval_of(metadata_path: str) -> int:
    return int(os.path.basename(os.path.dirname(metadata_path))[len(INTERVAL_PREFIX) :])


def callback(run, phase: str = "") -> "Backup | None":
    """The Backup for this training (for one `phase` of a training in several fits, each
    backed up on its own), when run_fn set a backup folder."""
    if not run.backup_dir:
        return None
    return Backup(
        os.path.join(run.backup_dir, phase) if phase else run.backup_dir,
        chief=run.backup_writer,
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
