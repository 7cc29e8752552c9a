"""Where training runs: the distribution strategy and the chief, read from the environment the
Trainer runs in (TF_CONFIG on multi-worker Vertex AI jobs, visible GPUs)."""

import json
import os
from typing import Mapping, Optional

import tensorflow as tf


def cluster_spec(environ: Mapping[str, str] = os.environ) -> dict:
    """TF_CONFIG's {"cluster": {...}, "task": {"type", "index"}}, or {} when it is unset."""
    return json.loads(environ.get("TF_CONFIG") or "{}")


def worker_count(tf_config: dict) -> int:
    """How many processes train together: chief and workers (parameter servers and
    evaluators do not run steps)."""
    cluster = tf_config.get("cluster", {})
    return sum(len(cluster.get(role, [])) for role in ("chief", "master", "worker"))


def is_chief(tf_config: dict) -> bool:
    """Whether this process writes the outputs: the `chief` task, or worker 0 of a cluster
    without one (TensorFlow's convention); every process is chief without a cluster."""
    if worker_count(tf_config) <= 1:
        return True
    cluster, task = tf_config["cluster"], tf_config.get("task", {})
    if "chief" in cluster or "master" in cluster:
        return task.get("type") in ("chief", "master")
    return task.get("type") == "worker" and int(task.get("index", 0)) == 0


class MultiWorkerMirroredStrategyForKeras(tf.distribute.MultiWorkerMirroredStrategy):
    """MultiWorkerMirroredStrategy with the `reduce` Keras 3 (3.12) expects of it.

    Keras' `fit` reduces a whole distributed data batch in one call (to build the model) and
    each scalar metric with `axis=0`; TensorFlow 2.16's collective reduce takes one value at a
    time and rejects an axis on a scalar. Here nested values are reduced leaf by leaf, and a
    scalar's axis is dropped (the mean over replicas is then the mean Keras asked for).
    """

    def reduce(self, reduce_op, value, axis):
        def reduce_leaf(leaf):
            rank = self.experimental_local_results(leaf)[0].shape.rank
            return super(MultiWorkerMirroredStrategyForKeras, self).reduce(
                reduce_op, leaf, None if rank == 0 else axis
            )

        return tf.nest.map_structure(reduce_leaf, value)


def strategy_for(tf_config: dict, gpus: int) -> tf.distribute.Strategy:
    """MultiWorkerMirroredStrategy when TF_CONFIG names several workers, MirroredStrategy on one
    machine with several GPUs, else the default strategy.

    Create it before any other TensorFlow op runs: collective ops are configured at start-up.
    """
    if worker_count(tf_config) > 1:
        return MultiWorkerMirroredStrategyForKeras()
    if gpus > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def shard_by_data(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """Has each worker take every n-th batch instead of every n-th file: Transform writes
    fewer files than a cluster can have workers."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def global_batch_size(per_replica: int, strategy: Optional[tf.distribute.Strategy] = None) -> int:
    """The batch one step consumes over all replicas."""
    strategy = strategy or tf.distribute.get_strategy()
    return per_replica * strategy.num_replicas_in_sync
