"""Training length from the data: the examples counted in Transform's output, and epochs
turned into optimizer steps."""

import pytest
import tensorflow as tf

from trainer_module.training.inputs import TRAINER_KEYS, count_examples, steps_for_epochs


def test_count_examples_reads_every_gzipped_shard(tmp_path):
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    for shard, records in enumerate((3, 4)):
        with tf.io.TFRecordWriter(str(tmp_path / f"part-{shard}.gz"), options) as writer:
            for i in range(records):
                writer.write(b"record %d" % i)
    assert count_examples([str(tmp_path / "part-*.gz")]) == 7
    with pytest.raises(ValueError, match="no training files match"):
        count_examples([str(tmp_path / "missing-*")])


@pytest.mark.parametrize(
    "epochs, examples, batch, steps",
    [
        (2, 20_000, 32, 1250),  # the IMDB benchmark
        (30, 45_000, 128, 10_547),  # the CIFAR-10 benchmark: the last batch of an epoch counts
        (14, 18, 6, 42),
        (1 / 3, 18, 6, 1),  # 6 examples: one step, not 1.0000000001 rounded up to 2
        (0.01, 18, 6, 1),  # at least one step
    ],
)
def test_steps_for_epochs(epochs, examples, batch, steps):
    assert steps_for_epochs(epochs, examples, batch) == steps


def test_no_training_examples_is_an_error():
    with pytest.raises(ValueError, match="no training examples"):
        steps_for_epochs(2, 0, 32)


def test_start_run_trains_the_epochs_unless_steps_were_given_at_run_time(tmp_path):
    from tfx.components.trainer.fn_args_utils import FnArgs

    from trainer_module.families import get_family
    from trainer_module.training.inputs import start_run

    with tf.io.TFRecordWriter(
        str(tmp_path / "train.gz"), tf.io.TFRecordOptions(compression_type="GZIP")
    ) as writer:
        for i in range(20):
            writer.write(b"%d" % i)

    def run(train_steps):
        fn_args = FnArgs(
            train_files=[str(tmp_path / "train.gz")],
            train_steps=train_steps,
            transform_graph_path=str(tmp_path),
            custom_config=dict(custom, epochs=3),
        )
        config, _, resolved = start_run(fn_args, get_family("text_encoder"))
        assert fn_args.train_steps == train_steps  # TFX's FnArgs are never written to
        return resolved.train_steps, resolved.train_examples, config.batch_size

    custom = dict.fromkeys(TRAINER_KEYS) | {"preset": "tiny", "overrides": {}, "seed": 0}
    assert run(None) == (8, 20, 8)  # 3 epochs of 20 examples in batches of 8
    assert run(7) == (7, 20, 8)  # a runtime train_args.num_steps wins
    del custom["seed"], custom["time_budget_minutes"]
    with pytest.raises(
        ValueError, match=r"the Trainer's custom_config lacks \['seed', 'time_budget_minutes'\]"
    ):
        run(None)


def test_training_batches_mix_the_classes_of_a_split_sorted_by_label(tmp_path):
    """ExampleGen writes reviews in the order it read them (aclImdb: every negative review, then
    every positive one); tf.data's customary shuffle buffer of 10,000 over 20,000 such examples
    would feed the first thousands of steps one class. The buffer holds the whole split."""
    import types

    import numpy as np
    from tensorflow_transform.tf_metadata import schema_utils
    from tfx.components.trainer.fn_args_utils import DataAccessor

    from tests.family_util import _dataset_factory
    from trainer_module.training.inputs import make_dataset

    path = str(tmp_path / "sorted.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for label in [0] * 10_000 + [1] * 10_000:
            feature = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
            writer.write(
                tf.train.Example(
                    features=tf.train.Features(feature={"label": feature, "x": feature})
                ).SerializeToString()
            )
    spec = {"label": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([], tf.int64)}
    output = types.SimpleNamespace(
        transformed_metadata=types.SimpleNamespace(
            schema=schema_utils.schema_from_feature_spec(spec)
        )
    )
    run = types.SimpleNamespace(
        data_accessor=DataAccessor(
            tf_dataset_factory=_dataset_factory, record_batch_factory=None, data_view_decode_fn=None
        ),
        train_examples=20_000,  # start_run counts them
    )
    dataset = make_dataset(run, [path], output, lambda x: x["x"], 32, 2, shuffle=True)
    first = np.concatenate([y[:, 1] for _, y in dataset.take(60)])  # 1,920 examples
    assert 0.4 < first.mean() < 0.6
