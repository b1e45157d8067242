"""The idempotency key's name and type, decided in the core for every front."""

from __future__ import annotations

from calendar_service.access import idempotency


def test_the_idempotency_key_is_named_once_for_the_header_and_the_tool_argument() -> None:
    assert idempotency.HEADER == "Idempotency-Key"
    assert idempotency.ARGUMENT == "idempotencyKey"


def test_an_idempotency_key_that_is_not_a_string_is_a_field_error_and_no_key() -> None:
    assert idempotency.given_key(None) == (None, [])
    assert idempotency.given_key("abc") == ("abc", [])
    for value in (12, ["abc"], {"k": 1}, True):
        key, errors = idempotency.given_key(value)
        assert key is None
        assert errors == [{"field": idempotency.HEADER, "message": "must be a string"}]
