"""``GET /ical/<token>.ics``: what the feed serves, ETag and If-None-Match, plain 404s for
unknown, malformed and revoked tokens, the fetch history, the window, SEQUENCE."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from calendar_service.asgi.boundary import loggable_path
from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.calendar import reminders
from calendar_service.interop.ical import feeds
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.errors import NotFound, ValidationFailed
from calendar_service.platform.models import events_t, feeds_t, fetches_t
from calendar_service.platform.timeutil import utcnow
from tests.rest.conftest import EVENTS
from tests.rest.ical.support import ICS, IMPORT, fetch, make_feed, parsed
from tests.rest.recurrence_support import calendar_in, create, listed
from tests.support import Factory, RunningServer


def test_the_feed_is_rfc_5545_in_the_calendars_zone_with_series_and_their_changes(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    single = create(api, cal, title="Dentist", startsAt="2026-03-04T12:00",
                    endsAt="2026-03-04T12:45", location="Hauptstraße 1")  # fmt: skip
    trip = create(api, cal, title="Trip", startsAt="2026-03-10", endsAt="2026-03-12", allDay=True)
    series = create(
        api, cal, title="Stand-up", startsAt="2026-03-02T09:30", endsAt="2026-03-02T09:45",
        recurrence=["RRULE:FREQ=WEEKLY;COUNT=4"],
    )  # fmt: skip
    moved = f"{EVENTS}/{series['id']}_20260309T083000Z"
    assert api.patch(moved, json={"title": "Stand-up, later", "startsAt": "2026-03-09T10:00",
                                  "endsAt": "2026-03-09T10:15"},
                     headers=cal.headers).status_code == 200  # fmt: skip
    gone = f"{EVENTS}/{series['id']}_20260316T083000Z"
    assert api.delete(gone, headers=cal.headers).status_code == 204
    other = calendar_in(factory, "UTC", owner=cal.owner)
    create(api, other, title="Not in this feed", startsAt="2026-03-04T12:00Z",
           endsAt="2026-03-04T13:00Z")  # fmt: skip

    response = fetch(make_feed(db, config, cal.owner, cal.id)["url"])
    assert response.headers["cache-control"] == "private, no-cache"
    assert "set-cookie" not in response.headers
    text = response.text
    assert "\r\n" in text and "Not in this feed" not in text
    calendar = parsed(response)
    assert str(calendar["VERSION"]) == "2.0"
    assert str(calendar["X-WR-TIMEZONE"]) == "Europe/Berlin"
    assert [str(tz["TZID"]) for tz in calendar.walk("VTIMEZONE")] == ["Europe/Berlin"]
    vevents = {(str(v["UID"]), "RECURRENCE-ID" in v): v for v in calendar.walk("VEVENT")}
    assert len(vevents) == 4

    dentist = vevents[(single["id"], False)]
    assert dentist["DTSTART"].params["TZID"] == "Europe/Berlin"
    assert dentist["DTSTART"].to_ical() == b"20260304T120000"
    assert str(dentist["LOCATION"]) == "Hauptstraße 1"
    assert "DTSTAMP" in dentist and int(dentist["SEQUENCE"]) == 0

    all_day = vevents[(trip["id"], False)]
    assert all_day["DTSTART"].params["VALUE"] == "DATE"
    assert (all_day["DTSTART"].to_ical(), all_day["DTEND"].to_ical()) == (b"20260310", b"20260312")

    master = vevents[(series["id"], False)]
    assert master["RRULE"].to_ical() == b"FREQ=WEEKLY;COUNT=4"
    assert master["EXDATE"].to_ical() == b"20260316T093000"
    assert master["EXDATE"].params["TZID"] == "Europe/Berlin"
    changed = vevents[(series["id"], True)]
    assert changed["RECURRENCE-ID"].to_ical() == b"20260309T093000"
    assert str(changed["SUMMARY"]) == "Stand-up, later"
    assert changed["DTSTART"].to_ical() == b"20260309T100000"


def test_an_unchanged_feed_answers_304_to_its_etag_and_a_change_gives_a_new_one(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "UTC")
    event = create(api, cal, startsAt="2026-03-04T12:00Z", endsAt="2026-03-04T13:00Z")
    url = make_feed(db, config, cal.owner, cal.id)["url"]
    first = fetch(url)
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert fetch(url).headers["etag"] == etag  # the same text, the same tag

    for condition in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = fetch(url, **{"If-None-Match": condition})
        assert again.status_code == 304, condition
        assert again.content == b"" and again.headers["etag"] == etag
    assert fetch(url, **{"If-None-Match": '"other"'}).status_code == 200

    changed = api.patch(f"{EVENTS}/{event['id']}", json={"title": "Renamed"}, headers=cal.headers)
    assert changed.status_code == 200
    after = fetch(url, **{"If-None-Match": etag})
    assert after.status_code == 200
    assert after.headers["etag"] != etag and "Renamed" in after.text

    assert api.delete(f"{EVENTS}/{event['id']}", headers=cal.headers).status_code == 204
    gone = fetch(url, **{"If-None-Match": after.headers["etag"]})
    assert gone.status_code == 200 and "Renamed" not in gone.text


def test_unknown_malformed_and_revoked_tokens_are_a_plain_404(
    server: RunningServer, factory: Factory, db: Database, config: Config
) -> None:
    owner = factory.owner()
    feed = make_feed(db, config, owner, owner.default_calendar_id)
    assert fetch(feed["url"]).status_code == 200
    token = feed["url"].rsplit("/", 1)[1].removesuffix(".ics")
    unknown = ("0" if token[0] != "0" else "1") + token[1:]
    answers = [
        fetch(f"{server.url}/ical/{unknown}.ics"),
        fetch(f"{server.url}/ical/{token[:-1]}.ics"),
        fetch(f"{server.url}/ical/{token}!.ics"),
    ]
    db.call(feeds.revoke_feed, user_id=owner.id, feed_id=feed["id"], now=utcnow())
    answers.append(fetch(feed["url"]))
    # The same answer for each: nothing tells a revoked feed from one that never was.
    assert {(a.status_code, a.json()["code"], a.json()["detail"]) for a in answers} == {
        (404, "not_found", "No such feed.")
    }
    for other in (f"{token}.json", f"..%2F{token}.ics"):
        assert fetch(f"{server.url}/ical/{other}").status_code == 404


def test_every_fetch_is_in_the_feeds_history_and_the_token_is_stored_only_hashed(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "UTC")
    create(api, cal, startsAt="2026-03-04T12:00Z", endsAt="2026-03-04T13:00Z")
    feed = make_feed(db, config, cal.owner, cal.id)
    token = feed["url"].rsplit("/", 1)[1].removesuffix(".ics")
    etag = fetch(feed["url"], **{"User-Agent": "Google-Calendar-Importer"}).headers["etag"]
    fetch(feed["url"], **{"User-Agent": "iOS/17 dataaccessd", "If-None-Match": etag})
    db.call(feeds.revoke_feed, user_id=cal.owner.id, feed_id=feed["id"], now=utcnow())
    fetch(feed["url"], **{"User-Agent": "Microsoft Outlook"})

    history = db.call(feeds.list_fetches, user_id=cal.owner.id, feed_id=feed["id"])
    assert [(h["status"], h["events"], h["userAgent"]) for h in history] == [
        (404, 0, "Microsoft Outlook"),
        (304, 0, "iOS/17 dataaccessd"),
        (200, 1, "Google-Calendar-Importer"),
    ]
    assert {h["clientAddr"] for h in history} == {"127.0.0.1"}
    listed = db.call(feeds.list_feeds, user_id=cal.owner.id)
    assert [(f["id"], f["fetches"], f["state"]) for f in listed] == [(feed["id"], 3, "revoked")]
    assert listed[0]["lastFetchedAt"] is not None

    row = db.call(
        lambda conn: conn.execute(select(feeds_t).where(feeds_t.c.id == feed["id"])).one()
    )
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    stored = db.call(lambda conn: [tuple(r) for r in conn.execute(select(feeds_t, fetches_t)
                     .join(fetches_t, fetches_t.c.feed_id == feeds_t.c.id))])  # fmt: skip
    assert token not in repr(stored)
    other = factory.owner()
    with pytest.raises(NotFound):
        db.call(feeds.list_fetches, user_id=other.id, feed_id=feed["id"])


def test_the_feed_keeps_a_year_of_past_events_and_series_that_still_run(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "UTC")
    now = utcnow()

    def at(days: int) -> str:
        return (now + timedelta(days=days)).strftime("%Y-%m-%dT10:00:00Z")

    create(api, cal, title="Long ago", startsAt=at(-400), endsAt=at(-400))
    create(api, cal, title="Last month", startsAt=at(-30), endsAt=at(-30))
    create(api, cal, title="Next month", startsAt=at(30), endsAt=at(30))
    create(api, cal, title="Old series", startsAt=at(-800), endsAt=at(-800),
           recurrence=["RRULE:FREQ=WEEKLY;COUNT=3"])  # fmt: skip
    create(api, cal, title="Running series", startsAt=at(-800), endsAt=at(-800),
           recurrence=["RRULE:FREQ=YEARLY"])  # fmt: skip
    calendar = parsed(fetch(make_feed(db, config, cal.owner, cal.id)["url"]))
    titles = sorted(str(v["SUMMARY"]) for v in calendar.walk("VEVENT"))
    assert titles == ["Last month", "Next month", "Running series"]


def test_sequence_is_zero_when_made_and_grows_with_each_later_change(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "UTC")
    event = create(api, cal, startsAt="2026-03-04T12:00Z", endsAt="2026-03-04T13:00Z")
    url = make_feed(db, config, cal.owner, cal.id)["url"]

    def sequence() -> int:
        return int(parsed(fetch(url)).walk("VEVENT")[0]["SEQUENCE"])

    assert sequence() == 0
    # As if the event had been made an hour ago (a test cannot wait that long).
    db.call(lambda conn: conn.execute(update(events_t).where(events_t.c.id == event["id"])
            .values(created_at=utcnow() - timedelta(hours=1))))  # fmt: skip
    seen = []
    for title in ("One", "Two"):
        assert api.patch(f"{EVENTS}/{event['id']}", json={"title": title},
                         headers=cal.headers).status_code == 200  # fmt: skip
        seen.append(sequence())
    assert 3600 <= seen[0] <= seen[1]


def test_fetch_history_past_its_retention_is_purged_with_the_call_history(
    factory: Factory, db: Database, config: Config
) -> None:
    owner = factory.owner()
    feed = make_feed(db, config, owner, owner.default_calendar_id)
    now = utcnow()
    for age in (91, 89, 0):
        db.call(feeds.record_fetch, feed_id=feed["id"], at=now - timedelta(days=age), status=200,
                events=age, client_addr=None, user_agent=None)  # fmt: skip
    purged = db.call(purge_expired, now=now, call_history_days=90)
    assert purged["feedFetches"] >= 1
    kept = db.call(feeds.list_fetches, user_id=owner.id, feed_id=feed["id"])
    assert [f["events"] for f in kept] == [0, 89]


def test_a_feeds_token_never_reaches_the_logs_with_its_path() -> None:
    token = "a" * 43
    assert loggable_path(f"/ical/{token}.ics") == "/ical/<token>"
    assert loggable_path(f"/ical/{token}") == "/ical/<token>"
    assert loggable_path("/api/v1/calendar/events") == "/api/v1/calendar/events"


def test_transparent_events_are_transp_transparent_in_the_feed_and_come_back_so(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    """RFC 5545 3.8.2.7 ``TRANSP`` is our ``transparency``, both ways."""
    cal = calendar_in(factory, "UTC")
    create(api, cal, title="Busy", startsAt="2026-03-04T12:00Z", endsAt="2026-03-04T13:00Z")
    create(api, cal, title="Free", startsAt="2026-03-05T12:00Z", endsAt="2026-03-05T13:00Z",
           transparency="transparent")  # fmt: skip
    response = fetch(make_feed(db, config, cal.owner, cal.id)["url"])
    transp = {str(e["SUMMARY"]): str(e["TRANSP"]) for e in parsed(response).walk("VEVENT")}
    assert transp == {"Busy": "OPAQUE", "Free": "TRANSPARENT"}

    empty = calendar_in(factory, "UTC")
    answer = api.post(
        IMPORT, params={"calendarId": empty.id}, content=response.text,
        headers={**ICS, **empty.headers},
    )  # fmt: skip
    assert answer.status_code == 200 and answer.json()["created"] == 2, answer.text
    assert {e["title"]: e["transparency"] for e in listed(api, empty)} == {
        "Busy": "opaque",
        "Free": "transparent",
    }


def test_a_calendars_colour_is_the_feeds_x_apple_calendar_color_and_a_new_one_a_new_etag(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "UTC")
    url = make_feed(db, config, cal.owner, cal.id)["url"]
    plain = fetch(url)
    assert "X-APPLE-CALENDAR-COLOR" not in plain.text  # none chosen
    db.call(
        calendar_changes.update_calendar,
        user_id=cal.owner.id,
        calendar_id=cal.id,
        color="#0B8043",
        now=utcnow(),
    )
    coloured = fetch(url, **{"If-None-Match": plain.headers["etag"]})
    assert coloured.status_code == 200
    assert str(parsed(coloured)["X-APPLE-CALENDAR-COLOR"]) == "#0b8043"


def test_the_owners_default_reminder_is_a_valarm_on_each_event_and_a_new_etag(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    create(api, cal, title="Dentist", startsAt="2026-03-04T12:00", endsAt="2026-03-04T12:45")
    series = create(
        api, cal, title="Stand-up", startsAt="2026-03-02T09:30", endsAt="2026-03-02T09:45",
        recurrence=["RRULE:FREQ=WEEKLY;COUNT=4"],
    )  # fmt: skip
    moved = f"{EVENTS}/{series['id']}_20260309T083000Z"
    assert api.patch(moved, json={"title": "Later"}, headers=cal.headers).status_code == 200
    url = make_feed(db, config, cal.owner, cal.id)["url"]
    plain = fetch(url)
    assert "BEGIN:VALARM" not in plain.text  # none set
    db.call(reminders.set_reminder, user_id=cal.owner.id, minutes_before=15, now=utcnow())
    reminded = fetch(url, **{"If-None-Match": plain.headers["etag"]})
    assert reminded.status_code == 200
    vevents = list(parsed(reminded).walk("VEVENT"))
    assert len(vevents) == 3
    for vevent in vevents:
        [alarm] = vevent.walk("VALARM")
        assert str(alarm["ACTION"]) == "DISPLAY"
        assert alarm["TRIGGER"].to_ical() == b"-PT15M"
        assert str(alarm["DESCRIPTION"]) == str(vevent["SUMMARY"])
    assert db.call(reminders.get_reminder, user_id=cal.owner.id) == 15
    db.call(reminders.set_reminder, user_id=cal.owner.id, minutes_before=None, now=utcnow())
    assert "BEGIN:VALARM" not in fetch(url).text


@pytest.mark.parametrize("minutes", [-1, 40321, "soon", 1.5, True])
def test_a_default_reminder_out_of_range_is_refused_naming_minutes_before(
    db: Database, factory: Factory, minutes: object
) -> None:
    owner = factory.owner()
    with pytest.raises(ValidationFailed) as refused:
        db.call(reminders.set_reminder, user_id=owner.id, minutes_before=minutes, now=utcnow())
    assert refused.value.errors[0]["field"] == "minutesBefore"
