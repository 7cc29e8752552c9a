"""Property-based tests (hypothesis) of the input checks `predict`, the MLflow model, `serve` and
bulk inference share (trainer_module/serving/contract.py): whatever arrives is either taken as
it is or refused with a message that says where and why; nothing else escapes."""

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainer_module.serving import contract

JPEG, PNG = contract.IMAGE_MAGIC
# Anything JSON can hold, nested.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.text())
def test_any_unicode_text_is_taken_whole_or_refused_as_empty(text):
    try:
        assert contract.check_text("row 0", text) == text
        assert text.strip() and len(text) <= contract.MAX_TEXT_CHARACTERS
    except contract.BadInput as error:
        assert str(error) == "row 0: the text is empty" and not text.strip()


@settings(max_examples=20, deadline=None)
@given(
    st.integers(
        min_value=contract.MAX_TEXT_CHARACTERS + 1, max_value=3 * contract.MAX_TEXT_CHARACTERS
    ),
    st.characters(),
)
def test_a_text_over_the_limit_is_refused_naming_the_limit(length, character):
    with pytest.raises(
        contract.BadInput,
        match=r"row 2: the text has [\d,]+ characters; at "
        r"most 100,000 are accepted",
    ):
        contract.check_text("row 2", (character * length) if character.strip() else "x" * length)


@given(JSON_VALUES.filter(lambda v: not isinstance(v, str)))
def test_a_text_of_another_json_type_is_refused_naming_the_type(value):
    with pytest.raises(contract.BadInput, match="row 1: expected a string, got "):
        contract.check_text("row 1", value)


@given(st.binary(max_size=64) | st.text(max_size=64))
def test_any_bytes_or_string_as_an_image_is_taken_or_refused(value):
    try:
        image = contract.check_image("row 0", value)
    except contract.BadInput as error:
        assert str(error).startswith("row 0: ")
        assert any(
            why in str(error)
            for why in ("must be base64", "not a JPEG or PNG", "expected image bytes")
        )
    else:
        assert image.startswith((JPEG, PNG))


@given(st.sampled_from([JPEG, PNG]), st.binary(max_size=64))
def test_an_image_with_a_jpeg_or_png_signature_passes_as_bytes_and_as_base64(magic, rest):
    image = magic + rest
    assert contract.check_image("row 0", image) == image
    assert contract.check_image("row 0", base64.b64encode(image).decode()) == image


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(contract.INPUTS.values())),
    st.text(max_size=80) | JSON_VALUES.map(json.dumps),
)
def test_any_json_line_is_parsed_or_refused_with_a_message(name, line):
    try:
        value = contract.parse_line(line, name)
    except contract.BadInput as error:
        assert str(error)
    else:
        record = json.loads(line)
        assert isinstance(record, dict) and name in record
        assert value == contract.check(name, "", record[name])


def test_truncated_images_and_wrong_types_name_what_is_wrong():
    with pytest.raises(contract.BadInput, match="'image': not a JPEG or PNG image"):
        contract.parse_line(json.dumps({"image": base64.b64encode(PNG[:4]).decode()}), "image")
    with pytest.raises(contract.BadInput, match="expected an object with 'text'"):
        contract.parse_line("[1, 2]", "text")
    with pytest.raises(contract.BadInput, match="not JSON"):
        contract.parse_line('{"text": "unclosed', "text")


@given(
    st.lists(JSON_VALUES, min_size=1, max_size=4), st.sampled_from(["split", "inputs", "records"])
)
def test_a_request_is_refused_before_the_model_unless_every_text_is_a_string(values, form):
    """The HTTP server's pre-check (contract.check_request): whatever a request's text column
    holds, a non-string or an empty one is refused naming its row; strings pass."""
    body = {
        "split": {"dataframe_split": {"columns": ["text"], "data": [[v] for v in values]}},
        "inputs": {"inputs": {"text": values}},
        "records": {"dataframe_records": [{"text": v} for v in values]},
    }[form]
    try:
        contract.check_request(json.dumps(body).encode(), "text")
        assert all(isinstance(v, str) and v.strip() for v in values)
    except contract.BadInput as error:
        row = int(str(error).split(":")[0].removeprefix("row "))
        assert not (isinstance(values[row], str) and values[row].strip())
        assert all(isinstance(v, str) and v.strip() for v in values[:row])


@given(st.binary(max_size=256))
def test_any_bytes_as_a_request_body_pass_or_are_refused_with_a_message(body):
    try:
        contract.check_request(body, "text")
    except contract.BadInput as error:
        assert str(error)
