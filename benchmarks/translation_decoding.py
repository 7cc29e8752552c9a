"""Benchmark: the served translator's decoding, with the key/value cache against recomputing
the whole prefix at every step (the baseline).

    .venv/bin/python benchmarks/translation_decoding.py [--preset base] [--batch-sizes 1 64]

A randomly initialised model of the preset's shape (weights do not change the cost) decodes
source sentences of 14 tokens for the full `max_decode_length` (random weights rarely emit
[END]: the worst case), greedy and with beam search, inside a tf.function as in the SavedModel.
Prints the median time per batch and the ratio to the baseline.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

SOURCE_VOCABULARY, TARGET_VOCABULARY, SOURCE_LENGTH = 7_800, 5_900, 14


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    from trainer_module.translator import FAMILY
    from trainer_module.translator import serving as translator
    from trainer_module.translator.model import Translator

    config = FAMILY.config(args.preset, {"source_vocab_size": SOURCE_VOCABULARY,
                                         "target_vocab_size": TARGET_VOCABULARY})
    model = Translator(config)
    ids = np.ones((1, 2), dtype="int32")
    model({"source_ids": ids, "decoder_input_ids": ids})

    class FullPrefix:
        """The baseline: decode_step recomputed as decode(prefix)[:, -1] with no cache."""

        def __init__(self, model):
            self.model = model

        def encode(self, source_ids, training=False):
            return self.model.encode(source_ids, training=training)

        def start_decoding(self, memory, source_mask, max_length):
            buffer = tf.zeros([tf.shape(memory)[0], max_length], tf.int32)
            return memory, tf.cast(source_mask, memory.dtype), buffer

        def decode_step(self, token_ids, index, cache):
            memory, source_mask, buffer = cache
            buffer = tf.tensor_scatter_nd_update(
                tf.transpose(buffer), [[index]], tf.transpose(tf.cast(token_ids, tf.int32)))
            buffer = tf.transpose(buffer)
            logits, _, _ = self.model.decode(buffer[:, :index + 1], memory, source_mask)
            return logits[:, -1:], (memory, source_mask, buffer)

    rows = []
    for beam_width in (1, 4):
        for batch in args.batch_sizes:
            source = tf.constant(np.random.default_rng(0).integers(
                4, SOURCE_VOCABULARY, (batch, SOURCE_LENGTH)), tf.int32)
            timings = {}
            for name, decoder in (("full prefix", FullPrefix(model)), ("cache", model)):
                generate = tf.function(translator.make_generate(
                    decoder, config.max_decode_length, beam_width))
                generate(source)  # trace
                runs = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    generate(source).numpy()
                    runs.append(time.perf_counter() - started)
                timings[name] = statistics.median(runs)
            rows.append((beam_width, batch, timings["full prefix"], timings["cache"]))

    print(f"\nTranslator decoding ({report.machine()}), preset {args.preset}, "
          f"{config.max_decode_length} tokens per sentence\n")
    print(f"{'beam':>4} {'batch':>5} {'full prefix ms':>15} {'cache ms':>9} {'speed-up':>9}")
    for beam_width, batch, full, cached in rows:
        print(f"{beam_width:>4} {batch:>5} {1000 * full:>15.1f} {1000 * cached:>9.1f} "
              f"{full / cached:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
