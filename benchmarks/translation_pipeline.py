"""Benchmark: the translation pipeline on Multi30k German -> English (29,000 training pairs).

    .venv/bin/python -m benchmarks.translation_pipeline [--data DIR] [--output DIR]
        [--epochs 10] [--preset base] [--set KEY=VALUE ...]
    .venv/bin/python -m benchmarks.translation_pipeline --serving MODEL_DIR ... [--data DIR]
        [--intra-op-threads N]    # serving speed of exported translators, in turn, as JSON
    .venv/bin/python -m benchmarks.translation_pipeline --export SNAPSHOT PIPELINE_ROOT DIR
        [--export-precision float32|mixed_bfloat16] [--set stopping=heuristic ...]
    .venv/bin/python -m benchmarks.translation_pipeline --compare-serving DIR ... --name NAME
        # a run's snapshot exported by this tree's code; the serving speed of exports in turn

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
TRAIN_PAIRS = 29_000

REFERENCES = [
    ("BLEU cased, sacreBLEU 13a, val", "bleu", 41.0, "target (higher is better)"),
    (
        "BLEU lower-cased tokenized, val",
        "bleu_lowercase_tokenized",
        42.0,
        "target (higher is better)",
    ),
    (
        "BLEU lower-cased tokenized",
        "bleu_lowercase_tokenized",
        41.0,
        "anchor: 3+3, FFN 1024, 20 epochs, last 5 averaged, test2016",
    ),
    (
        "BLEU lower-cased tokenized",
        "bleu_lowercase_tokenized",
        38.19,
        "before: 3+3, FFN 512, 10 epochs, val, 2026-11-23",
    ),
    (
        "whole pipeline (min)",
        "pipeline_minutes",
        60.0,
        "target on the Zen 5 EPYC (lower is better)",
    ),
    ("peak memory (GB)", "peak_memory_gb", 8.0, "target (lower is better)"),
    ("serving, one sentence (ms)", "latency_ms_batch_1", 25.0, "target (lower is better)"),
    (
        "serving, batches of 64 (sentences/s)",
        "sentences_per_second_batch_64",
        100.0,
        "target (higher is better)",
    ),
    (
        "serving, one sentence, 1 thread/op (ms)",
        "latency_ms_batch_1_one_thread",
        25.0,
        "target (lower is better)",
    ),
    (
        "serving, batches of 64, 1 thread/op (/s)",
        "sentences_per_second_batch_64_one_thread",
        100.0,
        "target (higher is better)",
    ),
]


def target_tokens(data_dir: str) -> int:
    """Target-side words per epoch (words and punctuation, plus [END]): a measure of training
    speed that does not depend on the tokenizer."""
    with gzip.open(os.path.join(data_dir, "train.en.gz"), "rt", encoding="utf-8") as f:
        return sum(len(re.sub(r"([^\w\s])", r" \1 ", line.lower()).split()) + 1 for line in f)


def serving_speeds(model_dirs: list, data_dir: str, intra_op_threads: int = 0) -> dict:
    """The `translate` signature of each SavedModel on raw val sentences: median latency of one
    sentence (the first 100), and sentences per second in batches of 64 (the first 512),
    measured in turn (_measure_serving), in a fresh process, as a server would load them:
    TensorFlow fixes its thread pools when it starts (`intra_op_threads` 0: its default, one per
    core)."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.translation_pipeline",
        "--serving",
        *model_dirs,
        "--data",
        data_dir,
        "--intra-op-threads",
        str(intra_op_threads),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(finished.stdout.strip().splitlines()[-1])


def _measure_serving(model_dirs: list, data_dir: str, intra_op_threads: int) -> dict:
    """{model_dir: serving measures} (see serving_speeds). Several SavedModels are loaded side by
    side and measured in turn, a block of ten single sentences or one batch of 64 each, in a
    rotating order: the machine's drift (a third within an hour on a shared EPYC) then falls on
    each alike, and each block's first request also finds the other models' weights in the
    cache, as every request of a server with several models would."""
    import statistics

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the WordPiece ops)

    if intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
    with gzip.open(os.path.join(data_dir, "val.de.gz"), "rt", encoding="utf-8") as f:
        sentences = [line.strip() for line in f][:512]
    translates = {d: tf.saved_model.load(d).signatures["translate"] for d in model_dirs}
    for translate in translates.values():
        # Warm up: a first request of each batch size traces (and, with jit_compile, compiles).
        translate(source=tf.constant(sentences[:1]))
        translate(source=tf.constant(sentences[:64]))

    def in_turn(round_: int) -> list:
        turn = round_ % len(model_dirs)
        return model_dirs[turn:] + model_dirs[:turn]

    single: dict[str, list[float]] = {d: [] for d in model_dirs}
    translations: dict[str, dict[str, list]] = {d: {"alone": [], "batched": []} for d in model_dirs}

    def timed_translation(d, batch: list, kind: str) -> float:
        started = time.perf_counter()
        out = translates[d](source=tf.constant(batch))["translation"]
        seconds = time.perf_counter() - started
        translations[d][kind] += [text.decode("utf-8") for text in out.numpy()]
        return seconds

    for round_, start in enumerate(range(0, 100, 10)):
        for d in in_turn(round_):
            for sentence in sentences[start : start + 10]:
                single[d].append(timed_translation(d, [sentence], "alone"))
    batched = dict.fromkeys(model_dirs, 0.0)
    for round_, start in enumerate(range(0, len(sentences), 64)):
        for d in in_turn(round_):
            batched[d] += timed_translation(d, sentences[start : start + 64], "batched")
    return {
        d: {
            "latency_ms_batch_1": round(1000 * statistics.median(single[d]), 1),
            "sentences_per_second_batch_64": round(len(sentences) / batched[d], 1),
            "translations": translations[d],
        }
        for d in model_dirs
    }


def keep_snapshots(folder: str) -> None:
    """Also writes the weights after every evaluation to `folder` (the Trainer runs in this
    process): the snapshots the checkpoint averaging takes, or without averaging
    (average_last 1) the same weights, so that one training measures every epoch and several
    averages."""
    import keras
    import numpy as np

    from trainer_module.training import averaging

    os.makedirs(folder, exist_ok=True)

    def write(epoch, weights):
        np.savez(os.path.join(folder, f"interval-{epoch + 1}.npz"), *weights)

    class Recording(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            write(epoch, [keras.ops.convert_to_numpy(w) for w in self.model.weights])

    on_epoch_end, make = averaging.AverageLast.on_epoch_end, averaging.callback

    def recording(self, epoch, logs=None):
        on_epoch_end(self, epoch, logs)
        write(epoch, self.snapshots[epoch + 1])

    # Patched for this benchmark process only: every averaging callback also records.
    averaging.AverageLast.on_epoch_end = recording  # type: ignore[method-assign]
    averaging.callback = lambda k, backup: make(k, backup) or Recording()


def snapshot_bleus(
    folder: str, pipeline_root: str, history: dict, data_dir: str, until: int | None = None
) -> dict:
    """BLEU on val of the weights after single evaluations (epochs against BLEU), of the
    average of the last k, and of the best average decoded with other beam widths, length
    penalties, stopping rules and output vocabularies: all from the one training's snapshots,
    each exported as the Trainer exports it, and scored by val_bleus.
    `until`: only the snapshots of the first `until` evaluations, as if the training had
    stopped there (the inverse square-root decay does not depend on the length of the run)."""
    import glob
    import tempfile

    from trainer_module.translator.config import TranslatorConfig

    intervals = sorted(
        int(os.path.basename(p)[len("interval-") : -len(".npz")])
        for p in glob.glob(os.path.join(folder, "interval-*.npz"))
    )
    intervals = [i for i in intervals if until is None or i <= until]
    snapshots = {i: load_snapshot(os.path.join(folder, f"interval-{i}.npz")) for i in intervals}
    tf_transform_output = transform_output(pipeline_root)
    trained = TranslatorConfig.from_dict(history["config"])
    precision = history.get("precision", "float32")

    def bleus(chosen, config) -> tuple:
        with tempfile.TemporaryDirectory() as export_dir:
            export_average(chosen, config, tf_transform_output, export_dir, precision)
            return val_bleus(export_dir, data_dir)

    rows = []

    def measure(weights: str, chosen, config) -> float:
        cased, lower = bleus(chosen, config)
        decoding = [config.beam_width, config.length_penalty, config.stopping]
        rows.append([weights, *decoding, config.output_vocabulary, cased, lower])
        print(
            f"{weights}, beam {config.beam_width}, length penalty {config.length_penalty}, "
            f"stopping {config.stopping}, output vocabulary {config.output_vocabulary}: "
            f"BLEU cased {cased:.2f}, lower-cased {lower:.2f}"
        )
        return lower

    step = max(1, len(intervals) // 4)
    for interval in sorted(set(intervals[step - 1 :: step]) | {intervals[-1]}):
        measure(f"after evaluation {interval}", [snapshots[interval]], trained)
    best_k, best = 1, rows[-1][-1]
    for k in sorted({3, 5, 10, trained.average_last} - {1}):
        if k <= len(intervals):
            lower = measure(
                f"average of the last {k}", [snapshots[i] for i in intervals[-k:]], trained
            )
            best_k, best = (k, lower) if lower > best else (best_k, best)
    chosen = [snapshots[i] for i in intervals[-best_k:]]
    other_rule = "heuristic" if trained.stopping == "exact" else "exact"
    other_vocabulary = "all" if trained.output_vocabulary == "targets" else "targets"
    for changed in (
        {"beam_width": 5},
        {"beam_width": 4, "length_penalty": 0.0},
        {"beam_width": 4, "length_penalty": 1.0},
        {"stopping": other_rule},
        {"output_vocabulary": other_vocabulary},
    ):
        config = trained.replace(**changed)
        if config != trained:  # the trained decoding is already a row above
            measure(f"average of the last {best_k}", chosen, config)
    return {
        "title": f"BLEU on val from the snapshots of one training ({len(intervals)} evaluations)",
        "columns": [
            "weights",
            "beam",
            "length penalty",
            "stopping",
            "output vocabulary",
            "BLEU cased",
            "BLEU lower-cased",
        ],
        "rows": rows,
    }


def val_bleus(export_dir: str, data_dir: str) -> tuple:
    """(cased sacreBLEU 13a, lower-cased BLEU with punctuation split off, as TFMA's) of an
    export's `translate` signature on the val pairs, in batches of 64 sorted by length."""
    import sacrebleu
    import tensorflow as tf

    from trainer_module.translator.metrics import words

    with gzip.open(os.path.join(data_dir, "val.de.gz"), "rt", encoding="utf-8") as f:
        sources = [line.strip() for line in f]
    with gzip.open(os.path.join(data_dir, "val.en.gz"), "rt", encoding="utf-8") as f:
        references = [line.strip() for line in f]
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    translate = tf.saved_model.load(export_dir).signatures["translate"]
    hypotheses = [""] * len(sources)
    for start in range(0, len(order), 64):
        batch = order[start : start + 64]
        out = translate(source=tf.constant([sources[i] for i in batch]))["translation"]
        for i, text in zip(batch, out.numpy()):
            hypotheses[i] = text.decode("utf-8")
    cased = sacrebleu.corpus_bleu(hypotheses, [references]).score
    lower = sacrebleu.corpus_bleu(
        [words(h) for h in hypotheses], [[words(r) for r in references]], tokenize="none"
    ).score
    return round(cased, 2), round(lower, 2)


def load_snapshot(path: str) -> list:
    """The weights keep_snapshots wrote to `path`, in the model's order."""
    import numpy as np

    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


def transform_output(pipeline_root: str):
    import glob

    import tensorflow_transform as tft

    (transform_dir,) = glob.glob(os.path.join(pipeline_root, "Transform", "transform_graph", "*"))
    return tft.TFTransformOutput(transform_dir)


def export_average(
    chosen: list, config, tf_transform_output, export_dir: str, precision: str
) -> None:
    """The average of the `chosen` snapshots, exported by this tree's code as the Trainer
    exports it: under the dtype policy that it trained under (`precision`, its history's), so
    that a mixed-precision model decodes in bfloat16 as the pushed one does."""
    import keras
    import numpy as np

    from trainer_module.serving import custom_ops  # noqa: F401
    from trainer_module.translator.config import DECODER_INPUT_IDS, SOURCE_IDS
    from trainer_module.translator.model import Translator
    from trainer_module.translator.serving import export

    with report.dtype_policy(precision):
        model = Translator(config)
        ids = keras.ops.ones((1, 2), dtype="int32")
        model({SOURCE_IDS: ids, DECODER_INPUT_IDS: ids})
        for variable, *values in zip(model.weights, *chosen):
            variable.assign(np.mean(values, axis=0).astype(values[-1].dtype))
        export(model, tf_transform_output, export_dir)


def compare_serving(exports: list, data_dir: str, repeats: int, name: str) -> int:
    """serving_measures of several SavedModels (the same weights exported by two versions of
    the code, say), measured side by side in one process (_measure_serving: in turn, so that
    the machine's drift falls on each alike), in `repeats` fresh processes per thread setting;
    the medians, how many of each export's translations are the first export's, and each
    export's BLEU on the val pairs, written as results NAME."""
    import statistics

    runs: dict[str, list] = {path: [] for path in exports}
    translations = {}
    for _ in range(repeats):
        measures = serving_measures(exports, data_dir)
        for path in exports:
            translations[path] = measures[path].pop("translations")
            runs[path].append(measures[path])
            print(path, runs[path][-1], flush=True)

    def same_as_first(path: str) -> str:
        first = translations[exports[0]]
        counts = [
            f"{sum(a == b for a, b in zip(translations[path][kind], first[kind]))}"
            f"/{len(first[kind])}"
            for kind in ("alone", "batched")
        ]
        return ", ".join(counts)

    keys = [
        "latency_ms_batch_1",
        "sentences_per_second_batch_64",
        "latency_ms_batch_1_one_thread",
        "sentences_per_second_batch_64_one_thread",
    ]
    rows = [
        [os.path.basename(os.path.normpath(path))]
        + [round(statistics.median(run[key] for run in runs[path]), 1) for key in keys]
        + [same_as_first(path), *val_bleus(path, data_dir)]
        for path in exports
    ]
    columns = [
        "export",
        "one sentence (ms)",
        "batches of 64 (sentences/s)",
        "one sentence, 1 thread/op (ms)",
        "batches of 64, 1 thread/op (sentences/s)",
        "translations as the first export's (alone, in batches)",
        "BLEU cased (val)",
        "BLEU lower-cased (val)",
    ]
    report.print_table(columns, [[str(v) for v in row] for row in rows])
    title = (
        "the translate signature on the val sentences, the exports side by side in turn; "
        f"median of {repeats} processes"
    )
    report.save(
        "translation_pipeline",
        name,
        {"tables": [{"title": title, "columns": columns, "rows": rows}]},
    )
    return 0


def rescore(folder: str, pipeline_root: str, data_dir: str, until, name: str) -> int:
    """`snapshot_bleus` of an earlier run (its Trainer's history.json gives the config),
    written as results NAME."""
    history = report.trainer_history(pipeline_root)
    table = snapshot_bleus(folder, pipeline_root, history, data_dir, until)
    report.save("translation_pipeline", name, {"tables": [table]})
    return 0


def efficiency_of(history: dict, pipeline_root: str) -> dict:
    """The Trainer's arithmetic against this machine's matmul peak (report.efficiency, the peak
    measured in this run): one training step of the trained config (its loss and optimizer)
    counted on its graph, for a batch of the training split's mean source and target lengths
    in pieces (padding in a length bucket is not counted: useful arithmetic)."""
    import glob

    import numpy as np
    import tensorflow as tf
    import tensorflow_transform as tft

    from lab.flops import training_flops
    from trainer_module.translator.config import (
        DECODER_INPUT_IDS,
        PAD_ID,
        SOURCE_IDS,
        TARGET_IDS,
        TranslatorConfig,
    )
    from trainer_module.translator.model import build_model

    if not history:
        return {}
    (transform_dir,) = glob.glob(os.path.join(pipeline_root, "Transform", "transform_graph", "*"))
    spec = tft.TFTransformOutput(transform_dir).transformed_feature_spec()
    files = glob.glob(
        os.path.join(pipeline_root, "Transform", "transformed_examples", "*", "Split-train", "*")
    )
    lengths: dict[str, list] = {SOURCE_IDS: [], TARGET_IDS: []}
    dataset = tf.data.TFRecordDataset(files, compression_type="GZIP").batch(1024)
    for batch in dataset:
        parsed = tf.io.parse_example(batch, {key: spec[key] for key in lengths})
        for key in lengths:
            lengths[key].extend(np.count_nonzero(parsed[key].numpy() != PAD_ID, axis=1))
    source, target = (max(1, round(float(np.mean(lengths[key])))) for key in lengths)
    config = TranslatorConfig.from_dict(history["config"])
    with report.dtype_policy(history.get("precision", "float32")):
        model = build_model(config, history["train_steps"])
        ids = np.full((config.batch_size, source), 5, "int32")
        targets = np.full((config.batch_size, target), 5, "int32")
        step = training_flops(model, {SOURCE_IDS: ids, DECODER_INPUT_IDS: targets}, targets)
    return {
        "mean_source_pieces": source,
        "mean_target_pieces": target,
        **report.efficiency(step, history),
    }


def serving_measures(model_dirs: list, data_dir: str) -> dict:
    """{model_dir: serving_speeds with TensorFlow's default threads, and with one thread per op
    (on few cores a single sentence's small ops lose more to splitting than they gain), and the
    translations ("translations": of the sentences alone and in batches, with the default
    threads)}."""
    default, one = serving_speeds(model_dirs, data_dir), serving_speeds(model_dirs, data_dir, 1)
    for measures in one.values():
        del measures["translations"]
    return {
        d: {**default[d], **{f"{key}_one_thread": value for key, value in one[d].items()}}
        for d in model_dirs
    }


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
        nargs="+",
        metavar="MODEL_DIR",
        help="only measure serving of these SavedModels, in turn (prints JSON)",
    )
    parser.add_argument("--intra-op-threads", type=int, default=0)
    parser.add_argument(
        "--rescore",
        nargs=2,
        metavar=("SNAPSHOTS", "PIPELINE_ROOT"),
        help="only tabulate BLEU from an earlier run's snapshots folder and pipeline root",
    )
    parser.add_argument(
        "--until", type=int, help="with --rescore: the snapshots of the first N evaluations"
    )
    parser.add_argument(
        "--export",
        nargs=3,
        metavar=("SNAPSHOT", "PIPELINE_ROOT", "EXPORT_DIR"),
        help="only export an earlier run's snapshot (interval-N.npz) with this tree's code "
        "(decoding as the run's config says, with the --set overrides: stopping=heuristic)",
    )
    parser.add_argument(
        "--export-precision",
        choices=["float32", "mixed_bfloat16"],
        help="with --export: the dtype policy to export under (default: the run's own)",
    )
    parser.add_argument(
        "--compare-serving",
        nargs="+",
        metavar="MODEL_DIR",
        help="only measure the serving speed of these SavedModels in turn (--repeats times)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="with --compare-serving")
    args = parser.parse_args()
    if args.export:
        from trainer_module.translator.config import TranslatorConfig

        snapshot, pipeline_root, export_dir = args.export
        history = report.trainer_history(pipeline_root)
        export_average(
            [load_snapshot(snapshot)],
            TranslatorConfig.from_dict(history["config"]).replace(**report.overrides(args)),
            transform_output(pipeline_root),
            export_dir,
            args.export_precision or history.get("precision", "float32"),
        )
        return 0
    if args.compare_serving:
        return compare_serving(args.compare_serving, args.data, args.repeats, args.name)
    if args.serving:
        print(json.dumps(_measure_serving(args.serving, args.data, args.intra_op_threads)))
        return 0
    if args.rescore:
        snapshots, pipeline_root = args.rescore
        return rescore(snapshots, pipeline_root, args.data, args.until, args.name)

    overrides = report.overrides(args)
    config = report.model_config("translation", args)
    eval_steps = -(-VAL_PAIRS // config.batch_size)
    snapshots = os.path.join(args.output, f"snapshots-{int(time.time())}")
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
        # What `run` projected before Transform (components/cost_estimate), to compare.
        "projected_minutes": (summary.get("cost") or {}).get("projected_minutes"),
        "pipeline_minutes": round(summary["wall_seconds"] / 60, 1),
        "peak_memory_gb": report.peak_memory_gb(),
    }
    if fit_seconds:
        measured["train_sentences_per_second"] = round(TRAIN_PAIRS * args.epochs / fit_seconds, 1)
    measured.update(efficiency_of(history, summary["pipeline_root"]))
    if summary["pushed_model"]:
        pushed = summary["pushed_model"]
        measures = serving_measures([pushed], args.data)[pushed]
        del measures["translations"]
        measured.update(measures)
    tables = [snapshot_bleus(snapshots, summary["pipeline_root"], history, args.data)]
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
    if "fraction_of_peak" in measured:
        print(
            f"training: {measured['train_sentences_per_second']} sentences/s (validation "
            f"included), {measured['step_gflop']} GFLOP per step of "
            f"{measured['mean_source_pieces']}+{measured['mean_target_pieces']} pieces, "
            f"{measured['achieved_tflops']} TFLOP/s = "
            f"{measured['fraction_of_peak']:.1%} of this machine's {measured['precision']} matmul "
            f"peak ({measured['peak_tflops']} TFLOP/s, measured now)"
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
            "tables": tables,
        },
        REFERENCES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
