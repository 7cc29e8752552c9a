"""Loads a pushed SavedModel with plain TensorFlow and classifies raw text."""
import os
from typing import Iterable, List, Tuple

import tensorflow as tf

from trainer_module.serving import custom_ops  # noqa: F401  (ops of BERT models' tokenizers)

SIGNATURE = "classify_text"


def resolve_model_dir(path: str) -> str:
    """`path` itself if it is a SavedModel, else its highest numbered version folder."""
    if tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
        return path
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"model path not found: {path}")
    versions = sorted((int(n.rstrip("/")) for n in tf.io.gfile.listdir(path)
                       if n.rstrip("/").isdigit()), reverse=True)
    for version in versions:
        candidate = os.path.join(path, str(version))
        if tf.io.gfile.exists(os.path.join(candidate, "saved_model.pb")):
            return candidate
    raise FileNotFoundError(f"{path}: neither a SavedModel nor a folder of numbered versions")


def load_model(path: str) -> Tuple[object, str]:
    model_dir = resolve_model_dir(path)
    model = tf.saved_model.load(model_dir)
    if SIGNATURE not in model.signatures:
        raise ValueError(f"{model_dir}: no '{SIGNATURE}' signature "
                         f"(has {sorted(model.signatures)}); is it a text classifier?")
    return model, model_dir


def predict_texts(model, texts: Iterable[str]) -> List[dict]:
    texts = list(texts)
    outputs = model.signatures[SIGNATURE](text=tf.constant(texts))
    names = [n.decode() for n in outputs["label_name"].numpy()]
    probabilities = outputs["probabilities"].numpy()
    rows = []
    for text, name, label, probs in zip(texts, names, outputs["label"].numpy(), probabilities):
        rows.append({"text": text, "label": name, "label_id": int(label),
                     "probabilities": [round(float(p), 6) for p in probs]})
    return rows
