"""Loads a pushed SavedModel with plain TensorFlow and runs it on raw input: a text classifier
(`classify_text`), a translator (`translate`) or an image classifier (`classify_image`)."""
import os
from typing import Iterable, List, Tuple

import tensorflow as tf

from trainer_module.serving import custom_ops  # noqa: F401  (ops of BERT models' tokenizers)

CLASSIFY = "classify_text"
TRANSLATE = "translate"
CLASSIFY_IMAGE = "classify_image"
SIGNATURES = (CLASSIFY, TRANSLATE, CLASSIFY_IMAGE)


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
    if not set(SIGNATURES) & set(model.signatures):
        raise ValueError(f"{model_dir}: none of the signatures {list(SIGNATURES)} "
                         f"(has {sorted(model.signatures)})")
    return model, model_dir


def predict_texts(model, texts: Iterable[str]) -> List[dict]:
    """One row per text: its class and probabilities, or its translation."""
    texts = list(texts)
    if TRANSLATE in model.signatures:
        outputs = model.signatures[TRANSLATE](source=tf.constant(texts))
        return [{"source": text, "translation": translation.decode("utf-8")}
                for text, translation in zip(texts, outputs["translation"].numpy())]
    if CLASSIFY not in model.signatures:
        raise ValueError("this model takes images (--image FILE), not text")
    outputs = model.signatures[CLASSIFY](text=tf.constant(texts))
    return _class_rows("text", texts, outputs)


def predict_images(model, paths: Iterable[str]) -> List[dict]:
    """One row per JPEG/PNG file: its class and probabilities."""
    if CLASSIFY_IMAGE not in model.signatures:
        raise ValueError("this model does not classify images (no 'classify_image' signature)")
    paths = list(paths)
    images = []
    for path in paths:
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"image not found: {path}")
        with tf.io.gfile.GFile(path, "rb") as f:
            images.append(f.read())
    try:
        outputs = model.signatures[CLASSIFY_IMAGE](image=tf.constant(images))
    except tf.errors.InvalidArgumentError as error:
        raise ValueError(f"cannot decode one of {paths} as JPEG/PNG: "
                         f"{error.message.splitlines()[0]}") from None
    return _class_rows("image", paths, outputs)


def _class_rows(input_name: str, inputs: List[str], outputs: dict) -> List[dict]:
    names = [n.decode() for n in outputs["label_name"].numpy()]
    rows = []
    for value, name, label, probs in zip(inputs, names, outputs["label"].numpy(),
                                         outputs["probabilities"].numpy()):
        rows.append({input_name: value, "label": name, "label_id": int(label),
                     "probabilities": [round(float(p), 6) for p in probs]})
    return rows
