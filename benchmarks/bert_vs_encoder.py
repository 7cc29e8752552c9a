"""Benchmark: fine-tuning throughput and model latency of a bert_tiny-sized KerasHub BERT,
side by side with the from-scratch encoder at the same sequence length.

    .venv/bin/python -m benchmarks.bert_vs_encoder [--lengths 128 256] [--steps 20]

Models are randomly initialised (throughput does not depend on the weights): BERT with
bert_tiny's shape (2 layers, hidden 128, 2 heads, intermediate 512, vocabulary 30,522) and the
from-scratch encoder twice, at the same shape and as its `small` preset. Training: examples per
second over `--steps` AdamW steps of batch 32 after warm-up. Model latency: median
milliseconds of a compiled forward pass, batch 1 and 32. Serving latency: median milliseconds
of the exported SavedModel's `classify_text` signature on raw ~230-word reviews, batch 1 and
32 (tf.Transform tokenisation included; BERT's vocabulary is the tiny preset's hand-written
one, which changes only the embedding lookup).

Accuracy on real IMDB needs pretrained weights: benchmarks/imdb_pipeline.py --model bert
--bert-preset DIR runs the whole pipeline with a local preset directory.
"""

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from typing import Any, cast

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from lab.local_transform import analyze_and_transform
from lab.tiny_bert import WORDS, write_tiny_preset
from trainer_module import bert as bert_family
from trainer_module import text_encoder
from trainer_module.bert import preprocessing as bert_preprocessing
from trainer_module.bert import serving as bert_serving
from trainer_module.bert.config import BertConfig
from trainer_module.bert.model import build_classifier
from trainer_module.text_encoder import preprocessing as text_preprocessing
from trainer_module.text_encoder import serving as text_serving
from trainer_module.text_encoder.config import TextEncoderConfig
from trainer_module.text_encoder.model import TextEncoderClassifier

FEATURE_SPEC = {
    "text": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}

BATCH = 32
VOCABULARY = 30_522
BERT_TINY = dict(num_layers=2, hidden_dim=128, num_heads=2, intermediate_dim=512)


def bert(length):
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCABULARY, max_sequence_length=max(512, length), **BERT_TINY
    )
    model = keras_hub.models.BertTextClassifier(backbone=backbone, num_classes=2, preprocessor=None)

    def inputs(batch):
        ids = np.random.randint(5, VOCABULARY, size=(batch, length)).astype("int32")
        return {
            "token_ids": ids,
            "segment_ids": np.zeros_like(ids),
            "padding_mask": np.ones_like(ids),
        }

    return model, inputs


def encoder(length, **shape):
    config = text_encoder.FAMILY.config(
        "small",
        {
            "max_length": length,
            "truncation_head": length,
            "vocab_size": VOCABULARY - 2,
            "ngram_buckets": 0,
            **shape,
        },
    )  # the encoder alone, against BERT
    model = TextEncoderClassifier(cast(TextEncoderConfig, config))

    def inputs(batch):
        return np.random.randint(1, VOCABULARY, size=(batch, length)).astype("int32")

    return model, inputs


def measure(build, length, steps):
    keras.utils.set_random_seed(0)
    model, inputs = build(length)
    model.compile(
        optimizer=keras.optimizers.AdamW(2e-5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = inputs(BATCH), np.random.randint(0, 2, size=(BATCH,))
    for _ in range(3):
        model.train_on_batch(x, y)
    started = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    train_eps = steps * BATCH / (time.perf_counter() - started)

    forward = tf.function(lambda batch: model(batch, training=False))
    batches = {batch: inputs(batch) for batch in (1, BATCH)}
    latency = {batch: median_ms(lambda data=data: forward(data)) for batch, data in batches.items()}
    return train_eps, latency, model.count_params()


def median_ms(function, repeats=20):
    function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def reviews(count, words=230, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) + "!" for _ in range(count)]


def serving_latency(length, workdir):
    """classify_text of exported SavedModels, tokenisation inside: {family: {batch: ms}}."""
    rows = [{"text": t, "label": i % 2} for i, t in enumerate(reviews(64))]
    preset_dir = write_tiny_preset(
        os.path.join(workdir, "bert_preset"), max_sequence_length=512, **BERT_TINY
    )
    encoder_config = {"vocab_size": 20_000, "max_length": length, "truncation_head": length // 4}
    bert_config = {"backbone_preset": preset_dir, "sequence_length": length}
    _, encoder_tft = analyze_and_transform(
        rows,
        text_preprocessing.preprocessing_fn,
        encoder_config,
        os.path.join(workdir, "encoder_tft"),
        FEATURE_SPEC,
    )
    _, bert_tft = analyze_and_transform(
        rows,
        bert_preprocessing.preprocessing_fn,
        bert_config,
        os.path.join(workdir, "bert_tft"),
        FEATURE_SPEC,
    )
    encoder_model = TextEncoderClassifier(
        cast(
            TextEncoderConfig,
            text_encoder.FAMILY.config(
                "small",
                {
                    "max_length": length,
                    "truncation_head": length // 4,
                    "ngram_buckets": 0,
                    "vocab_size": text_preprocessing.vocabulary_size(encoder_tft),
                },
            ),
        )
    )
    encoder_model(np.zeros((1, length), dtype="int32"))
    bert_model = build_classifier(
        cast(BertConfig, bert_family.FAMILY.config("default", bert_config))
    )
    exports: dict[str, tuple[Any, Any, Any]] = {
        "bert (bert_tiny shape)": (bert_model, bert_tft, bert_serving.export),
        "encoder, preset small": (encoder_model, encoder_tft, text_serving.export),
    }
    latency = {}
    for name, (model, tft_output, export) in exports.items():
        path = os.path.join(workdir, name.replace(" ", "_").replace(",", ""))
        export(model, tft_output, path)
        classify = tf.saved_model.load(path).signatures["classify_text"]
        latency[name] = {
            batch: median_ms(lambda b=batch, f=classify: f(text=tf.constant(reviews(b))))
            for batch in (1, BATCH)
        }
    return latency


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
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}, batch {BATCH}\n"
    )
    print(
        f"{'model':28} {'length':>6} {'params':>10} {'train ex/s':>11} {'vs bert':>8} "
        f"{'ms b=1':>8} {'ms b=32':>8}"
    )
    for length in args.lengths:
        baseline = None
        for name, build in models:
            eps, latency, params = measure(build, length, args.steps)
            baseline = baseline or eps
            print(
                f"{name:28} {length:>6} {params:>10,} {eps:>11.1f} {eps / baseline:>8.2f} "
                f"{latency[1]:>8.1f} {latency[BATCH]:>8.1f}",
                flush=True,
            )

    print("\nserving latency of classify_text (raw strings, tokenisation inside), ms")
    print(f"{'model':28} {'length':>6} {'batch 1':>8} {'batch 32':>9}")
    with tempfile.TemporaryDirectory() as workdir:
        for length in args.lengths:
            for name, by_batch in serving_latency(
                length, os.path.join(workdir, str(length))
            ).items():
                print(
                    f"{name:28} {length:>6} {by_batch[1]:>8.1f} {by_batch[BATCH]:>9.1f}", flush=True
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
