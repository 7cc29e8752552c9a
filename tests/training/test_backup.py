"""Training backs up after each evaluation interval (trainer_module/training/backup.py): a run
killed part-way and run again resumes from its last backup, trains only the remaining steps,
and removes the backup once it has exported (with real processes for the text encoder:
tests/e2e/test_faults.py)."""

import copy
import json
import os

import pytest

from tests.conftest import REVIEWS, review_spec
from tests.family_util import run_family
from trainer_module.training import backup, history


class Killed(Exception):
    pass


def test_a_training_with_other_settings_does_not_use_the_backup(tmp_path):
    class Args:
        train_files, eval_files, transform_output = ["t"], ["e"], "tf"
        unlabeled_files: list = []
        train_steps, eval_steps, hyperparameters = 8, 1, None
        model_run_dir = "/root/pipelines/p/Trainer/model_run/17/"
        custom_config = {"preset": "tiny"}

    other = type("Other", (Args,), {"train_steps": 9})
    rerun = type("Rerun", (Args,), {"model_run_dir": "/root/pipelines/p/Trainer/model_run/18"})
    assert backup.backup_dir(Args).startswith("/root/pipelines/p/Trainer/backup/")
    assert backup.backup_dir(rerun) == backup.backup_dir(Args)  # a new execution, same training
    assert backup.backup_dir(other) != backup.backup_dir(Args)


def write_records(path, records):
    """`records` (bytes) as tf.Examples of two features, the second shard's written with its
    features in the other order (as another process may serialise them)."""
    import tensorflow as tf

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP")) as writer:
        for record in records:
            names = ["text", "label"] if path.endswith("-0.gz") else ["label", "text"]
            example = tf.train.Example()
            for name in names:
                value = record if name == "text" else b"1"
                example.features.feature[name].bytes_list.value.append(value)
            writer.write(example.SerializeToString())


def test_the_key_reads_the_records_and_vocabularies_not_the_folders_they_are_in(tmp_path):
    """A resubmitted Kubeflow job reruns its data steps into new folders (other shards, other
    order): the same training finds the same backup; other records do not."""

    def run_in(folder, train, vocabulary=b"the\nfilm\n"):
        for number, shard in enumerate(train):
            write_records(str(tmp_path / folder / "train" / f"part-{number}.gz"), shard)
        write_records(str(tmp_path / folder / "eval" / "part-0.gz"), [b"e"])
        assets = tmp_path / folder / "transform" / "transform_fn" / "assets"
        assets.mkdir(parents=True)
        (assets / "vocabulary").write_bytes(vocabulary)

        class Args:
            train_files = [str(tmp_path / folder / "train" / "*")]
            eval_files = [str(tmp_path / folder / "eval" / "*")]
            unlabeled_files: list = []
            transform_output = str(tmp_path / folder / "transform")
            train_steps, eval_steps, hyperparameters = 8, 1, None
            model_run_dir = str(tmp_path / folder / "Trainer" / "model_run" / "1")
            custom_config = {"preset": "tiny", "backup_root": str(tmp_path / "backups")}

        return backup.backup_dir(Args)

    first = run_in("run-1", [[b"a", b"b", b"c"]])
    assert first.startswith(str(tmp_path / "backups"))
    assert run_in("run-2", [[b"c"], [b"b", b"a"]]) == first
    assert run_in("run-3", [[b"a", b"b", b"d"]]) != first
    assert run_in("run-4", [[b"a", b"b", b"c"]], vocabulary=b"the\nmovie\n") != first


@pytest.mark.slow
def test_bert_backs_up_each_phase_and_resumes_in_the_phase_it_was_killed_in(
    tmp_path, monkeypatch, bert_run
):
    """Two phases (head, then full), each its own backup: killed after the first of the full
    phase's two intervals, the rerun finds the head phase done and resumes the full one. On
    the session BERT run's Transform output (its checkpoint, 16 ids with a head of 4)."""
    from trainer_module.bert.training import run_fn as bert_run_fn

    log_evaluation, evaluations = history.LogEvaluations.on_epoch_end, []

    def killed_in_the_full_phase(self, epoch, logs=None):
        log_evaluation(self, epoch, logs)
        evaluations.append(epoch)
        if len(evaluations) == 2:  # head: 1 interval, then the full phase's first
            raise Killed()

    monkeypatch.setattr(history.LogEvaluations, "on_epoch_end", killed_in_the_full_phase)
    started = []
    backup_dir = backup.backup_dir
    monkeypatch.setattr(
        backup,
        "backup_dir",
        lambda run: started.append(copy.copy(run)) or backup_dir(run),
    )
    with pytest.raises(Killed):
        run_family(
            "bert",
            REVIEWS,
            review_spec(),
            str(tmp_path / "run"),
            train_steps=8,
            overrides={
                **bert_run.fn_args.custom_config["overrides"],
                "head_fraction": 0.5,
                "evaluations": 2,
            },
            transform_of=bert_run,
        )
    (key,) = os.listdir(tmp_path / "backup")
    assert sorted(os.listdir(tmp_path / "backup" / key)) == ["full", "head"]

    monkeypatch.setattr(history.LogEvaluations, "on_epoch_end", log_evaluation)
    fn_args = started[0]  # the TrainerRun as TFX gave it
    model = bert_run_fn(fn_args)
    with open(os.path.join(fn_args.model_run_dir, history.HISTORY_FILE)) as f:
        record = json.load(f)
    assert record["resumed_from_step"] == 4 + 2  # the head phase, and half the full one
    assert int(model.optimizer.iterations.numpy()) == 4  # the full phase's optimizer
    assert len(record["history"]["val_loss"]) == 1  # only the full phase's last interval ran
    assert not (tmp_path / "backup" / key).exists()


def test_a_resumed_run_reads_on_from_the_batch_the_backed_up_run_had_reached(tmp_path):
    import tensorflow as tf

    folder = tmp_path / "backup"
    (folder / "interval-000002").mkdir(parents=True)
    (folder / "interval-000002" / "training_metadata.json").write_text(json.dumps({"epoch": 2}))
    batches = tf.data.Dataset.range(100).repeat()  # a repeated, seeded training dataset
    resumed = backup.continued(batches, backup.Backup(str(folder)), steps_per_interval=3)
    assert list(resumed.take(2).as_numpy_iterator()) == [6, 7]  # two intervals of 3 were read
    assert backup.continued(batches, backup.Backup(str(tmp_path / "fresh")), 3) is batches
    assert backup.continued(batches, None, 3) is batches


def tiny_fit(directory, epochs):
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    restore = backup.Backup(str(directory))
    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=epochs, callbacks=[restore], verbose=0)
    return model, restore


def test_each_interval_is_saved_whole_and_a_save_a_kill_interrupted_is_ignored(
    tmp_path, monkeypatch
):
    """Killed -9 at any moment of a save: the interval's folder lacks its metadata (written
    last, through a temporary name) and the rerun restores the interval before."""
    import tensorflow as tf

    folder, rename, renames = tmp_path / "backup", tf.io.gfile.rename, []

    class Killed(Exception):
        pass

    def killed_in_the_third_save(source, target, overwrite=False):
        renames.append(target)
        if len(renames) == 3:  # interval 3's weights are written, its metadata is not
            raise Killed()
        rename(source, target, overwrite)

    monkeypatch.setattr(tf.io.gfile, "rename", killed_in_the_third_save)
    with pytest.raises(Killed):
        tiny_fit(folder, epochs=4)
    monkeypatch.setattr(tf.io.gfile, "rename", rename)
    assert sorted(os.listdir(folder)) == ["interval-000002", "interval-000003"]
    assert sorted(os.listdir(folder / "interval-000002")) == [
        "latest.weights.h5",
        "training_metadata.json",
    ]
    assert "training_metadata.json" not in os.listdir(folder / "interval-000003")
    assert backup.Backup(str(folder)).finished_intervals() == 2

    model, restore = tiny_fit(folder, epochs=4)
    assert restore.resumed_from_step == 2 * 2  # two intervals of two batches
    assert int(model.optimizer.iterations.numpy()) == 4 * 2
    assert os.listdir(folder) == ["interval-000004"]  # the older and the interrupted removed


def test_a_resumed_float16_training_restores_its_loss_scale(tmp_path):
    """Under mixed_float16 the optimizer is Keras' LossScaleOptimizer, whose dynamic loss scale
    is training state: a resumed run restores it with the step, rather than starting again at
    2**15 and skipping steps it had already found the scale for."""
    import keras
    import numpy as np

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:

        def build():
            model = keras.Sequential(
                [keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2, dtype="float32")]
            )
            model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
            return model

        x = np.random.default_rng(0).random((8, 4), "float32")
        y = np.random.default_rng(1).random((8, 2), "float32")
        model = build()
        assert type(model.optimizer).__name__ == "LossScaleOptimizer"
        saved = backup.Backup(str(tmp_path / "backup"))
        model.fit(x, y, epochs=1, verbose=0, callbacks=[saved])  # the interval's backup
        model.optimizer.dynamic_scale.assign(512.0)  # the scale this training had found
        saved._save_model()

        resumed = build()
        restoring = backup.Backup(str(tmp_path / "backup"))
        resumed.fit(x, y, epochs=1, verbose=0, callbacks=[restoring])
        assert restoring.resumed_from_step == 1
        assert float(resumed.optimizer.dynamic_scale) == 512.0
    finally:
        keras.mixed_precision.set_global_policy(previous)
