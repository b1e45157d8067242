"""How long a key lives: one grammar for ``keys create`` and the settings page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from calendar_service.access import keys
from calendar_service.platform.errors import ValidationFailed


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


def test_the_settings_pages_read_their_choices_with_the_same_grammar() -> None:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    for value, _label in keys.LIFETIME_CHOICES:
        assert keys.chosen_expiry(choice=value, on_date="", now=now) == now + keys.parse_expires_in(
            value
        )
    assert keys.chosen_expiry(choice="custom", on_date="2027-01-01", now=now) == (
        keys.parse_expires_at("2027-01-01")
    )
    for choice, on_date, message in (
        ("custom", "soon", "choose a date such as 2026-12-31"),
        ("12h", "", "choose when the key expires"),
    ):
        with pytest.raises(ValidationFailed) as raised:
            keys.chosen_expiry(choice=choice, on_date=on_date, now=now)
        assert raised.value.errors == [{"field": "expiresAt", "message": message}]


def test_a_new_key_lives_the_default_lifetime_a_lifetime_or_until_a_date() -> None:
    now = datetime(2026, 3, 2, 12, 0, 0, 123456, tzinfo=UTC)
    whole = now.replace(microsecond=0)
    assert keys.key_expiry(now=now) == whole + keys.parse_expires_in(keys.DEFAULT_LIFETIME)
    assert keys.key_expiry(now=now, expires_in="12h") == whole + timedelta(hours=12)
    assert keys.key_expiry(now=now, expires_at="2027-01-01") == datetime(2027, 1, 2, tzinfo=UTC)
    with pytest.raises(ValidationFailed) as raised:
        keys.key_expiry(now=now, expires_in="12h", expires_at="2027-01-01")
    assert raised.value.errors[0]["field"] == "expiresAt"


def test_a_key_shorter_than_the_minimum_is_refused_unless_asked_for_on_every_front() -> None:
    now = datetime(2026, 3, 2, 23, 30, tzinfo=UTC)
    assert timedelta(hours=1) == keys.MIN_LIFETIME
    for given, field in (
        ({"expires_in": "30min"}, "expiresIn"),
        ({"expires_at": "2026-03-02"}, "expiresAt"),
    ):
        with pytest.raises(ValidationFailed) as raised:
            keys.key_expiry(now=now, to_allow_short="add --allow-short-expiry", **given)
        [error] = raised.value.errors
        assert error["field"] == field
        assert "less than an hour from now (2026-03-03T00:" in error["message"]
        assert error["message"].endswith("; add --allow-short-expiry")
        assert keys.key_expiry(now=now, allow_short=True, **given) <= now + timedelta(minutes=30)
    # The settings and consent pages offer no short keys: a date ending within the hour is refused.
    with pytest.raises(ValidationFailed) as raised:
        keys.chosen_expiry(choice="custom", on_date="2026-03-02", now=now)
    [error] = raised.value.errors
    assert error["field"] == "expiresAt"
    assert "less than an hour from now" in error["message"]
    assert keys.chosen_expiry(choice="custom", on_date="2026-03-03", now=now) == datetime(
        2026, 3, 4, tzinfo=UTC
    )


def test_a_past_expiry_is_left_to_the_grant_check_that_every_front_shares() -> None:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    assert keys.key_expiry(now=now, expires_at="2001-01-01") == datetime(2001, 1, 2, tzinfo=UTC)
