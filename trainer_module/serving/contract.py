"""The served-model contract, in one place: the raw-input signature each kind of model exports,
the name of its one input, the checks a raw input passes before any model sees it, and the form
of an answer.

Pure Python, no TensorFlow or MLflow: the families' exports, `tfx-transformers predict`, the
bulk-inference components and the registered MLflow Model use it (a copy of this file travels
inside every MLflow Model, beside its pyfunc code: components/model_registry/mlflow_model.py).

  classify_text(text)    -> label, label_id, classes,     text classifiers (IMDB)
                            probabilities
  translate(source)      -> translation                     translators
  classify_image(image)  -> label, label_id, classes,     image classifiers (JPEG or PNG
                            probabilities                   bytes of any size)

`classes` names each of `probabilities`' classes, in the same order (the label ids'); a model
exported before the classes were an output answers without them.
"""

import base64
import binascii
import json

CLASSIFY_TEXT, TRANSLATE, CLASSIFY_IMAGE = "classify_text", "translate", "classify_image"
# Each raw-input signature and the name of its one input (a DataFrame column, a JSON key).
INPUTS = {CLASSIFY_TEXT: "text", TRANSLATE: "source", CLASSIFY_IMAGE: "image"}
# The columns of an answer, by signature.
ANSWERS = {
    CLASSIFY_TEXT: ("label", "label_id", "classes", "probabilities"),
    TRANSLATE: ("translation",),
    CLASSIFY_IMAGE: ("label", "label_id", "classes", "probabilities"),
}

MAX_TEXT_CHARACTERS = 100_000  # a long IMDB review is about 14,000
MAX_IMAGE_BYTES = 20 * 1024 * 1024
IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")  # JPEG, PNG
# What `tfx-transformers serve` accepts by default (its --max-request-mb, --max-rows, --timeout):
# a body of up to 32 MiB (one image at the limit, base64-encoded in JSON, fits), 1,000 rows,
# and 60 s (MLflow's default) before the server answers 504.
MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_ROWS = 1_000
REQUEST_TIMEOUT_SECONDS = 60
# The environment variable through which a server gives its row limit to the model's checks.
MAX_ROWS_VARIABLE = "TFXT_SERVE_MAX_ROWS"


class BadInput(ValueError):
    """A raw input no model is given; the message says where it is and what is wrong."""


def raw_signature(signatures) -> str:
    """The raw-input signature among a SavedModel's signature names."""
    for name in INPUTS:
        if name in signatures:
            return name
    raise BadInput(
        f"none of the raw-input signatures {list(INPUTS)} (the model has {sorted(signatures)})"
    )


def check_text(where: str, value) -> str:
    """`value` if it is a text a model can take, else BadInput naming `where` (`row 3`)."""
    if not isinstance(value, str):
        raise BadInput(f"{where}: expected a string, got {type(value).__name__}")
    if not value.strip():
        raise BadInput(f"{where}: the text is empty")
    if len(value) > MAX_TEXT_CHARACTERS:
        raise BadInput(
            f"{where}: the text has {len(value):,} characters; "
            f"at most {MAX_TEXT_CHARACTERS:,} are accepted"
        )
    return value


def check_image(where: str, value) -> bytes:
    """The image bytes of `value` (bytes, or their base64), else BadInput naming `where`. Only
    the format's signature is checked here; a model's decoder has the last word."""
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise BadInput(f"{where}: a string image must be base64") from None
    if not isinstance(value, (bytes, bytearray)):
        raise BadInput(f"{where}: expected image bytes, got {type(value).__name__}")
    if len(value) > MAX_IMAGE_BYTES:
        raise BadInput(
            f"{where}: the image has {len(value):,} bytes; at most {MAX_IMAGE_BYTES:,} are accepted"
        )
    if not bytes(value).startswith(IMAGE_MAGIC):
        raise BadInput(f"{where}: not a JPEG or PNG image")
    return bytes(value)


def check_rows(count: int, limit: int) -> None:
    """BadInput when a request holds more than `limit` rows."""
    if count > limit:
        raise BadInput(f"the request has {count:,} rows; at most {limit:,} are accepted")


def check(input_name: str, where: str, value):
    """The check of `input_name`'s values (check_image for images, check_text otherwise)."""
    return (check_image if input_name == INPUTS[CLASSIFY_IMAGE] else check_text)(where, value)


def parse_json(text: str):
    """json.loads, with JSON nested deeper than Python's parser goes refused as BadInput."""
    try:
        return json.loads(text)
    except RecursionError:
        raise BadInput("the JSON is nested too deeply") from None


def parse_line(line: str, input_name: str):
    """The raw value of one JSON line ({"text": ...}, {"source": ...} or {"image": base64}),
    checked, or BadInput saying what is wrong."""
    try:
        record = parse_json(line.strip())
    except json.JSONDecodeError as error:
        raise BadInput(f"not JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(record, dict) or input_name not in record:
        raise BadInput(f"expected an object with {input_name!r}")
    return check(input_name, repr(input_name), record[input_name])


def check_request(body: bytes, input_name: str):
    """BadInput for an HTTP request body (MLflow's JSON formats) that must be refused before
    MLflow's parser sees it: bytes that are not UTF-8, JSON nested deeper than the parser goes,
    or an `input_name` value that is not a text or an image (MLflow's schema enforcement turns
    null and 12345 into the texts "None" and "12345"). Malformed JSON, and formats it does not
    know, are left to MLflow's own answers. Returns the parsed JSON (None where it is not)."""
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(f"the request body is not UTF-8 (byte {error.start:,})") from None
    try:
        payload = parse_json(text)
    except json.JSONDecodeError:
        return None
    for where, value in request_values(payload, input_name):
        check(input_name, where, value)
    return payload


def request_values(payload, input_name: str):
    """(where, value) of each `input_name` value in one of MLflow's JSON request formats
    (dataframe_split, dataframe_records, inputs, instances); nothing for another shape."""
    if not isinstance(payload, dict):
        return []
    rows = []
    split = payload.get("dataframe_split")
    if isinstance(split, dict) and isinstance(split.get("columns"), list):
        if input_name in split["columns"] and isinstance(split.get("data"), list):
            column = split["columns"].index(input_name)
            rows = [
                row[column] if isinstance(row, list) and column < len(row) else None
                for row in split["data"]
            ]
    for key in ("dataframe_records", "instances", "inputs"):
        records = payload.get(key)
        if isinstance(records, dict) and input_name in records:  # {"inputs": {"text": [...]}}
            values = records[input_name]
            rows = values if isinstance(values, list) else [values]
        elif isinstance(records, list):  # [{"text": ...}, ...] or a list of bare values
            rows = [r.get(input_name) if isinstance(r, dict) else r for r in records]
    return [(f"row {row}", value) for row, value in enumerate(rows)]


def answer(outputs: dict) -> dict:
    """One input's answer from its row of a raw-input signature's outputs (NumPy values):
    {"translation"}, or {"label", "label_id", "classes", "probabilities"} (no "classes" from a
    model that does not output them)."""
    if "translation" in outputs:
        return {"translation": _text(outputs["translation"])}
    answer = {"label": _text(outputs["label_name"]), "label_id": int(outputs["label"])}
    if "classes" in outputs:
        answer["classes"] = [_text(name) for name in outputs["classes"]]
    answer["probabilities"] = [round(float(p), 6) for p in outputs["probabilities"]]
    return answer


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
