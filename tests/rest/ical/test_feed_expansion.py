"""The feed read by outside parsers: ``icalendar`` and ``recurring-ical-events`` expand it
to exactly the occurrences the list returns for the same window, for single events, a weekly
series across a DST change with one occurrence moved and one cancelled, and an all-day
series; then the round trip: the feed imported into an empty calendar gives the same
occurrences."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from icalendar import Calendar

from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS
from tests.rest.ical.support import (
    ICS,
    IMPORT,
    expanded,
    fetch,
    listed_occurrences,
    make_feed,
    parsed,
    zone,
)
from tests.rest.recurrence_support import Cal, calendar_in, create, listed
from tests.support import Factory

WINDOW = (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC))


def _fill(api: httpx.Client, cal: Cal) -> None:
    """Single events, a weekly series across the DST change of 29 March 2026 with one
    occurrence moved and one cancelled, an all-day series; one more single event long ago,
    out of the feed's window (and the list's)."""
    create(api, cal, title="Dentist", startsAt="2026-03-04T12:00", endsAt="2026-03-04T12:45",
           description="Bring the card", location="Hauptstraße 1")  # fmt: skip
    create(api, cal, title="Ferry", startsAt="2026-04-01T06:00:00Z", endsAt="2026-04-01T06:00:00Z")
    create(api, cal, title="Conference", startsAt="2026-05-11", endsAt="2026-05-14", allDay=True)
    series = create(
        api, cal, title="Stand-up", startsAt="2026-03-16T09:30", endsAt="2026-03-16T09:45",
        recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6"],
    )  # fmt: skip
    moved = f"{EVENTS}/{series['id']}_20260323T083000Z"
    answer = api.patch(
        moved, json={"startsAt": "2026-03-24T11:00", "endsAt": "2026-03-24T11:30",
                     "title": "Stand-up (moved)"}, headers=cal.headers,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    cancelled = f"{EVENTS}/{series['id']}_20260406T073000Z"  # after the change: UTC+2
    assert api.delete(cancelled, headers=cal.headers).status_code == 204
    create(
        api, cal, title="Bins", startsAt="2026-03-05", endsAt="2026-03-05", allDay=True,
        recurrence=["RRULE:FREQ=WEEKLY;INTERVAL=2;UNTIL=20260514", "EXDATE;VALUE=DATE:20260402"],
    )  # fmt: skip
    create(api, cal, title="Long ago", startsAt="2020-01-01T10:00", endsAt="2020-01-01T11:00")


def test_outside_parsers_expand_the_feed_to_the_occurrences_the_list_returns(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    _fill(api, cal)
    feed = make_feed(db, config, cal.owner, cal.id)
    calendar = parsed(fetch(feed["url"]))

    ours = listed_occurrences(api, cal, *WINDOW)
    theirs = expanded(calendar, *WINDOW, tz=zone("Europe/Berlin"))  # dates: local days
    assert theirs == ours
    titles = [title for title, *_ in ours]
    assert titles.count("Stand-up") == 4  # six, one moved, one cancelled
    assert titles.count("Stand-up (moved)") == 1
    assert titles.count("Bins") == 5  # 5/3 .. 14/5 every other week, less 2/4
    # the series keeps 09:30 local time on both sides of the DST change
    standups = [start for title, start, *_ in ours if title == "Stand-up"]
    assert {s.hour for s in standups} == {8, 7}
    assert "Long ago" not in str(fetch(feed["url"]).text)


def test_a_calendar_imported_from_its_feed_has_the_same_occurrences(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    source = calendar_in(factory, "Europe/Berlin")
    _fill(api, source)
    text = fetch(make_feed(db, config, source.owner, source.id)["url"]).content

    target = calendar_in(factory, "Europe/Berlin")
    answer = api.post(IMPORT, content=text, headers={**target.headers, **ICS})
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report == {"created": 5, "updated": 0, "skipped": 0, "errors": [], "warnings": []}
    assert listed_occurrences(api, target, *WINDOW) == listed_occurrences(api, source, *WINDOW)

    again = api.post(IMPORT, content=text, headers={**target.headers, **ICS})
    assert again.json() == {"created": 0, "updated": 0, "skipped": 5, "errors": [], "warnings": []}
    assert listed_occurrences(api, target, *WINDOW) == listed_occurrences(api, source, *WINDOW)


def test_text_that_looks_like_icalendar_survives_the_feed_and_the_round_trip(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    source = calendar_in(factory, "Asia/Kolkata")
    hostile = {
        "title": 'Plan; "A", B\\C END:VEVENT 👩‍👩‍👧 \u202egnp',
        "description": "line one\nBEGIN:VEVENT\nUID:evil\nEND:VEVENT\n\ttabbed, ; \\",
        "location": "Café, Straße 1; 2nd floor",
    }
    create(api, source, startsAt="2026-03-04T12:00", endsAt="2026-03-04T12:30", **hostile)
    text = fetch(make_feed(db, config, source.owner, source.id)["url"]).content
    vevents = Calendar.from_ical(text).walk("VEVENT")
    assert len(vevents) == 1
    properties = {"title": "SUMMARY", "description": "DESCRIPTION", "location": "LOCATION"}
    assert {k: str(vevents[0][p]) for k, p in properties.items()} == hostile

    target = calendar_in(factory, "Asia/Kolkata")
    report = api.post(IMPORT, content=text, headers={**target.headers, **ICS}).json()
    assert report["created"] == 1
    (event,) = listed(api, target)
    assert {k: event[k] for k in hostile} == hostile
