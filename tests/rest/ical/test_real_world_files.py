"""The ``.ics`` files the ``icalendar`` package ships as test data (exports from Google
Calendar, Outlook, Thunderbird, Apple and others, and broken ones) imported over REST: none
gives a 5xx, and those whose events come in whole come in with the occurrences
``recurring-ical-events`` finds in the same file.

The files come with the installed ``icalendar`` wheel (``icalendar/tests/calendars``; the
version is pinned in pyproject.toml), so no network is needed.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import icalendar
import pytest
from icalendar import Calendar

from calendar_service.interop.ical.reading import resolve_tzid
from tests.rest.ical.support import ICS, IMPORT, expanded, listed_occurrences, zone
from tests.rest.recurrence_support import Cal, calendar_in
from tests.support import Factory

FILES = sorted((Path(icalendar.__file__).parent / "tests" / "calendars").glob("*.ics"))
# Warnings that leave every occurrence as the file has it (what was dropped is not a time).
_HARMLESS = ("events here have no place for them", "not imported (events only)")


def test_the_icalendar_sample_files_are_there() -> None:
    assert len(FILES) > 100, "the icalendar wheel no longer ships its sample calendars"


def _zone_of(text: bytes) -> str:
    """The zone a person would give the calendar: the file's first zone that has a name."""
    try:
        calendars = Calendar.from_ical(text, multiple=True)
    except ValueError:
        return "UTC"
    for calendar in calendars:
        if isinstance(calendar, Calendar):
            for tzid in calendar.get_used_tzids():
                found = resolve_tzid(tzid)
                if found is not None and str(found) != "UTC":
                    return str(found)
    return "UTC"


def _first_start(calendar: Calendar) -> datetime | None:
    starts = []
    for vevent in calendar.walk("VEVENT"):
        value = getattr(vevent.get("DTSTART"), "dt", None)
        if isinstance(value, datetime):
            starts.append(value if value.tzinfo else value.replace(tzinfo=UTC))
        elif isinstance(value, date):
            starts.append(datetime(value.year, value.month, value.day, tzinfo=UTC))
    return min(starts, default=None)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_sample_file_imports_without_a_5xx_and_with_the_right_occurrences(
    path: Path, api: httpx.Client, factory: Factory
) -> None:
    text = path.read_bytes()
    zone_name = _zone_of(text)
    cal: Cal = calendar_in(factory, zone_name)
    answer = api.post(IMPORT, content=text, headers={**cal.headers, **ICS})
    assert answer.status_code < 500, answer.text
    if answer.status_code != 200:
        problem = answer.json()
        assert problem["code"] in {"invalid_icalendar", "payload_too_large"}
        assert problem["detail"]
        return
    report = answer.json()
    assert set(report) == {"created", "updated", "skipped", "errors", "warnings"}
    for entry in report["errors"] + report["warnings"]:
        assert entry["message"]
    whole = not report["errors"] and all(
        any(h in w["message"] for h in _HARMLESS) for w in report["warnings"]
    )
    if not whole or not report["created"]:
        return
    calendars = Calendar.from_ical(text, multiple=True)
    first = min(s for c in calendars if (s := _first_start(c)) is not None)
    window = (first - timedelta(days=1), first + timedelta(days=400))
    ours = listed_occurrences(api, cal, *window)
    theirs = sorted(o for c in calendars for o in expanded(c, *window, tz=zone(zone_name)))
    assert ours == theirs
