"""Benchmark: the served translator's decoding (trainer_module/translator/decoding.py) against
the baseline it replaced, KerasHub's samplers (GreedySampler, BeamSampler) over the same cached
decoding steps.

    .venv/bin/python -m benchmarks.translation_decoding [--preset base] [--batch-sizes 1 64]
        [--mixed-precision auto] [--name beam-search]

A randomly initialised model of the preset's shape (weights do not change the cost of a step)
decodes source sentences of 14 tokens, greedy and with beam search, inside a tf.function as in
the SavedModel (length penalty 0, as KerasHub's). Random weights rarely emit [END], so every
sentence runs the full `max_decode_length` steps: the worst case, where the search's early stop
does not help (the pipeline benchmark measures the trained model). Also the same search
compiled by XLA (`jit_compile`, here at every batch size). Prints the median time per batch (after
a first call that traces and compiles) and the ratios, checks that every variant returns the
search's translations, and writes the table to benchmarks/results/translation_decoding/.

With `--profile`, TensorFlow's profiler also splits the search's op time at beam 4 (the served
width) by part, per decoding step: the output projection, the blocks' projections and
feed-forward networks, attention, layer norm, the ranking, the cache's reordering; and the
encoder, once per sentence. One sentence's latency (issue 44's target) is the first column.

With `--projection`, only the output projection of a step's few rows: one product against a
row at a time (layers.few_rows_matmul), for the joint vocabulary and its target side. With
`--ranking`, only the ranking of a step's logits: top_k over each row against in blocks
(decoding.best_per_row)."""

import argparse
import math
import re
import statistics
import sys
import time
from typing import cast

from benchmarks import report

SOURCE_VOCABULARY, TARGET_VOCABULARY, SOURCE_LENGTH = 7_800, 5_900, 14
JOINT_VOCABULARY = 9_600  # about what Transform keeps of the base preset's shared vocabulary
TARGET_SIDE = 5_100  # about the ids of it that Multi30k's training targets hold


def keras_hub_generate(model, max_decode_length: int, beam_width: int):
    """The baseline: the same cached steps driven by KerasHub's sampler."""
    import keras_hub
    import tensorflow as tf

    from trainer_module.translator.config import END_ID, PAD_ID, START_ID
    from trainer_module.translator.decoding import NEVER

    sampler = (
        keras_hub.samplers.GreedySampler()
        if beam_width == 1
        else keras_hub.samplers.BeamSampler(num_beams=beam_width)
    )

    def next_token_logits(prompt, cache, index):
        # The last token by a gather, as the search takes it: a slice between tensor bounds
        # has no static length, and the cache would change shape inside the sampler's loop.
        last = tf.gather(prompt, index - 1, axis=1)[:, None]
        logits, cache = model.decode_step(last, index - 1, cache, shift=True)  # fixed shapes
        logits = tf.cast(logits[:, 0, :], tf.float32)
        vocab = tf.shape(logits)[-1]
        banned = tf.one_hot(PAD_ID, vocab) + tf.one_hot(START_ID, vocab)
        logits = logits + NEVER * banned[None, :]
        finished = tf.reduce_any(tf.equal(prompt[:, :index], END_ID), axis=1)
        pad_only = NEVER * (1.0 - tf.one_hot(PAD_ID, vocab))
        return tf.where(finished[:, None], pad_only[None, :], logits), None, cache

    def generate(source_ids):
        memory, source_mask, _ = model.encode(source_ids, training=False)
        batch = tf.shape(source_ids)[0]
        prompt = tf.concat(
            [tf.fill([batch, 1], START_ID), tf.zeros([batch, max_decode_length], tf.int32)], axis=1
        )
        mask = tf.concat(
            [tf.ones([batch, 1], tf.bool), tf.zeros([batch, max_decode_length], tf.bool)], axis=1
        )
        cache = model.start_decoding(memory, source_mask, max_decode_length + 1)
        cache.pop("output_table", None)  # KerasHub repeats every entry per beam: batch-first only
        return sampler(
            next_token_logits, prompt, cache=cache, index=1, mask=mask, stop_token_ids=[END_ID]
        )

    return generate


# What a profiled op of the search ("scope/name:Type") belongs to: by a scope of its name (Keras
# numbers repeated scopes: feed_forward_5), the first match, else by its type. Ops outside the
# decoding loop run once per batch.
PARTS_BY_SCOPE = (
    (r"\w*norm(_\d+)?", "layer norm"),  # self_attention_norm, feed_forward_norm, ...
    (r"feed_forward(_\d+)?", "feed-forward networks"),
    (r"(query|key|value|output)(_\d+)?", "attention projections"),
    (r"output_projection(_\d+)?", "output projection"),  # an untied one (a Dense)
    (r"ranking(_\d+)?", "ranking"),  # decoding.best_per_row, its log-sum-exp included
)
PARTS_BY_TYPE = {
    "MatMul": "output projection",  # a tied one: the loop's one product outside a block
    "BatchMatMulV2": "attention scores and mixing",
    "Softmax": "attention scores and mixing",
    "TopKV2": "ranking",  # top_k and argsort
    "ArgMax": "ranking",
    "GatherV2": "cache and hypotheses reordered",
    "ConcatV2": "cache and hypotheses reordered",
}
ONCE = "encoder and set-up (once)"


def decoding_part(op: str) -> str:
    """What a profiled op of the search ("scope/name:Type") belongs to."""
    name, _, op_type = op.rpartition(":")
    scopes = name.split("/")
    if "while" not in scopes:
        return ONCE
    for pattern, label in PARTS_BY_SCOPE:
        if any(re.fullmatch(pattern, scope) for scope in scopes[:-1]):
            return label
    return PARTS_BY_TYPE.get(op_type, "the rest")


def random_sources(batch: int, vocabulary: int):
    """(batch, SOURCE_LENGTH) random source ids, the same for every variant."""
    import numpy as np
    import tensorflow as tf

    ids = np.random.default_rng(0).integers(4, vocabulary, (batch, SOURCE_LENGTH))
    return tf.constant(ids, tf.int32)


def profile_table(model, source_vocabulary: int, batch_sizes, decode_length: int):
    """Milliseconds of op time per decoding step by part (the encoder: per batch) at beam 4,
    for each batch size."""
    import tensorflow as tf

    from trainer_module.translator.decoding import DecodingWeights, make_generate

    weights = DecodingWeights(model)  # as the export reads them
    columns = ["part"] + [f"batch {b}, ms per step" for b in batch_sizes]
    parts: dict = {}
    for batch in batch_sizes:
        source = random_sources(batch, source_vocabulary)
        generate = tf.function(
            make_generate(model, decode_length, 4, weights=weights),
            input_signature=[tf.TensorSpec([None, None], tf.int32)],
        )
        generate(source)  # trace
        seconds = report.op_seconds(
            lambda g=generate, x=source: g(x).numpy(), decoding_part, repeats=3
        )
        for part, value in seconds.items():
            steps = 1 if part == ONCE else decode_length
            parts.setdefault(part, {})[batch] = 1000 * value / steps
    loop_total = {b: sum(v.get(b, 0.0) for p, v in parts.items() if p != ONCE) for b in batch_sizes}
    order = sorted(parts, key=lambda p: (p == ONCE, -parts[p].get(batch_sizes[0], 0)))
    rows = [[part] + [f"{parts[part].get(b, 0.0):.3f}" for b in batch_sizes] for part in order]
    rows.append(["a step, all parts"] + [f"{loop_total[b]:.3f}" for b in batch_sizes])
    return columns, rows


def projection_table(d_model: int, dtype: str, repeats: int, products: int = 20):
    """Milliseconds per output projection (rows, d_model) @ (d_model, V) for a step's few rows,
    as one product and a row at a time (the two that layers.few_rows_matmul picks between), for
    the joint vocabulary and its target side: the median of `repeats` calls of a function that
    runs `products` of them one after another, each on its own input (passed in: a constant
    would be folded when the graph is optimized)."""
    import numpy as np
    import tensorflow as tf

    from trainer_module.layers.dense import row_by_row_matmul

    rng = np.random.default_rng(0)
    forms = {"one product": tf.matmul, "a row at a time": row_by_row_matmul}
    columns = ["vocabulary", "rows"] + [f"{form} (ms)" for form in forms] + ["ratio"]
    rows = []
    for vocabulary in (JOINT_VOCABULARY, TARGET_SIDE):
        table = tf.cast(rng.normal(size=(d_model, vocabulary)), dtype)
        for count in (1, 2, 4, 8, 16):
            inputs = tf.cast(rng.normal(size=(products, count, d_model)), dtype)
            times = {}
            for form, product in forms.items():
                times[form], first = chained_milliseconds(product, inputs, table, repeats)
                np.testing.assert_allclose(  # both forms give the same products
                    np.asarray(first, "float32"),
                    np.asarray(forms["one product"](inputs[0], table), "float32"),
                    rtol=1e-2,
                    atol=1e-2,
                )
            one, by_rows = times.values()
            rows.append(
                [
                    f"{vocabulary:,}",
                    str(count),
                    f"{one:.3f}",
                    f"{by_rows:.3f}",
                    f"{by_rows / one:.2f}",
                ]
            )
    return columns, rows


def chained_milliseconds(f, inputs, other, repeats: int) -> tuple:
    """(milliseconds per call of f(inputs[i], other), the first call's output): the median of
    `repeats` runs of a function that calls it on each of `inputs` one after another, as a
    search's steps run (passed in: a constant would be folded when the graph is optimized)."""
    import tensorflow as tf

    @tf.function
    def run(x, y):
        outputs: list = []
        for i in range(len(inputs)):
            with tf.control_dependencies(tf.nest.flatten(outputs[-1:])):
                outputs.append(f(x[i], y))
        return outputs

    outputs = run(inputs, other)  # trace
    calls = []
    for _ in range(repeats):
        started = time.perf_counter()
        run(inputs, other)
        calls.append(time.perf_counter() - started)
    return 1000 * statistics.median(calls) / len(inputs), outputs[0]


def ranking_table(repeats: int, steps: int = 10):
    """Milliseconds per ranking of a step's logits (decoding.best_per_row: the k + 3 = 7 best of
    each row at beam 4 and their log-probabilities) by top_k over each row and in blocks, for
    the joint vocabulary and its target side (padded to a multiple of RANK_BLOCK, as an export
    pads them) at one sentence's rows and batches of 16 and 64; checks that both give the same
    columns and log-probabilities."""
    import numpy as np
    import tensorflow as tf

    from trainer_module.translator.decoding import RANK_BLOCK, best_per_row

    rng = np.random.default_rng(0)
    forms = {"top_k": False, "in blocks": True}
    columns = ["vocabulary", "rows"] + [f"{form} (ms)" for form in forms] + ["ratio"]
    rows = []
    for vocabulary in (JOINT_VOCABULARY, TARGET_SIDE):
        padded = -(-vocabulary // RANK_BLOCK) * RANK_BLOCK
        for count in (4, 64, 256):
            logits = rng.normal(size=(steps, count, padded)).astype("float32")
            logits[:, :, vocabulary:] = -np.inf
            logits = tf.constant(logits)
            times, outputs = {}, {}
            for form, blocks in forms.items():
                times[form], outputs[form] = chained_milliseconds(
                    lambda x, _, b=blocks: best_per_row(x, 7, blocks=b), logits, 0, repeats
                )
            for plain, blocked in zip(*outputs.values()):
                np.testing.assert_array_equal(plain.numpy(), blocked.numpy())
            plain, blocked = times.values()
            rows.append(
                [
                    f"{vocabulary:,}",
                    str(count),
                    f"{plain:.3f}",
                    f"{blocked:.3f}",
                    f"{blocked / plain:.2f}",
                ]
            )
    return columns, rows


def save_one_table(name: str, heading: str, title: str, columns, rows):
    """Prints a table under its heading and writes it as the results file `name`."""
    print(f"\n{heading}\n")
    report.print_table(columns, rows)
    report.save(
        "translation_decoding",
        name,
        {"title": title, "tables": [{"title": title, "columns": columns, "rows": rows}]},
    )


def cell(value: float, spec: str, unit: str = "") -> str:
    """`value` formatted by `spec`, or "refused (XLA)" where it is NaN: a variant that XLA's
    CPU backend could not compile."""
    return "refused (XLA)" if math.isnan(value) else f"{value:{spec}}{unit}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--mixed-precision",
        default="auto",
        help="the Keras policy, as the Trainer picks it (default: %(default)s)",
    )
    parser.add_argument("--name", default="beam-search", help="the results file's name")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also split the search's op time at beam 4 by part, per decoding step",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="TensorFlow's intra-op threads (0: one per core; 1: as `serve --threads-per-op 1`)",
    )
    parser.add_argument(
        "--projection",
        action="store_true",
        help="only time the output projection of a step's few rows, as one product and a row "
        "at a time (layers.few_rows_matmul)",
    )
    parser.add_argument(
        "--ranking",
        action="store_true",
        help="only time the ranking of a step's logits, by top_k over each row and in blocks "
        "(decoding.best_per_row)",
    )
    args = parser.parse_args()
    threads = (
        f"{args.threads} intra-op thread{'s' if args.threads > 1 else ''}"
        if args.threads
        else "one intra-op thread per core"
    )

    import keras
    import numpy as np
    import tensorflow as tf

    from trainer_module.training.precision import precision_policy
    from trainer_module.translator import FAMILY
    from trainer_module.translator.config import TranslatorConfig
    from trainer_module.translator.decoding import make_generate
    from trainer_module.translator.model import Translator

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    policy = precision_policy(args.mixed_precision, gpus=0)
    keras.mixed_precision.set_global_policy(policy)
    config = cast(TranslatorConfig, FAMILY.config(args.preset))
    sizes = (
        (JOINT_VOCABULARY, JOINT_VOCABULARY)
        if config.shared_vocabulary
        else (SOURCE_VOCABULARY, TARGET_VOCABULARY)
    )
    config = config.replace(source_vocab_size=sizes[0], target_vocab_size=sizes[1])
    if args.projection:
        dtype = keras.mixed_precision.global_policy().compute_dtype
        save_one_table(
            args.name,
            f"The output projection of a step's rows ({report.machine()}, {dtype}, {threads})",
            f"The output projection (rows, {config.d_model}) @ ({config.d_model}, vocabulary) "
            f"as one product and a row at a time; {dtype}, {threads}, median of {args.repeats}",
            *projection_table(config.d_model, dtype, args.repeats),
        )
        return 0
    if args.ranking:
        save_one_table(
            args.name,
            f"The ranking of a step's logits ({report.machine()}, float32, {threads})",
            "The ranking of a step's float32 logits (the 7 best of each row and their "
            f"log-probabilities) by top_k and in blocks; {threads}, median of {args.repeats}",
            *ranking_table(args.repeats),
        )
        return 0
    model = Translator(config)
    ids = np.ones((1, 2), dtype="int32")
    model({"source_ids": ids, "decoder_input_ids": ids})
    variants = {
        "KerasHub": keras_hub_generate,
        "search": make_generate,
        # Every batch compiled (the export compiles up to jit_compile_max_batch sentences).
        "search, XLA": lambda model, length, beam: make_generate(
            model, length, beam, jit_compile=True, jit_compile_max_batch=2**30
        ),
    }

    rows = []
    for beam_width in (1, 4):
        for batch in args.batch_sizes:
            source = random_sources(batch, sizes[0])
            timings, outputs = {}, {}
            for name, make in variants.items():
                generate = tf.function(
                    make(model, config.max_decode_length, beam_width),
                    input_signature=[tf.TensorSpec([None, None], tf.int32)],
                )
                try:
                    outputs[name] = generate(source).numpy()  # trace (and compile)
                except tf.errors.UnimplementedError as error:  # XLA's CPU backend, bfloat16
                    print(f"{name} refused at beam {beam_width}: {error.message.splitlines()[0]}")
                    timings[name], outputs[name] = float("nan"), None
                    continue
                runs = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    generate(source).numpy()
                    runs.append(time.perf_counter() - started)
                timings[name] = statistics.median(runs)
            same = {
                name: float(np.mean(np.all(outputs[name] == outputs["search"], axis=1)))
                if outputs[name] is not None
                else float("nan")
                for name in ("KerasHub", "search, XLA")
            }
            rows.append((beam_width, batch, timings, same))

    print(
        f"\nTranslator decoding ({report.machine()}), preset {args.preset}, {policy}, "
        f"{config.max_decode_length} tokens per sentence, median of {args.repeats}\n"
    )
    columns = [
        "beam",
        "batch",
        "KerasHub",
        "this search",
        "XLA",
        "search / KerasHub",
        "XLA / search",
        "same output as the search: KerasHub, XLA",
    ]
    table = []
    for beam_width, batch, timings, same in rows:
        table.append(
            [
                "1 (greedy)" if beam_width == 1 else str(beam_width),
                str(batch),
                *(cell(1000 * timings[name], ",.1f", " ms") for name in variants),
                f"{timings['KerasHub'] / timings['search']:.2f}",
                cell(timings["search"] / timings["search, XLA"], ".2f"),
                f"{same['KerasHub']:.0%}, {cell(same['search, XLA'], '.0%')}",
            ]
        )
    report.print_table(columns, table)
    tables = [
        {
            "title": (
                f"preset {args.preset} with random weights, {policy}, "
                f"{SOURCE_LENGTH}-token sources, all {config.max_decode_length} tokens "
                f"decoded; median of {args.repeats}"
            ),
            "columns": columns,
            "rows": table,
        }
    ]
    if args.profile:
        columns, rows = profile_table(model, sizes[0], args.batch_sizes, config.max_decode_length)
        print(f"\nThe search's op time at beam 4 by part (TensorFlow's profiler, {threads})\n")
        report.print_table(columns, rows)
        tables.append(
            {
                "title": (
                    f"The search's op time at beam 4 by part, per decoding step (the encoder: "
                    f"per batch), from TensorFlow's profiler; {threads}"
                ),
                "columns": columns,
                "rows": rows,
            }
        )
    report.save(
        "translation_decoding",
        args.name,
        {
            "title": "Decoding: KerasHub's samplers, translator/decoding.py, and it under XLA",
            "tables": tables,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
