"""Benchmark: fine-tuning throughput and model latency of a bert_tiny-sized KerasHub BERT,
side by side with the from-scratch encoder at the same sequence length.

    .venv/bin/python benchmarks/bert_vs_encoder.py [--lengths 128 256] [--steps 20]

Models are randomly initialised (throughput does not depend on the weights): BERT with
bert_tiny's shape (2 layers, hidden 128, 2 heads, intermediate 512, vocabulary 30,522) and the
from-scratch encoder twice, at the same shape and as its `small` preset. Training: examples per
second over `--steps` AdamW steps of batch 32 after warm-up. Latency: median milliseconds of a
compiled forward pass, batch 1 and batch 32 (the model alone; tokenisation excluded).

Accuracy on real IMDB needs pretrained weights: benchmarks/imdb_pipeline.py --model bert
--bert-preset DIR runs the whole pipeline with a local preset directory.
"""
import argparse
import os
import platform
import statistics
import sys
import time

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from trainer_module.models.presets import get_preset
from trainer_module.models.text_classifier import TransformerClassifier

BATCH = 32
VOCABULARY = 30_522
BERT_TINY = dict(num_layers=2, hidden_dim=128, num_heads=2, intermediate_dim=512)


def bert(length):
    backbone = keras_hub.models.BertBackbone(vocabulary_size=VOCABULARY,
                                             max_sequence_length=max(512, length), **BERT_TINY)
    model = keras_hub.models.BertTextClassifier(backbone=backbone, num_classes=2,
                                                preprocessor=None)

    def inputs(batch):
        ids = np.random.randint(5, VOCABULARY, size=(batch, length)).astype("int32")
        return {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                "padding_mask": np.ones_like(ids)}
    return model, inputs


def encoder(length, **shape):
    config = get_preset("small", {"max_length": length, "truncation_head": length, **shape})
    model = TransformerClassifier.from_preset_config(config, vocab_size=VOCABULARY)

    def inputs(batch):
        return np.random.randint(1, VOCABULARY, size=(batch, length)).astype("int32")
    return model, inputs


def measure(build, length, steps):
    keras.utils.set_random_seed(0)
    model, inputs = build(length)
    model.compile(optimizer=keras.optimizers.AdamW(2e-5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = inputs(BATCH), np.random.randint(0, 2, size=(BATCH,))
    for _ in range(3):
        model.train_on_batch(x, y)
    started = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    train_eps = steps * BATCH / (time.perf_counter() - started)

    forward = tf.function(lambda batch: model(batch, training=False))
    latency = {}
    for batch in (1, BATCH):
        data = inputs(batch)
        forward(data)
        times = []
        for _ in range(20):
            started = time.perf_counter()
            forward(data)
            times.append(1000 * (time.perf_counter() - started))
        latency[batch] = statistics.median(times)
    return train_eps, latency, model.count_params()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    models = [
        ("bert (bert_tiny shape)", bert),
        ("encoder, bert_tiny shape", lambda n: encoder(n, d_model=128, num_heads=2, ff_dim=512)),
        ("encoder, preset small", encoder),
    ]
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"TensorFlow {tf.__version__}, Keras {keras.__version__}, batch {BATCH}\n")
    print(f"{'model':28} {'length':>6} {'params':>10} {'train ex/s':>11} {'vs bert':>8} "
          f"{'ms b=1':>8} {'ms b=32':>8}")
    for length in args.lengths:
        baseline = None
        for name, build in models:
            eps, latency, params = measure(build, length, args.steps)
            baseline = baseline or eps
            print(f"{name:28} {length:>6} {params:>10,} {eps:>11.1f} {eps / baseline:>8.2f} "
                  f"{latency[1]:>8.1f} {latency[BATCH]:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
