"""``inputs.parse_json_body``: untrusted JSON decoded, or refused with a reason."""

from __future__ import annotations

import json

import pytest

from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.inputs import (
    DUPLICATE_MESSAGE,
    NUL_MESSAGE,
    parse_json_body,
    parse_model,
)
from calendar_service.platform.models import EventCreate


def _refusal(body: bytes) -> list[dict[str, str]]:
    with pytest.raises(ValidationFailed) as caught:
        parse_json_body(body)
    return list(caught.value.errors)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"a": 1, "a": 2}', "a"),
        (b'{"a": {"b": 1, "c": {"d": [1, {"e": 1, "e": 1}]}}}', "a.c.d.1.e"),
        (b'[{"x": 1}, {"y": 2, "y": 2}]', "1.y"),
        (b'{"k:1": "v:1", "k:1": "v:2"}', "k:1"),
        (b'{"a": "\\u003a", "a": ":"}', "a"),
        (b'{"\\u0061": 1, "a": 2}', "a"),
    ],
)
def test_a_key_given_twice_at_any_depth_is_refused_naming_where(body: bytes, field: str) -> None:
    assert _refusal(body) == [{"field": field, "message": DUPLICATE_MESSAGE}]


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": "x:y", "b": {"a": ":", "c": [":", {"a": 1}]}, "c": "\\u003a"}',
        b'{"t": "2026-03-02T09:00:00Z", "u": "\\"t\\": 1", "v": "{\\"t\\":2}"}',
        b'[{"a": 1}, {"a": 1}]',
        b'"just a string: with a colon"',
        b"{}",
    ],
)
def test_bodies_without_duplicate_keys_decode_as_json_does(body: bytes) -> None:
    assert parse_json_body(body) == json.loads(body)


def test_a_body_nested_beyond_any_use_is_refused_not_crashed_on() -> None:
    for depth in (1010, 5000):  # beyond the json module's recursion limit, and orjson's
        assert _refusal(b"[" * depth + b'{"a": 1, "a": 2}' + b"]" * depth)[0]["field"] == "body"


def test_a_duplicate_key_deeper_than_orjson_encodes_is_still_found() -> None:
    body = b'{"x": ' + b"[" * 600 + b'{"a": 1, "a": 2}' + b"]" * 600 + b"}"
    assert _refusal(body) == [{"field": "x" + ".0" * 600 + ".a", "message": DUPLICATE_MESSAGE}]


def test_a_nul_deeper_than_orjson_encodes_is_still_found() -> None:
    data = {"title": "x", "extra": "\x00"}
    for _ in range(600):
        data = {"title": "x", "extra": [data]}
    with pytest.raises(ValidationFailed) as caught:
        parse_model(EventCreate, data)
    assert {"field": "extra" + ".0.extra" * 600, "message": NUL_MESSAGE} in caught.value.errors
