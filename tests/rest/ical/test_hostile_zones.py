"""The file's own VTIMEZONEs are text from outside: reading them is bounded in steps
whatever their rules say (``ical.zones``). The 600-byte file of issue 24 (two observances
repeating every second) once hung the server; now it and every file of the hostile corpus
(``hostile_zones``) are answered with a report, never a 5xx, the event in such a zone is an
error of its UID, and the server keeps answering."""

from __future__ import annotations

import httpx
import pytest
from icalendar.timezone import tzp

from calendar_service.interop.ical.reading import read_file
from calendar_service.interop.ical.zones import (
    MAX_ZONE_WORK,
    FileZones,
    Work,
    ZoneRefused,
    read_vtimezone,
)
from tests.rest.ical.hostile_zones import CORPUS, SECONDLY
from tests.rest.ical.support import ICS, IMPORT
from tests.rest.recurrence_support import calendar_in, listed
from tests.support import Factory

# Generous, and finite: a request that hangs fails the test instead of hanging the suite.
CLIENT_TIMEOUT = 120


def test_the_file_whose_zone_changes_every_second_is_answered_and_the_server_stays_up(
    api: httpx.Client, factory: Factory
) -> None:
    assert len(SECONDLY) < 700
    cal = calendar_in(factory, "Europe/Berlin")
    answer = api.post(
        IMPORT, content=SECONDLY, headers={**cal.headers, **ICS}, timeout=CLIENT_TIMEOUT
    )
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["created"] == 1
    (error,) = report["errors"]
    assert error["uid"] == "victim"
    assert "'Hostile'" in error["message"] and "FREQ=SECONDLY" in error["message"]
    assert [e["title"] for e in listed(api, cal)] == ["Bystander"]
    health = api.get("/healthz", timeout=CLIENT_TIMEOUT)
    assert health.status_code == 200


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_hostile_zone_is_read_within_the_work_bound_and_answered_per_uid(
    name: str, api: httpx.Client, factory: Factory
) -> None:
    data = CORPUS[name]
    read = read_file(data)
    assert read.zone_work <= MAX_ZONE_WORK
    cal = calendar_in(factory, "UTC")
    answer = api.post(IMPORT, content=data, headers={**cal.headers, **ICS}, timeout=CLIENT_TIMEOUT)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    uids = {e["uid"] for e in report["errors"]}
    assert "bystander" not in uids
    assert report["created"] + len(report["errors"]) == len(read.plans)
    for error in report["errors"]:
        assert error["uid"].startswith("victim")
        assert "time zone" in error["message"] or "offset" in error["message"]


def test_a_zone_that_repeats_too_often_is_refused_before_it_is_expanded() -> None:
    from icalendar import Calendar

    calendar = Calendar.from_ical(CORPUS["monthly until the year 9999"].replace(
        b"TZID:Hostile", b"TZID:Hostile-not-cached"))  # fmt: skip
    (component,) = calendar.walk("VTIMEZONE")
    work = Work(limit=100)
    with pytest.raises(ZoneRefused, match="too much work"):
        read_vtimezone(component, work, "Hostile")
    assert work.spent <= 100


def test_a_files_zone_is_its_own_and_never_another_files() -> None:
    """``icalendar`` keeps the VTIMEZONEs it parses in a cache shared by the process: one
    file's 'Customized Time Zone' would be every later file's. The import reads each file's
    zones itself, and leaves that cache alone."""
    plus_one = CORPUS["secondly"].replace(b"FREQ=SECONDLY", b"FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU")
    first = read_file(plus_one.replace(b"Hostile", b"Customized Time Zone"))
    assert tzp.timezone("Customized Time Zone") is None
    other = plus_one.replace(b"Hostile", b"Customized Time Zone").replace(b"+0200", b"+0500")
    second = read_file(other)
    starts = {p.uid: p.master.start for p in first.plans if p.master is not None}
    again = {p.uid: p.master.start for p in second.plans if p.master is not None}
    assert starts["victim"].utcoffset() != again["victim"].utcoffset()


def test_an_outlook_zone_is_matched_to_its_iana_zone() -> None:
    outlook = b"""BEGIN:VCALENDAR
VERSION:2.0
BEGIN:VTIMEZONE
TZID:(UTC+01:00) Amsterdam\\, Berlin\\, Bern\\, Rome\\, Stockholm\\, Vienna
BEGIN:STANDARD
DTSTART:16010101T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010101T020000
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:o1
DTSTART;TZID="(UTC+01:00) Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna":20260710T090000
SUMMARY:Summer
END:VEVENT
END:VCALENDAR
"""
    (plan,) = read_file(outlook).plans
    assert plan.error is None and plan.master is not None
    assert str(plan.master.start.tzinfo) == "Europe/Berlin"
    assert plan.master.start.isoformat() == "2026-07-10T09:00:00+02:00"


def test_a_zone_no_iana_zone_agrees_with_keeps_the_files_transitions() -> None:
    # Clocks go forward on the second Sunday of April at 02:00, back on the first of November.
    own = b"""BEGIN:VCALENDAR
VERSION:2.0
BEGIN:VTIMEZONE
TZID:Elsewhere
BEGIN:STANDARD
DTSTART:19701101T030000
TZOFFSETFROM:+0330
TZOFFSETTO:+0230
RRULE:FREQ=YEARLY;BYMONTH=11;BYMONTHDAY=1
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:19700412T020000
TZOFFSETFROM:+0230
TZOFFSETTO:+0330
RRULE:FREQ=YEARLY;BYMONTH=4;BYDAY=2SU
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:e
DTSTART;TZID=Elsewhere:20260412T023000
SUMMARY:In the gap
END:VEVENT
BEGIN:VEVENT
UID:f
DTSTART;TZID=Elsewhere:20261101T023000
SUMMARY:In the overlap
END:VEVENT
END:VCALENDAR
"""
    plans = {p.uid: p for p in read_file(own).plans}
    gap, overlap = plans["e"].master, plans["f"].master
    assert gap is not None and overlap is not None
    assert type(gap.start.tzinfo).__name__ == "FileZone"
    assert gap.start.utcoffset() is not None and gap.start.utcoffset().total_seconds() == 2.5 * 3600
    assert overlap.start.utcoffset().total_seconds() == 3.5 * 3600  # the first of the two
    assert overlap.start.replace(fold=1).utcoffset().total_seconds() == 2.5 * 3600


def test_file_zones_are_read_once_per_file() -> None:
    from icalendar import Calendar

    data = CORPUS["daily"].replace(b"Hostile", b"Hostile-read-once")
    (calendar,) = Calendar.from_ical(data, multiple=True)
    zones = FileZones.of(calendar)
    for _ in range(3):
        with pytest.raises(ZoneRefused, match="FREQ=DAILY"):
            zones.zone("Hostile-read-once", None)
    assert zones.work.spent == 2  # its two observances, counted once
