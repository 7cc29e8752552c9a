import tensorflow as tf

from trainer_module.training import distribution


def tf_config(task_type, index, **cluster):
    return {"cluster": cluster, "task": {"type": task_type, "index": index}}


def test_no_tf_config_is_one_chief_process():
    assert distribution.cluster_spec({}) == {}
    assert distribution.worker_count({}) == 0
    assert distribution.is_chief({})


def test_the_chief_task_is_chief_and_workers_are_not():
    cluster = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "ps": ["h3:1"]}
    assert distribution.worker_count(tf_config("chief", 0, **cluster)) == 3  # ps runs no steps
    assert distribution.is_chief(tf_config("chief", 0, **cluster))
    assert not distribution.is_chief(tf_config("worker", 0, **cluster))


def test_without_a_chief_task_worker_zero_is_chief():
    cluster = {"worker": ["h0:1", "h1:1"]}
    assert distribution.is_chief(tf_config("worker", 0, **cluster))
    assert not distribution.is_chief(tf_config("worker", 1, **cluster))


def test_one_task_in_tf_config_is_chief_whatever_its_type():
    assert distribution.is_chief(tf_config("worker", 0, worker=["h0:1"]))


def test_strategy_is_the_default_on_one_device_and_mirrored_with_several_gpus(monkeypatch):
    assert distribution.strategy_for({}, gpus=0) is tf.distribute.get_strategy()
    assert distribution.strategy_for({}, gpus=1) is tf.distribute.get_strategy()
    created = []
    monkeypatch.setattr(tf.distribute, "MirroredStrategy", lambda: created.append("mirrored"))
    distribution.strategy_for({}, gpus=4)
    assert created == ["mirrored"]


def test_several_workers_in_tf_config_get_the_multi_worker_strategy(monkeypatch):
    created = []
    monkeypatch.setattr(
        distribution.MultiWorkerMirroredStrategyForKeras,
        "__init__",
        lambda self: created.append("multi-worker"),
    )
    config = tf_config("worker", 0, chief=["h0:1"], worker=["h1:1"])
    assert isinstance(
        distribution.strategy_for(config, gpus=0), tf.distribute.MultiWorkerMirroredStrategy
    )
    assert created == ["multi-worker"]


def test_global_batch_scales_with_replicas():
    assert distribution.global_batch_size(32) == 32
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
    assert distribution.global_batch_size(32, mirrored) == 32 * mirrored.num_replicas_in_sync
