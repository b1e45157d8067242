"""Importing a series whose zone is not the calendar's (issue 24, item 1): the series keeps its
own zone's wall clock, so a Google export of a New York series imported into a Berlin calendar
lists exactly the occurrences Google shows, across the weeks where US and EU daylight saving
time differ, with its cancellations and moves; what does not fit is said per UID."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from icalendar import Calendar

from tests.rest.ical.support import ICS, IMPORT, expanded, listed_occurrences
from tests.rest.recurrence_support import Cal, calendar_in, listed
from tests.support import Factory

# As Google Calendar exports it (VTIMEZONE as Google writes it): a weekday 10:00 New York
# series from 2 March, when New York and Berlin are 6 hours apart, through 8 March (US clocks
# go forward: 5 hours apart) to 29 March (EU clocks: 6 again). Cancelled on the 11th
# (EXDATE) and the 19th (STATUS:CANCELLED), moved on the 17th, all named in New York time.
NEW_YORK = """BEGIN:VCALENDAR
PRODID:-//Google Inc//Google Calendar 70.9054//EN
VERSION:2.0
CALSCALE:GREGORIAN
METHOD:PUBLISH
X-WR-CALNAME:Team
X-WR-TIMEZONE:America/New_York
BEGIN:VTIMEZONE
TZID:America/New_York
X-LIC-LOCATION:America/New_York
BEGIN:DAYLIGHT
TZOFFSETFROM:-0500
TZOFFSETTO:-0400
TZNAME:EDT
DTSTART:19700308T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:-0400
TZOFFSETTO:-0500
TZNAME:EST
DTSTART:19701101T020000
RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU
END:STANDARD
END:VTIMEZONE
BEGIN:VEVENT
DTSTART;TZID=America/New_York:20260302T100000
DTEND;TZID=America/New_York:20260302T103000
RRULE:FREQ=WEEKLY;WKST=SU;UNTIL=20260410T035959Z;BYDAY=MO,TU,WE,TH,FR
EXDATE;TZID=America/New_York:20260311T100000
DTSTAMP:20260301T120000Z
UID:team-sync@google.com
CREATED:20260201T120000Z
SUMMARY:Team sync
STATUS:CONFIRMED
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=America/New_York:20260317T140000
DTEND;TZID=America/New_York:20260317T143000
DTSTAMP:20260301T120000Z
UID:team-sync@google.com
RECURRENCE-ID;TZID=America/New_York:20260317T100000
SUMMARY:Team sync (afternoon)
SEQUENCE:1
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=America/New_York:20260319T100000
DTEND;TZID=America/New_York:20260319T103000
DTSTAMP:20260301T120000Z
UID:team-sync@google.com
RECURRENCE-ID;TZID=America/New_York:20260319T100000
STATUS:CANCELLED
SUMMARY:Team sync
END:VEVENT
END:VCALENDAR
"""

LOW, HIGH = datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC)


def _import(api: httpx.Client, cal: Cal, text: str) -> dict[str, object]:
    answer = api.post(IMPORT, content=text.encode(), headers={**cal.headers, **ICS})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_new_york_series_imported_into_a_berlin_calendar_lists_what_google_shows(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    report = _import(api, cal, NEW_YORK)
    assert (report["created"], report["errors"], report["warnings"]) == (1, [], [])
    # Exactly what an outside reader makes of the file: every weekday at 10:00 New York time
    # (15:00Z in standard time, 14:00Z from 8 March), not on the 11th or the 19th, the 17th
    # at 14:00 New York time.
    outside = expanded(Calendar.from_ical(NEW_YORK.encode()), LOW, HIGH)
    assert listed_occurrences(api, cal, LOW, HIGH) == outside
    starts = {o[1] for o in outside}
    assert datetime(2026, 3, 10, 14, tzinfo=UTC) in starts  # US summer time, EU winter time
    assert datetime(2026, 3, 11, 14, tzinfo=UTC) not in starts
    assert datetime(2026, 3, 17, 18, tzinfo=UTC) in starts
    assert datetime(2026, 3, 17, 14, tzinfo=UTC) not in starts
    # The series keeps its zone (Google's start.timeZone), shown in the calendar's.
    listed_series = listed(api, cal, singleEvents="false", timeMin="2026-03-01T00:00:00Z")
    (series,) = [e for e in listed_series if "recurrence" in e]
    assert series["timeZone"] == "America/New_York"
    assert series["startsAt"] == "2026-03-02T16:00:00+01:00"
    # The same file again changes nothing.
    again = _import(api, cal, NEW_YORK)
    assert (again["created"], again["updated"], again["skipped"]) == (0, 0, 1)


def test_a_london_series_in_a_new_york_calendar_keeps_its_london_wall_clock(
    api: httpx.Client, factory: Factory
) -> None:
    text = (
        NEW_YORK.replace("America/New_York:2026", "Europe/London:2026")
        .replace("X-WR-TIMEZONE:America/New_York", "X-WR-TIMEZONE:Europe/London")
        .replace("UNTIL=20260410T035959Z", "UNTIL=20260410T225959Z")
    )
    cal = calendar_in(factory, "America/New_York")
    report = _import(api, cal, text)
    assert (report["created"], report["errors"]) == (1, [])
    outside = expanded(Calendar.from_ical(text.encode()), LOW, HIGH)
    assert listed_occurrences(api, cal, LOW, HIGH) == outside
    # 10:00 London: 10:00Z until 29 March, 09:00Z after; cancelled on the 11th.
    starts = {o[1] for o in outside}
    assert datetime(2026, 3, 10, 10, tzinfo=UTC) in starts
    assert datetime(2026, 3, 11, 10, tzinfo=UTC) not in starts
    assert datetime(2026, 3, 30, 9, tzinfo=UTC) in starts


def test_what_an_import_leaves_out_of_a_series_is_named_with_why(
    api: httpx.Client, factory: Factory
) -> None:
    text = NEW_YORK.replace(
        "EXDATE;TZID=America/New_York:20260311T100000",
        "EXDATE;TZID=America/New_York:20260311T100000,20260314T100000",
    ).replace(
        "RECURRENCE-ID;TZID=America/New_York:20260317T100000",
        "RECURRENCE-ID;TZID=America/New_York:20260317T093000",
    )
    cal = calendar_in(factory, "Europe/Berlin")
    report = _import(api, cal, text)
    assert (report["created"], report["errors"]) == (1, [])
    messages = [w["message"] for w in report["warnings"] if w["uid"] == "team-sync@google.com"]
    # A Saturday: no occurrence to cancel.
    assert any(
        "EXDATE 2026-03-14 10:00 America/New_York" in m and "cancels no occurrence" in m
        for m in messages
    ), messages
    # The moved occurrence names an original start the rule does not give: not imported, and
    # the occurrence the rule gives stays.
    assert any(
        "RECURRENCE-ID 2026-03-17 09:30 America/New_York" in m
        and "not an occurrence of the series' rule" in m
        and "10:00 America/New_York" in m
        for m in messages
    ), messages
    starts = {o[1] for o in listed_occurrences(api, cal, LOW, HIGH)}
    assert datetime(2026, 3, 17, 14, tzinfo=UTC) in starts


def test_an_imported_event_starting_in_the_spring_gap_moves_by_the_gap_keeping_its_length(
    api: httpx.Client, factory: Factory
) -> None:
    text = "\r\n".join([
        "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", "BEGIN:VEVENT", "UID:gap",
        "DTSTAMP:20260301T120000Z", "DTSTART;TZID=Europe/Berlin:20260329T023000",
        "DTEND;TZID=Europe/Berlin:20260329T031500", "SUMMARY:Night shift", "END:VEVENT",
        "END:VCALENDAR", "",
    ])  # fmt: skip
    cal = calendar_in(factory, "Europe/Berlin")
    report = _import(api, cal, text)
    assert (report["created"], report["errors"]) == (1, [])
    (event,) = listed(api, cal)
    assert (event["startsAt"], event["endsAt"]) == (
        "2026-03-29T03:30:00+02:00",
        "2026-03-29T04:15:00+02:00",
    )
