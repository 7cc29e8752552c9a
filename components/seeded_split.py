"""The seeded hash split the dataset ExampleGens share when the data has no split of its own."""

import hashlib
from typing import Dict

import apache_beam as beam
import tensorflow as tf
from tfx.components.example_gen import utils
from tfx.proto import example_gen_pb2

from trainer_module import features

# The share of the examples (in hash buckets of 100) held out for `eval` when the data has no
# split of its own: each dataset ExampleGen's default. A task sets its own (Task.eval_percent).
EVAL_PERCENT = 20
# File or folder names that name a split, and the split they become; data under other names
# is split by seeded hash.
SPLIT_NAMES = {
    "train": "train",
    "val": "eval",
    "valid": "eval",
    "validation": "eval",
    "dev": "eval",
    "eval": "eval",
    "test": "test",
}


def hash_split_config(eval_percent: int) -> example_gen_pb2.Output:
    """`train` / `eval` output splits of 100 - eval_percent and eval_percent hash buckets."""
    if not 0 < eval_percent < 100:
        raise ValueError(f"eval_percent must be between 1 and 99, not {eval_percent}")
    return example_gen_pb2.Output(
        split_config=example_gen_pb2.SplitConfig(
            splits=[
                example_gen_pb2.SplitConfig.Split(name="train", hash_buckets=100 - eval_percent),
                example_gen_pb2.SplitConfig.Split(name="eval", hash_buckets=eval_percent),
            ]
        )
    )


def seeded_bucket(example: tf.train.Example, seed: int, total_buckets: int) -> int:
    """An example's hash bucket, from its id (or, when it has none, the whole example) and the
    seed: stable across runs and machines (TFX's own hash split hashes the whole serialized
    example, without a seed)."""
    ids = example.features.feature[features.EXAMPLE_ID].bytes_list.value
    example_id = ids[0] if ids else example.SerializeToString(deterministic=True)
    return int(hashlib.sha256(f"{seed}:".encode() + example_id).hexdigest(), 16) % total_buckets


def split_by_seeded_hash(
    examples: beam.PCollection,
    input_config: example_gen_pb2.Input,
    output_config: example_gen_pb2.Output,
    seed: int,
) -> Dict[str, beam.PCollection]:
    """Output split name -> the examples whose bucket falls in that split's share. A split
    named UNLABELED_SPLIT takes no share: its texts come from elsewhere (the reviews layout's
    with_unlabeled), and it is left out of the returned splits."""
    bounds, total, names = [], 0, []
    for split, name in zip(
        output_config.split_config.splits,
        utils.generate_output_split_names(input_config, output_config),
    ):
        if name == features.UNLABELED_SPLIT:
            continue
        total += split.hash_buckets
        bounds.append(total)
        names.append(name)

    def partition(example, num_partitions):
        bucket = seeded_bucket(example, seed, total)
        return next(i for i, bound in enumerate(bounds) if bucket < bound)

    parts = examples | "SeededSplit" >> beam.Partition(partition, len(bounds))  # type: ignore[arg-type]
    return dict(zip(names, parts))
