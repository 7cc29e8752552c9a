"""Benchmark: the translation pipeline on Multi30k German -> English (29,000 training pairs).

    .venv/bin/python -m benchmarks.translation_pipeline [--data DIR] [--output DIR]
        [--epochs 10] [--preset base] [--set KEY=VALUE ...]
    .venv/bin/python -m benchmarks.translation_pipeline --serving MODEL_DIR [--data DIR]
        [--intra-op-threads N]    # serving speed of any exported translator, as JSON

Reads `train.{de,en}.gz` and `val.{de,en}.gz` from `../shared/data/multi30k/` (Multi30k task 1;
the 1,014 `val` pairs are the evaluation split; test2016 is not included there). Runs every
component with LocalDagRunner in this process and prints both BLEUs on val (TFMA, decoded with
the preset's beam width: cased with sacreBLEU's 13a tokenization, and lower-cased with
punctuation split off, sacreBLEU `tokenize="none"`, the published recipes' BLEU), masked token
accuracy, the vocabulary sizes, target words per second in training, serving speed (in a fresh
process, with TensorFlow's default threads and with one thread per op), wall time
per component and peak memory, each beside its target or published anchor with the ratio.
Writes the same as JSON to <output>/translation_benchmark.json.
"""

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time

from benchmarks import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(REPO, "..", "shared", "data", "multi30k")
VAL_PAIRS = 1_014

REFERENCES = [
    (
        "BLEU lower-cased tokenized, val",
        "bleu_lowercase_tokenized",
        41.0,
        "target (higher is better)",
    ),
    (
        "BLEU lower-cased tokenized",
        "bleu_lowercase_tokenized",
        38.26,
        "before: word vocabularies, 2026-11-21",
    ),
    (
        "BLEU lower-cased tokenized",
        "bleu_lowercase_tokenized",
        36.5,
        "anchor: 3+3 layers, d_model 256, 10 GPU epochs, test2016",
    ),
    ("training time (min)", "fit_minutes", 45.0, "target (lower is better)"),
    ("peak memory (GB)", "peak_memory_gb", 8.0, "target (lower is better)"),
    ("serving, one sentence (ms)", "latency_ms_batch_1", 50.0, "target (lower is better)"),
    (
        "serving, batches of 64 (sentences/s)",
        "sentences_per_second_batch_64",
        30.0,
        "target (higher is better)",
    ),
    (
        "serving, one sentence, 1 thread/op (ms)",
        "latency_ms_batch_1_one_thread",
        50.0,
        "target (lower is better)",
    ),
    (
        "serving, batches of 64, 1 thread/op (/s)",
        "sentences_per_second_batch_64_one_thread",
        30.0,
        "target (higher is better)",
    ),
]


def target_tokens(data_dir: str) -> int:
    """Target-side words per epoch (words and punctuation, plus [END]): a measure of training
    speed that does not depend on the tokenizer."""
    with gzip.open(os.path.join(data_dir, "train.en.gz"), "rt", encoding="utf-8") as f:
        return sum(len(re.sub(r"([^\w\s])", r" \1 ", line.lower()).split()) + 1 for line in f)


def serving_speed(model_dir: str, data_dir: str, intra_op_threads: int = 0) -> dict:
    """The `translate` signature of the SavedModel at model_dir on raw val sentences: median
    latency of one sentence, and sentences per second in batches of 64. Measured in a fresh
    process, as a server would load it: TensorFlow fixes its thread pools when it starts
    (`intra_op_threads` 0: its default, one per core)."""
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--serving",
        model_dir,
        "--data",
        data_dir,
        "--intra-op-threads",
        str(intra_op_threads),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(finished.stdout.strip().splitlines()[-1])


def _measure_serving(model_dir: str, data_dir: str, intra_op_threads: int) -> dict:
    import statistics

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the WordPiece ops)

    if intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
    with gzip.open(os.path.join(data_dir, "val.de.gz"), "rt", encoding="utf-8") as f:
        sentences = [line.strip() for line in f][:256]
    translate = tf.saved_model.load(model_dir).signatures["translate"]
    translate(source=tf.constant(sentences[:1]))  # warm up
    single = []
    for sentence in sentences[:30]:
        started = time.perf_counter()
        translate(source=tf.constant([sentence]))
        single.append(time.perf_counter() - started)
    started = time.perf_counter()
    for i in range(0, len(sentences), 64):
        translate(source=tf.constant(sentences[i : i + 64]))
    return {
        "latency_ms_batch_1": round(1000 * statistics.median(single), 1),
        "sentences_per_second_batch_64": round(len(sentences) / (time.perf_counter() - started), 1),
    }


def keep_snapshots(folder: str) -> None:
    """Also writes every snapshot the Trainer's checkpoint averaging takes to `folder` (the
    Trainer runs in this process), so that one training measures several averages."""
    import numpy as np

    from trainer_module.training import averaging

    os.makedirs(folder, exist_ok=True)
    on_epoch_end = averaging.AverageLast.on_epoch_end

    def recording(self, epoch, logs=None):
        on_epoch_end(self, epoch, logs)
        weights = self.snapshots[epoch + 1]
        np.savez(os.path.join(folder, f"interval-{epoch + 1}.npz"), *weights)

    averaging.AverageLast.on_epoch_end = recording


def averaged_bleus(folder: str, pipeline_root: str, history: dict, data_dir: str, ks) -> dict:
    """Lower-cased tokenized BLEU on val of the model averaged over its last k snapshots, for
    each k, each exported as the Trainer exports it and decoded by its `translate` signature
    (in batches of 64 sorted by length; sacreBLEU corpus BLEU, tokenize "none", as TFMA's)."""
    import glob
    import tempfile

    import keras
    import numpy as np
    import sacrebleu
    import tensorflow as tf
    import tensorflow_transform as tft

    from trainer_module.serving import custom_ops  # noqa: F401
    from trainer_module.translator.config import DECODER_INPUT_IDS, SOURCE_IDS, TranslatorConfig
    from trainer_module.translator.metrics import words
    from trainer_module.translator.model import Translator
    from trainer_module.translator.serving import export

    intervals = sorted(
        int(os.path.basename(p)[len("interval-") : -len(".npz")])
        for p in glob.glob(os.path.join(folder, "interval-*.npz"))
    )
    snapshots = {}
    for interval in intervals:
        with np.load(os.path.join(folder, f"interval-{interval}.npz")) as arrays:
            snapshots[interval] = [arrays[f"arr_{i}"] for i in range(len(arrays.files))]
    (transform_dir,) = glob.glob(os.path.join(pipeline_root, "Transform", "transform_graph", "*"))
    tf_transform_output = tft.TFTransformOutput(transform_dir)
    config = TranslatorConfig.from_dict(history["config"])
    with gzip.open(os.path.join(data_dir, "val.de.gz"), "rt", encoding="utf-8") as f:
        sources = [line.strip() for line in f]
    with gzip.open(os.path.join(data_dir, "val.en.gz"), "rt", encoding="utf-8") as f:
        references = [words(line.strip()) for line in f]
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    bleus = {}
    for k in ks:
        if k > len(intervals):
            continue
        model = Translator(config)
        ids = keras.ops.ones((1, 2), dtype="int32")
        model({SOURCE_IDS: ids, DECODER_INPUT_IDS: ids})
        chosen = [snapshots[i] for i in intervals[-k:]]
        for variable, *values in zip(model.weights, *chosen):
            variable.assign(np.mean(values, axis=0).astype(values[-1].dtype))
        with tempfile.TemporaryDirectory() as export_dir:
            export(model, tf_transform_output, export_dir)
            translate = tf.saved_model.load(export_dir).signatures["translate"]
            hypotheses = [""] * len(sources)
            for start in range(0, len(order), 64):
                batch = order[start : start + 64]
                out = translate(source=tf.constant([sources[i] for i in batch]))["translation"]
                for i, text in zip(batch, out.numpy()):
                    hypotheses[i] = words(text.decode("utf-8"))
        score = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none").score
        bleus[f"bleu_lowercase_tokenized_average_last_{k}"] = round(score, 2)
        print(f"average of the last {k} evaluations: BLEU lower-cased tokenized {score:.2f}")
    return bleus


def serving_measures(model_dir: str, data_dir: str) -> dict:
    """serving_speed with TensorFlow's default threads, and with one thread per op (on few
    cores a single sentence's small ops lose more to splitting than they gain)."""
    default, one = serving_speed(model_dir, data_dir), serving_speed(model_dir, data_dir, 1)
    return {**default, **{f"{key}_one_thread": value for key, value in one.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    from pipeline.tasks import get_task

    task = get_task("translation")
    report.add_pipeline_arguments(
        parser, "translation_pipeline", task.default_epochs, task.recipe_preset
    )
    parser.add_argument(
        "--serving",
        metavar="MODEL_DIR",
        help="only measure serving of this SavedModel (prints JSON)",
    )
    parser.add_argument("--intra-op-threads", type=int, default=0)
    args = parser.parse_args()
    if args.serving:
        print(json.dumps(_measure_serving(args.serving, args.data, args.intra_op_threads)))
        return 0

    overrides = report.overrides(args)
    config = report.model_config("translation", args)
    eval_steps = -(-VAL_PAIRS // config.batch_size)
    snapshots = os.path.join(args.output, f"snapshots-{int(time.time())}")
    if config.average_last > 1:
        keep_snapshots(snapshots)
    summary, history = report.run_pipeline(args, "translation", args.data, eval_steps)
    fit_seconds, train_steps = history.get("fit_seconds"), history.get("train_steps")
    tokens = target_tokens(args.data) * args.epochs
    measured = {
        "bleu": summary["metrics"].get("bleu"),
        "bleu_lowercase_tokenized": summary["metrics"].get("bleu_lowercase_tokenized"),
        "token_accuracy": summary["metrics"].get("token_accuracy"),
        "source_vocab_size": history.get("config", {}).get("source_vocab_size"),
        "target_vocab_size": history.get("config", {}).get("target_vocab_size"),
        "fit_minutes": round(fit_seconds / 60, 1) if fit_seconds else None,
        "target_words_per_second": round(tokens / fit_seconds) if fit_seconds else None,
        "wall_seconds": summary["wall_seconds"],
        "peak_memory_gb": report.peak_memory_gb(),
    }
    if summary["pushed_model"]:
        measured.update(serving_measures(summary["pushed_model"], args.data))
    if config.average_last > 1:
        ks = sorted({1, 3, config.average_last})
        measured.update(averaged_bleus(snapshots, summary["pipeline_root"], history, args.data, ks))
    print(
        f"\nTranslation pipeline benchmark, Multi30k de->en ({report.machine()}): preset "
        f"{args.preset} {overrides or ''}, {train_steps} steps ({args.epochs} epochs), "
        f"{int(summary['metrics'].get('example_count') or 0)} val pairs, beam width "
        f"{config.beam_width}\n"
    )
    report.print_comparison(measured, REFERENCES)
    print(
        f"\nBLEU cased (sacreBLEU 13a) {measured['bleu']}; token accuracy (teacher-forced, "
        f"val) {measured['token_accuracy']}; vocabularies {measured['source_vocab_size']} "
        f"source, {measured['target_vocab_size']} target (+4 reserved); target words/s in "
        f"training {measured['target_words_per_second']}; pipeline wall time "
        f"{measured['wall_seconds']:.0f} s"
    )
    if "latency_ms_batch_1" in measured:
        for threads, suffix in (("default threads", ""), ("one thread per op", "_one_thread")):
            print(
                f"serving (translate, raw strings, {threads}): "
                f"{measured['latency_ms_batch_1' + suffix]} ms for one sentence, "
                f"{measured['sentences_per_second_batch_64' + suffix]} sentences/s in "
                f"batches of 64"
            )
    report.print_components(summary["components"])
    report.save(
        "translation_pipeline",
        report.result_name(args, "translator"),
        {
            "preset": args.preset,
            "overrides": overrides,
            "epochs": args.epochs,
            "train_steps": train_steps,
            "measured": measured,
            "metrics": summary["metrics"],
            "components": summary["components"],
            "history": history.get("history"),
            "blessed": summary["blessed"],
        },
        REFERENCES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
