"""Loads a pushed SavedModel with plain TensorFlow and runs it on raw input: a text classifier
(`classify_text`), a translator (`translate`) or an image classifier (`classify_image`), as the
served-model contract says (trainer_module/serving/contract.py), through the runtime the export
chose, or the one asked for (trainer_module/serving/runtimes.py)."""

import itertools
import os
from typing import IO, Iterable, Iterator, List, Tuple

import tensorflow as tf

from trainer_module.serving import custom_ops  # noqa: F401  (ops of BERT models' tokenizers)
from trainer_module.serving.contract import (
    CLASSIFY_IMAGE,
    INPUTS,
    BadInput,
    answer,
    parse_line,
)
from trainer_module.serving.runtimes import AUTO, Served


def resolve_model_dir(path: str) -> str:
    """`path` itself if it is a SavedModel, else its highest numbered version folder."""
    if tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
        return path
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"model path not found: {path}")
    versions = sorted(
        (int(n.rstrip("/")) for n in tf.io.gfile.listdir(path) if n.rstrip("/").isdigit()),
        reverse=True,
    )
    for version in versions:
        candidate = os.path.join(path, str(version))
        if tf.io.gfile.exists(os.path.join(candidate, "saved_model.pb")):
            return candidate
    raise FileNotFoundError(f"{path}: neither a SavedModel nor a folder of numbered versions")


def load_model(path: str, runtime: str = AUTO) -> Tuple[Served, str]:
    """(the export at `path` answering through `runtime`, its folder)."""
    model_dir = resolve_model_dir(path)
    try:
        return Served(tf.saved_model.load(model_dir), model_dir, runtime), model_dir
    except (BadInput, ValueError) as error:
        raise ValueError(f"{model_dir}: {error}") from None


def predict_texts(model: Served, texts: Iterable[str]) -> List[dict]:
    """One row per text: its class and probabilities, or its translation."""
    texts = list(texts)
    if model.signature == CLASSIFY_IMAGE:
        raise ValueError("this model takes images (--image FILE), not text")
    return _rows(model.input, texts, model(texts))


def predict_images(model: Served, paths: Iterable[str]) -> List[dict]:
    """One row per JPEG/PNG file: its class and probabilities."""
    if model.signature != CLASSIFY_IMAGE:
        raise ValueError("this model does not classify images (no 'classify_image' signature)")
    paths = list(paths)
    images = []
    for path in paths:
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"image not found: {path}")
        with tf.io.gfile.GFile(path, "rb") as f:
            images.append(f.read())
    try:
        outputs = model(images)
    except tf.errors.InvalidArgumentError as error:
        raise ValueError(
            f"cannot decode one of {paths} as JPEG/PNG: {error.message.splitlines()[0]}"
        ) from None
    return _rows("image", paths, outputs)


def _rows(input_name: str, inputs: List[str], outputs: dict) -> List[dict]:
    return [
        {input_name: value, **answer({name: row[i] for name, row in outputs.items()})}
        for i, value in enumerate(inputs)
    ]


def _answers(model: Served, values: list) -> List[dict]:
    outputs = model(values)
    return [answer({name: value[i] for name, value in outputs.items()}) for i in range(len(values))]


# `predict --input` reads this many batches ahead and sorts the texts among them by length, so
# that a batch pads (and a translator decodes) to about its own length, not the longest of
# random lines; the answers still come out in input order.
SORT_WINDOW = 16


def predict_lines(
    model, lines: IO[str], batch_size: int = 32, window: int = SORT_WINDOW
) -> Iterator[dict]:
    """One answer per line of `lines` (JSON lines of raw inputs, as text or as UTF-8 bytes), in
    order: {"line": n, <the
    signature's outputs>}, or {"line": n, "error": why} for a line that cannot be predicted;
    the other lines are still answered. Reads `window` batches of `batch_size` lines at a time
    and predicts texts in batches of similar length (images in input order)."""
    signature = model.signature
    name = INPUTS[signature]
    numbered = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
    while True:
        chunk = list(itertools.islice(numbered, batch_size * max(1, window)))
        if not chunk:
            return
        answers, good = {}, []
        for n, line in chunk:
            try:
                if isinstance(line, bytes):
                    try:
                        line = line.decode("utf-8")
                    except UnicodeDecodeError as error:
                        raise BadInput(f"not UTF-8 (byte {error.start:,})") from None
                good.append((n, parse_line(line, name)))
            except BadInput as error:
                answers[n] = {"line": n, "error": str(error)}
        if signature != CLASSIFY_IMAGE:
            good.sort(key=lambda numbered_value: len(numbered_value[1]))
        for start in range(0, len(good), batch_size):
            answers.update(_predict_batch(model, good[start : start + batch_size]))
        for n, _ in chunk:
            yield answers[n]


def _predict_batch(model: Served, batch: List[Tuple[int, object]]) -> dict:
    """{line number: answer} for a batch of (line number, parsed value)."""
    try:
        rows = _answers(model, [value for _, value in batch])
        return {n: {"line": n, **row} for (n, _), row in zip(batch, rows)}
    except tf.errors.InvalidArgumentError:  # one undecodable image: find it, answer the rest
        answers = {}
        for n, value in batch:
            try:
                answers[n] = {"line": n, **_answers(model, [value])[0]}
            except tf.errors.InvalidArgumentError as error:
                answers[n] = {"line": n, "error": error.message.splitlines()[0]}
        return answers
