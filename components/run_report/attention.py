"""Attention heatmaps for a few evaluation examples, from the model's `attention` signature
(trainer_module/serving): per layer and head, over the tokens (text encoder), over the source
tokens for each generated target token (translation), over the patches of the image (ViT)."""

import io
import os
from typing import List

import numpy as np
import tensorflow as tf
from tfx.utils import path_utils

from components.run_report.data import split_names
from components.run_report.figures import data_uri, new_figure

SIGNATURE = "attention"
EXAMPLES = 3  # evaluation examples shown, spread over the first SCANNED of the split
SCANNED = 256
MAX_TOKENS = 24  # tokens per heatmap axis
MAX_HEADS = 8  # heads per layer shown
PANEL_INCHES = 2.4


def evaluation_split(examples) -> str:
    names = split_names(examples)
    return "eval" if "eval" in names else names[-1]


def read_examples(examples, count: int = EXAMPLES) -> List[tf.train.Example]:
    """`count` examples evenly spaced over the first SCANNED of the evaluation split
    (ExampleGen's gzipped TFRecords; splits are often grouped by class)."""
    pattern = os.path.join(examples.uri, f"Split-{evaluation_split(examples)}", "*")
    files = sorted(tf.io.gfile.glob(pattern))
    # One batch: iterating to the end of a short split would log an OUT_OF_RANGE warning.
    batch = next(iter(tf.data.TFRecordDataset(files, compression_type="GZIP").batch(SCANNED)), None)
    records = [] if batch is None else list(batch.numpy())
    if not records:
        return []
    picks = sorted(
        set(np.linspace(0, len(records) - 1, min(count, len(records))).round().astype(int).tolist())
    )
    return [tf.train.Example.FromString(records[i]) for i in picks]


def _feature(example: tf.train.Example, name: str):
    feature = example.features.feature.get(name)
    if feature is None:
        return None
    kind = feature.WhichOneof("kind")
    values = getattr(feature, kind).value if kind else []
    return values[0] if values else None


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _grid(layers: int, heads: int):
    figure = new_figure(PANEL_INCHES * heads + 0.6, PANEL_INCHES * layers + 0.4)
    return figure, figure.subplots(layers, heads, squeeze=False)


def _token_heatmaps(
    weights: np.ndarray, rows: List[str], columns: List[str], x_label: str, y_label: str
) -> str:
    """weights (layers, heads, rows, columns) -> a grid of heatmaps, one per layer and head."""
    layers, heads = weights.shape[0], min(weights.shape[1], MAX_HEADS)
    figure, axes = _grid(layers, heads)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            ax.imshow(weights[layer, head], cmap="viridis", vmin=0.0, aspect="auto")
            ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=6)
            ax.set_yticks(range(len(rows)), rows, fontsize=6)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=8)
            if layer == layers - 1:
                ax.set_xlabel(x_label, fontsize=7)
            if head == 0:
                ax.set_ylabel(y_label, fontsize=7)
    return data_uri(figure)


def _patch_overlays(image_bytes: bytes, weights: np.ndarray, grid: int) -> str:
    """weights (layers, heads, T, T) -> the image with each head's attention over its patches:
    what [CLS] attends to when the model has one, else the attention each patch receives."""
    from PIL import Image

    picture = np.asarray(Image.open(io.BytesIO(image_bytes)).convert("RGB"))
    height, width = picture.shape[:2]
    layers, heads = weights.shape[0], min(weights.shape[1], MAX_HEADS)
    has_cls = weights.shape[-1] == grid * grid + 1
    figure, axes = _grid(layers, heads + 1)
    for layer in range(layers):
        axes[layer][0].imshow(picture)
        axes[layer][0].set_title(f"layer {layer + 1}", fontsize=8)
        for head in range(heads):
            per_patch = (
                weights[layer, head, 0, 1:] if has_cls else weights[layer, head].mean(axis=0)
            )
            ax = axes[layer][head + 1]
            ax.imshow(picture)
            ax.imshow(
                per_patch.reshape(grid, grid),
                cmap="inferno",
                alpha=0.6,
                extent=(0, width, height, 0),
                interpolation="nearest",
            )
            ax.set_title(f"head {head + 1}", fontsize=8)
        for ax in axes[layer]:
            ax.set_xticks([])
            ax.set_yticks([])
    return data_uri(figure)


# A caption's predicted classes, most probable first, each with its probability.
TOP_CLASSES = 3


def _predictions(model, examples: List[tf.train.Example]) -> List[str]:
    served = model.signatures["serving_default"](
        examples=tf.constant([e.SerializeToString() for e in examples])
    )
    if "translation" in served:
        return [_text(t) for t in served["translation"].numpy()]
    probabilities = served["probabilities"].numpy()
    if "classes" not in served:  # exported before the classes were an output
        names = served["label_name"].numpy()
        return [f"{_text(n)} (p={p:.2f})" for n, p in zip(names, probabilities.max(axis=-1))]
    return [
        ", ".join(f"{_text(classes[i])} {row[i]:.2f}" for i in row.argsort()[::-1][:TOP_CLASSES])
        for classes, row in zip(served["classes"].numpy(), probabilities)
    ]


def _caption(example: tf.train.Example, prediction: str, kind: str) -> dict:
    if kind == "translation":
        return {
            "source": _text(_feature(example, "source")),
            "reference": _text(_feature(example, "target")),
            "model": prediction,
        }
    truth = _feature(example, "label_name") or _feature(example, "label")
    return {"label": _text(truth) if truth is not None else "", "predicted": prediction}


def load_model(model_artifact):
    """The Trainer's serving SavedModel."""
    return tf.saved_model.load(path_utils.serving_model_path(model_artifact.uri))


def attention_heatmaps(model, examples_artifact, count: int = EXAMPLES) -> dict:
    """{"kind", "examples": [{"caption": {...}, "plot": data URI}], "note"} for the loaded
    SavedModel `model` on the first `count` evaluation examples."""
    if SIGNATURE not in model.signatures:
        return {
            "kind": None,
            "examples": [],
            "note": "this model family exports no attention signature",
        }
    signature = model.signatures[SIGNATURE]
    (input_name,) = signature.structured_input_signature[1]
    examples = [
        e for e in read_examples(examples_artifact, count) if _feature(e, input_name) is not None
    ]
    if not examples:
        return {"kind": None, "examples": [], "note": "the evaluation split has no examples"}
    outputs = {
        k: v.numpy()
        for k, v in signature(
            **{input_name: tf.constant([_feature(e, input_name) for e in examples])}
        ).items()
    }
    kind = (
        "translation"
        if "cross_attention" in outputs
        else "image"
        if "patch_grid" in outputs
        else "text"
    )
    predictions = _predictions(model, examples)
    shown = []
    for index, example in enumerate(examples):
        if kind == "text":
            keep = np.flatnonzero(outputs["token_mask"][index])[:MAX_TOKENS]
            tokens = [_text(t) for t in outputs["tokens"][index][keep]]
            weights = outputs["attention"][index][:, :, keep][:, :, :, keep]
            plot = _token_heatmaps(weights, tokens, tokens, "attended token", "token")
        elif kind == "translation":
            source = np.flatnonzero(outputs["source_mask"][index])[:MAX_TOKENS]
            target = np.flatnonzero(outputs["target_mask"][index])[:MAX_TOKENS]
            weights = outputs["cross_attention"][index][:, :, target][:, :, :, source]
            plot = _token_heatmaps(
                weights,
                [_text(t) for t in outputs["target_tokens"][index][target]],
                [_text(t) for t in outputs["source_tokens"][index][source]],
                "source token",
                "generated token",
            )
        else:
            plot = _patch_overlays(
                _feature(example, input_name),
                outputs["attention"][index],
                int(outputs["patch_grid"][index]),
            )
        shown.append({"caption": _caption(example, predictions[index], kind), "plot": plot})
    return {"kind": kind, "examples": shown, "note": None}
