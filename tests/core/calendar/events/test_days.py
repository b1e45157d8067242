"""An all-day event's last day, as people count it, and its exclusive end (``events.days``):
the arithmetic the settings pages show and take, done once in the core."""

from __future__ import annotations

import pytest

from calendar_service.calendar.events.days import end_after, last_day


def test_the_end_of_an_all_day_event_is_the_day_after_its_last_day() -> None:
    assert end_after("2026-03-02") == "2026-03-03"
    assert end_after("2026-02-28") == "2026-03-01"
    assert end_after("2028-02-28") == "2028-02-29"
    assert end_after("2026-12-31") == "2027-01-01"


def test_the_last_date_comes_back_for_the_core_to_refuse_and_a_non_date_is_an_error() -> None:
    assert end_after("9999-12-31") == "9999-12-31"
    for text in ("", "2026-02-30", "next Monday"):
        with pytest.raises(ValueError):
            end_after(text)


def test_the_last_day_is_the_day_before_the_end_as_the_public_event_shows_it() -> None:
    assert last_day("2026-03-02T00:00:00+01:00", "2026-03-03T00:00:00+01:00") == "2026-03-02"
    assert last_day("2026-03-02T00:00:00Z", "2026-03-05T00:00:00Z") == "2026-03-04"
    assert last_day("2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00") == "2026-03-29"


def test_an_all_day_event_that_ends_where_it_starts_lasts_its_first_day() -> None:
    assert last_day("2026-03-02T00:00:00+01:00", "2026-03-02T00:00:00+01:00") == "2026-03-02"


def test_a_last_day_read_back_gives_the_same_end() -> None:
    for ends in ("2026-03-03", "2026-01-01", "2028-03-01"):
        assert end_after(last_day("2025-12-31T00:00:00Z", f"{ends}T00:00:00Z")) == ends
