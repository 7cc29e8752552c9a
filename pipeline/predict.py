"""Loads a pushed SavedModel with plain TensorFlow and runs it on raw text: a text classifier
(`classify_text`) or a translator (`translate`)."""
import os
from typing import Iterable, List, Tuple

import tensorflow as tf

from trainer_module.serving import custom_ops  # noqa: F401  (ops of BERT models' tokenizers)

CLASSIFY = "classify_text"
TRANSLATE = "translate"


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
    if not {CLASSIFY, TRANSLATE} & set(model.signatures):
        raise ValueError(f"{model_dir}: neither a '{CLASSIFY}' nor a '{TRANSLATE}' signature "
                         f"(has {sorted(model.signatures)})")
    return model, model_dir


def predict_texts(model, texts: Iterable[str]) -> List[dict]:
    """One row per text: its class and probabilities, or its translation."""
    texts = list(texts)
    if TRANSLATE in model.signatures:
        outputs = model.signatures[TRANSLATE](source=tf.constant(texts))
        return [{"source": text, "translation": translation.decode("utf-8")}
                for text, translation in zip(texts, outputs["translation"].numpy())]
    outputs = model.signatures[CLASSIFY](text=tf.constant(texts))
    names = [n.decode() for n in outputs["label_name"].numpy()]
    probabilities = outputs["probabilities"].numpy()
    rows = []
    for text, name, label, probs in zip(texts, names, outputs["label"].numpy(), probabilities):
        rows.append({"text": text, "label": name, "label_id": int(label),
                     "probabilities": [round(float(p), 6) for p in probs]})
    return rows
