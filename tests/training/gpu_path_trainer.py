"""Each family's tiny Trainer run as it runs on a GPU worker, on this machine's CPU, in a process
of its own (logical devices are fixed before TensorFlow starts):

- `mirrored`: two logical CPU devices stand in for two GPUs, and run_fn trains under
  MirroredStrategy over them (what distribution.strategy_for picks with two GPUs);
- `mirrored_float16`: the same with the dtype policy `mixed_precision=auto` picks on a GPU
  (float16 compute, float32 variables, loss scaling), what a worker with two GPUs runs (the
  loss scale and the gradients' all-reduce inside one replica context).

Each family trains, exports, and its export answers raw input; one JSON line per family says
what ran: {"family", "strategy", "replicas", "policy", "optimizer", "variable_dtypes",
"answer_dtypes", "answer"}. One family per process under `mirrored`: a second
MirroredStrategy in the same process reuses the first one's collective instance keys (a test
harness limit; a training worker creates one strategy).

Usage: python -m tests.training.gpu_path_trainer (mirrored | mirrored_float16) WORK_DIR FAMILY...
"""

import json
import os
import sys

import tensorflow as tf

MODES = ("mirrored", "mirrored_float16")


def configure(mode: str) -> None:
    if mode.startswith("mirrored"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
        )
        from trainer_module.training import distribution

        devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        assert len(devices) == 2, devices
        # What run_fn gets on a machine with two GPUs, over the two logical CPUs.
        distribution.strategy_for = lambda tf_config, gpus: tf.distribute.MirroredStrategy(devices)


def run(mode: str, family: str, work_dir: str) -> dict:
    from tests import conftest
    from tests.family_util import run_family

    seen = {}
    from trainer_module.training import run_fn as run_fn_module

    original = run_fn_module.precision_policy

    def precision_policy(setting, gpus, cpu_flags=None):
        seen["policy"] = original(setting, gpus, cpu_flags)
        return seen["policy"]

    run_fn_module.precision_policy = precision_policy
    rows, spec, overrides, extra = family_data(conftest, family, work_dir)
    result = run_family(
        family,
        rows,
        spec,
        os.path.join(work_dir, family),
        overrides=overrides,
        train_steps=4,
        mixed_precision="mixed_float16" if mode.endswith("float16") else "off",
        **extra,
    )
    strategy = result.model.distribute_strategy
    answer, dtypes = serve(result.export_dir, family, rows)
    return {
        "family": family,
        "strategy": type(strategy).__name__,
        "replicas": strategy.num_replicas_in_sync,
        "policy": seen.get("policy"),
        "optimizer": type(result.trained.optimizer).__name__,
        "variable_dtypes": sorted({v.dtype for v in result.model.trainable_variables}),
        "answer_dtypes": dtypes,
        "answer": answer,
    }


def family_data(conftest, family: str, work_dir: str):
    """(rows, feature spec, overrides, run_family's other arguments) of a family's tiny run."""
    if family in ("text_encoder", "bert"):
        overrides = {"vocab_size": 100, "max_length": 12, "truncation_head": 8}
        if family == "bert":
            from lab.tiny_bert import write_tiny_checkpoint

            checkpoint = write_tiny_checkpoint(
                os.path.join(work_dir, "bert_checkpoint"),
                style="pretraining",
                hidden_dim=16,
                intermediate_dim=32,
                max_sequence_length=64,
            )
            overrides = {
                "backbone_preset": checkpoint,
                "sequence_length": 16,
                "truncation_head": 4,
                "batch_size": 8,
                "length_multiple": 4,
                "jit_compile": False,
            }
        return conftest.REVIEWS, conftest.review_spec(), overrides, {}
    if family == "translator":
        rows = [{"source": s, "target": t} for s, t in conftest.PAIRS]
        overrides = {"max_source_length": 12, "max_target_length": 12, "batch_size": 4}
        return rows, conftest.pair_spec(), overrides, {}
    from tests.image_util import encode

    rows = [
        {"image": encode(conftest.picture(name, 16, seed)), "label": label, "label_name": name}
        for seed in range(2)
        for label, name in enumerate(conftest.COLOURS)
    ]
    return rows, conftest.image_spec(), {"batch_size": 6, "crop_padding": 0}, {}


def serve(export_dir: str, family: str, rows) -> tuple:
    """The export's answer to the first row's raw input, and the dtypes of its numeric
    outputs, through the raw-input signature a client calls."""
    from trainer_module.serving.contract import CLASSIFY_IMAGE, CLASSIFY_TEXT, TRANSLATE

    model = tf.saved_model.load(export_dir)
    if family == "translator":
        outputs = model.signatures[TRANSLATE](source=tf.constant([rows[0]["source"]]))
    elif family == "vit":
        outputs = model.signatures[CLASSIFY_IMAGE](image=tf.constant([rows[0]["image"]]))
    else:
        outputs = model.signatures[CLASSIFY_TEXT](text=tf.constant([rows[0]["text"]]))
    dtypes = {k: v.dtype.name for k, v in outputs.items() if v.dtype.is_floating}
    answer = {
        k: v.numpy().tolist() if v.dtype.is_floating else v.numpy().astype(str).tolist()
        for k, v in outputs.items()
    }
    return answer, dtypes


def main(mode: str, work_dir: str, families) -> None:
    configure(mode)
    for family in families:
        line = run(mode, family, work_dir)
        line["variable_dtypes"] = [str(d) for d in line["variable_dtypes"]]
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in MODES:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
