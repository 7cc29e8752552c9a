"""Benchmark: the served translator's decoding (trainer_module/translator/decoding.py) against
the baseline it replaced, KerasHub's samplers (GreedySampler, BeamSampler) over the same cached
decoding steps.

    .venv/bin/python -m benchmarks.translation_decoding [--preset base] [--batch-sizes 1 64]

A randomly initialised model of the preset's shape (weights do not change the cost of a step)
decodes source sentences of 14 tokens, greedy and with beam search, inside a tf.function as in
the SavedModel (length penalty 0, as KerasHub's). Random weights rarely emit [END], so every
sentence runs the full `max_decode_length` steps: the worst case, where the search's early stop
does not help (the pipeline benchmark measures the trained model). Prints the median time per
batch and the ratio to the baseline, and checks that both return the same translations."""

import argparse
import statistics
import sys
import time

from benchmarks import report

SOURCE_VOCABULARY, TARGET_VOCABULARY, SOURCE_LENGTH = 7_800, 5_900, 14


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
        logits, cache = model.decode_step(prompt[:, index - 1 : index], index - 1, cache)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    from trainer_module.translator import FAMILY
    from trainer_module.translator.decoding import make_generate
    from trainer_module.translator.model import Translator

    config = FAMILY.config(
        args.preset,
        {"source_vocab_size": SOURCE_VOCABULARY, "target_vocab_size": TARGET_VOCABULARY},
    )
    model = Translator(config)
    ids = np.ones((1, 2), dtype="int32")
    model({"source_ids": ids, "decoder_input_ids": ids})

    rows = []
    for beam_width in (1, 4):
        for batch in args.batch_sizes:
            source = tf.constant(
                np.random.default_rng(0).integers(4, SOURCE_VOCABULARY, (batch, SOURCE_LENGTH)),
                tf.int32,
            )
            timings, outputs = {}, {}
            for name, make in (("KerasHub", keras_hub_generate), ("search", make_generate)):
                generate = tf.function(
                    make(model, config.max_decode_length, beam_width),
                    input_signature=[tf.TensorSpec([None, None], tf.int32)],
                )
                outputs[name] = generate(source).numpy()  # trace
                runs = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    generate(source).numpy()
                    runs.append(time.perf_counter() - started)
                timings[name] = statistics.median(runs)
            same = float(np.mean(np.all(outputs["KerasHub"] == outputs["search"], axis=1)))
            rows.append((beam_width, batch, timings["KerasHub"], timings["search"], same))

    print(
        f"\nTranslator decoding ({report.machine()}), preset {args.preset}, "
        f"{config.max_decode_length} tokens per sentence, median of {args.repeats}\n"
    )
    print(
        f"{'beam':>4} {'batch':>5} {'KerasHub ms':>12} {'search ms':>10} {'speed-up':>9} "
        f"{'same output':>12}"
    )
    for beam_width, batch, baseline, search, same in rows:
        print(
            f"{beam_width:>4} {batch:>5} {1000 * baseline:>12.1f} {1000 * search:>10.1f} "
            f"{baseline / search:>9.2f} {same:>12.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
