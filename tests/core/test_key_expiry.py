"""How long a key lives: one grammar for ``keys create`` and the settings page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from calendar_service import keys
from calendar_service.account.keys_pages import EXPIRY_CHOICES, parse_expiry
from calendar_service.errors import ValidationFailed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90min", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("30d", timedelta(days=30)),
        ("2w", timedelta(weeks=2)),
        ("3 days", timedelta(days=3)),
        ("1 Week", timedelta(weeks=1)),
        ("36hours", timedelta(hours=36)),
    ],
)
def test_a_lifetime_is_a_whole_number_and_an_unambiguous_unit(
    text: str, expected: timedelta
) -> None:
    assert keys.parse_expires_in(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("30", "has no unit"),
        ("1m", "ambiguous (minutes or months?)"),
        ("1M", "ambiguous (minutes or months?)"),
        ("100ms", "too short"),
        ("30s", "too short"),
        ("6mo", "months and years vary"),
        ("1y", "months and years vary"),
        ("1.5h", "whole number"),
        ("0d", "more than zero"),
        ("forever", "not a lifetime"),
        ("99999999999w", "at most"),
    ],
)
def test_a_lifetime_without_a_clear_unit_is_refused_with_the_valid_units(
    text: str, reason: str
) -> None:
    with pytest.raises(ValidationFailed) as raised:
        keys.parse_expires_in(text)
    [error] = raised.value.errors
    assert error["field"] == "expiresIn"
    assert reason in error["message"]
    assert "min, h, d or w" in error["message"]


def test_a_date_means_the_key_works_through_that_whole_day_utc() -> None:
    assert keys.parse_expires_at("2027-01-01") == datetime(2027, 1, 2, tzinfo=UTC)
    assert keys.parse_expires_at("2027-01-01T09:30:00+02:00") == datetime(
        2027, 1, 1, 7, 30, tzinfo=UTC
    )
    assert keys.parse_expires_at("2027-01-01T09:30:00") == datetime(2027, 1, 1, 9, 30, tzinfo=UTC)
    for bad in ("soon", "2027-02-30", "9999-12-31"):
        with pytest.raises(ValidationFailed) as raised:
            keys.parse_expires_at(bad)
        assert raised.value.errors[0]["field"] == "expiresAt"


def test_the_settings_page_reads_its_choices_with_the_same_grammar() -> None:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    for value, _label in EXPIRY_CHOICES:
        assert parse_expiry(value, "", now) == now + keys.parse_expires_in(value)
    assert parse_expiry("custom", "2027-01-01", now) == keys.parse_expires_at("2027-01-01")
