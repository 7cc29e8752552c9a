"""Warm start: a Trainer given a base model (TFX's `base_model`: the champion of the data before
this run's, components/resolvers/base_model.py) starts from its weights when it is the same
model: the same Transform vocabularies (a token id must still mean the same token) and weights
of the same shapes. Otherwise it trains from scratch and says why.

Every model keeps the weights it was exported with beside its SavedModel, for the next run:
`<model artifact>/warm_start/` (a Keras weights file, and a digest of the vocabularies).
"""

import hashlib
import json
import os
import warnings
from typing import Optional

import keras
import tensorflow as tf
from absl import logging

FOLDER = "warm_start"
WEIGHTS, VOCABULARIES = "model.weights.h5", "vocabularies.json"
# Assets that are statistics of the data rather than what ids mean: the wide path's naive-Bayes
# ratios (hashed ids mean the same n-grams whatever the data). The wide path itself is trained
# anew after the deep one, from this run's ratios (training/wide_path.py).
STATISTICS = ("ngram_nb_ratios",)


def _folder(serving_model_dir: str) -> str:
    """<model artifact>/warm_start, beside <model artifact>/Format-Serving."""
    return os.path.join(os.path.dirname(serving_model_dir.rstrip("/")), FOLDER)


def vocabularies(transform_output: str) -> dict:
    """File name -> sha256 of each asset of the transform graph (its vocabularies), but
    STATISTICS."""
    root = os.path.join(transform_output, "transform_fn", "assets")
    if not tf.io.gfile.isdir(root):
        return {}
    digests = {}
    for name in sorted(set(tf.io.gfile.listdir(root)) - set(STATISTICS)):
        with tf.io.gfile.GFile(os.path.join(root, name), "rb") as f:
            digests[name] = hashlib.sha256(f.read()).hexdigest()
    return digests


def load(model: keras.Model, run) -> Optional[dict]:
    """Loads the base model's weights into the built `model` when they fit. Returns what
    history.json records: {"from": the base model} or {"skipped": why}; None without a base
    model (the first run)."""
    base = getattr(run, "base_model", None)
    if not base:
        return None
    folder = _folder(base)
    weights = os.path.join(folder, WEIGHTS)

    def skipped(why: str) -> dict:
        logging.warning("Not warm-starting from %s: %s; training from scratch", base, why)
        return {"skipped": why}

    if not tf.io.gfile.exists(weights):
        return skipped("the base model kept no weights (exported before warm start)")
    with tf.io.gfile.GFile(os.path.join(folder, VOCABULARIES)) as f:
        before = json.load(f)
    now = vocabularies(run.transform_output)
    changed = sorted(n for n in set(before) | set(now) if before.get(n) != now.get(n))
    if changed:
        return skipped(f"the vocabularies differ from the base model's ({', '.join(changed)})")
    initial = model.get_weights()
    try:
        with warnings.catch_warnings():  # the base's optimizer state is not wanted: a new run
            warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
            model.load_weights(weights)
    except ValueError as error:  # another architecture: weights of other shapes or counts
        model.set_weights(initial)
        return skipped(f"the model differs from the base model ({error})")
    logging.info("Warm-starting from %s", base)
    return {"from": os.path.dirname(base.rstrip("/"))}


def save(model: keras.Model, run) -> None:
    """Keeps the model's weights and the vocabularies' digest for the next run's warm start.
    Every worker saves (reading distributed variables is collective); a non-chief's
    serving_model_dir is a scratch folder."""
    folder = _folder(run.serving_model_dir)
    tf.io.gfile.makedirs(folder)
    model.save_weights(os.path.join(folder, WEIGHTS))
    with tf.io.gfile.GFile(os.path.join(folder, VOCABULARIES), "w") as f:
        json.dump(vocabularies(run.transform_output), f, indent=1)
