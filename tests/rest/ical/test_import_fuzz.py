"""Mangled iCalendar files (the sample files and exports of the other tests, with lines
dropped, repeated, cut short or replaced by hostile ones) imported over REST: a clear 4xx or a
report, never a 5xx. Seeded: every run sends the same files."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import icalendar

from tests.rest.ical.support import ICS, IMPORT
from tests.rest.ical.test_import import GOOGLE, OUTLOOK
from tests.rest.recurrence_support import calendar_in
from tests.support import Factory

CASES = 150
HOSTILE = [
    b"DTSTART:",
    b"DTSTART;TZID=:20260101T100000",
    b"DTSTART:99991231T235959Z",
    b"DTSTART:00010101T000000Z",
    b"DTSTART;TZID=W. Europe Standard Time:20260301T100000",
    b"DTEND;VALUE=DATE:20200101",
    b"DURATION:-P1D",
    b"RRULE:FREQ=WEEKLY;UNTIL=2026",
    b"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
    b"RRULE:FREQ=DAILY;INTERVAL=999999",
    b"RRULE:FREQ=MONTHLY;BYSETPOS=500;BYDAY=MO",
    b"EXDATE:xyz",
    b"RDATE;VALUE=PERIOD:20260101T000000Z/PT1H",
    b"RECURRENCE-ID:20260101",
    b"RECURRENCE-ID;RANGE=THISANDFUTURE:20260101T100000Z",
    b"UID:",
    b"SUMMARY:\x00",
    b"BEGIN:VALARM",
    b"END:VALARM",
    b"BEGIN:VTIMEZONE",
    b"TZID:Europe/Berlin",
    b"\xff\xfe",
    b" folded continuation",
]


def _sources() -> list[bytes]:
    folder = Path(icalendar.__file__).parent / "tests" / "calendars"
    return [p.read_bytes() for p in sorted(folder.glob("*.ics"))] + [
        GOOGLE.encode(),
        OUTLOOK.encode(),
    ]


def _mangled(rng: random.Random, source: bytes) -> bytes:
    lines = source.splitlines()
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.3 and lines:
            del lines[rng.randrange(len(lines))]
        elif choice < 0.6:
            lines.insert(rng.randint(1, max(1, len(lines) - 1)), rng.choice(HOSTILE))
        elif choice < 0.8 and lines:
            lines.insert(rng.randrange(len(lines)), lines[rng.randrange(len(lines))])
        elif lines:
            at = rng.randrange(len(lines))
            lines[at] = lines[at][: rng.randint(0, len(lines[at]))]
    return b"\r\n".join(lines)


def test_mangled_files_are_answered_with_a_4xx_or_a_report_never_a_5xx(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    rng = random.Random(20261124)
    sources = _sources()
    statuses: dict[int, int] = {}
    for _ in range(CASES):
        answer = api.post(IMPORT, content=_mangled(rng, rng.choice(sources)),
                          headers={**cal.headers, **ICS})  # fmt: skip
        assert answer.status_code < 500, answer.text
        body = answer.json()
        if answer.status_code == 200:
            assert {"created", "updated", "skipped", "errors", "warnings"} <= set(body)
        else:
            assert body["code"] in {"invalid_icalendar", "payload_too_large"}, body
        statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    assert set(statuses) == {200, 400}  # both kinds of answer were exercised
