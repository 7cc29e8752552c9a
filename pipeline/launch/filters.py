"""Vertex ML Metadata's artifact filters (AIP-160), evaluated over the artifacts a launch
recorded: what a compiled resolver task asks Vertex AI for.

    schema_title="tfx.ModelBlessing" AND state=LIVE AND metadata.blessed.number_value=1

Supported: comparisons of `name`, `display_name`, `uri`, `state`, `schema_title`,
`create_time`, `update_time` and `metadata.<key>.<number_value|string_value|bool_value>` (a
key may be quoted) with =, !=, <, <=, >, >=; `in_context("<resource name>")`; AND, OR, NOT and
parentheses. Anything else is a FilterError naming it, never a silent match.
"""

import re
from typing import Any, Callable, List, Mapping, Sequence

Artifact = Mapping[str, Any]  # a recorded artifact (pipeline/launch/store.py)
Predicate = Callable[[Artifact], bool]

FIELDS = ("name", "display_name", "uri", "state", "schema_title", "create_time", "update_time")
VALUE_KINDS = ("number_value", "string_value", "bool_value")
_WORD = r'[A-Za-z0-9_\-:+][A-Za-z0-9_.\-:+]*(?:"(?:[^"\\]|\\.)*"[A-Za-z0-9_.\-:+]*)*'
_TOKEN = re.compile(
    rf"\s*(?:(?P<word>{_WORD})|(?P<string>\"(?:[^\"\\]|\\.)*\")|(?P<op><=|>=|!=|=|<|>)"
    r"|(?P<paren>[()])|(?P<comma>,))"
)


class FilterError(ValueError):
    """A filter this evaluator cannot read."""


def tokens(text: str) -> List[tuple]:
    found, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise FilterError(f"cannot read the filter at {text[position:]!r}: {text!r}")
        kind = str(match.lastgroup)  # every alternative of _TOKEN is a named group
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


def parse(text: str) -> Predicate:
    """The filter as a predicate over recorded artifacts."""
    stream = tokens(text)
    predicate, rest = _or(stream, text)
    if rest:
        raise FilterError(f"unexpected {rest[0][1]!r} in the filter {text!r}")
    return predicate


def _or(stream, text):
    left, stream = _and(stream, text)
    while stream and stream[0] == ("word", "OR"):
        right, stream = _and(stream[1:], text)
        left = (lambda a, b: lambda x: a(x) or b(x))(left, right)
    return left, stream


def _and(stream, text):
    left, stream = _not(stream, text)
    while stream and stream[0] == ("word", "AND"):
        right, stream = _not(stream[1:], text)
        left = (lambda a, b: lambda x: a(x) and b(x))(left, right)
    return left, stream


def _not(stream, text):
    if stream and stream[0] == ("word", "NOT"):
        inner, stream = _not(stream[1:], text)
        return (lambda a: lambda x: not a(x))(inner), stream
    return _term(stream, text)


def _term(stream, text):
    if not stream:
        raise FilterError(f"the filter ends too soon: {text!r}")
    if stream[0] == ("paren", "("):
        inner, stream = _or(stream[1:], text)
        if not stream or stream[0] != ("paren", ")"):
            raise FilterError(f"a parenthesis is not closed in the filter {text!r}")
        return inner, stream[1:]
    if stream[0] == ("word", "in_context"):
        if len(stream) < 4 or [k for k, _ in stream[1:4]] != ["paren", "string", "paren"]:
            raise FilterError(f'in_context takes one "resource name": {text!r}')
        context = _unquote(stream[2][1]).rstrip("/").rsplit("/", 1)[-1]
        return (lambda c: lambda x: c in x.get("contexts", ()))(context), stream[4:]
    if len(stream) < 3 or stream[0][0] not in ("word", "string") or stream[1][0] != "op":
        raise FilterError(f"expected FIELD OPERATOR VALUE in the filter {text!r}")
    field, op, value = _field(stream[0][1], text), stream[1][1], _value(stream[2], text)
    return _comparison(field, op, value), stream[3:]


def _field(path: str, text: str) -> Callable[[Artifact], Any]:
    if path in FIELDS:
        return lambda artifact: artifact.get(path)
    parts = _split_metadata(path)
    if parts is None:
        raise FilterError(f"unknown field {path!r} in the filter {text!r}")
    key, kind = parts

    def read(artifact):
        value = artifact.get("metadata", {}).get(key)
        if kind == "number_value":
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            return value if number else None
        if kind == "bool_value":
            return value if isinstance(value, bool) else None
        return value if isinstance(value, str) else None

    return read


def _split_metadata(path: str):
    """metadata.<key>.<kind>, the key possibly quoted: (key, kind), or None."""
    match = re.fullmatch(r'metadata\.(?:"(?P<quoted>[^"]+)"|(?P<plain>[^.]+))\.(?P<kind>\w+)', path)
    if not match or match["kind"] not in VALUE_KINDS:
        return None
    return match["quoted"] or match["plain"], match["kind"]


def _value(token, text):
    kind, raw = token
    if kind == "string":
        return _unquote(raw)
    if kind != "word":
        raise FilterError(f"expected a value, not {raw!r}, in the filter {text!r}")
    if raw in ("true", "false"):
        return raw == "true"
    try:
        return float(raw)
    except ValueError:
        return raw  # an enum value: LIVE, PENDING


def _unquote(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw[1:-1])


_OPERATORS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _comparison(read, op, value) -> Predicate:
    compare = _OPERATORS[op]

    def predicate(artifact):
        found = read(artifact)
        if found is None:
            return op == "!="
        if isinstance(value, float) and isinstance(found, (int, float)):
            return compare(float(found), value)
        try:
            return compare(found, value)
        except TypeError:
            return False

    return predicate


def select(artifacts: Sequence[Artifact], text: str, limit: int = 1) -> List[Artifact]:
    """The artifacts `text` matches, newest first, at most `limit` (0: all)."""
    predicate = parse(text)
    matched = sorted(
        (a for a in artifacts if predicate(a)),
        key=lambda a: (a.get("create_time", ""), a.get("sequence", 0)),
        reverse=True,
    )
    return matched[:limit] if limit else matched
