"""Calendars in the core (``calendars``): which calendars a key reaches, which calendar a new
event goes to (docs/api.md, "Which calendar"), and what a new calendar must be."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import delete

from calendar_service.access import keys
from calendar_service.access.keys import Principal
from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.calendar import calendars, events
from calendar_service.interop.ical import feeds
from calendar_service.platform.db import Database
from calendar_service.platform.errors import (
    CalendarError,
    InsufficientScope,
    NotFound,
    RevokedKey,
    ValidationFailed,
)
from calendar_service.platform.models import DEFAULT_CALENDAR_NAME, calendars_t
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, Owner, delete_all, queued
from tests.webhooks.support import set_webhook


def principal_for(
    db: Database, factory: Factory, owner: Owner, *, calendar_id: str | None = None
) -> Principal:
    """The principal a request with a new key of ``owner`` gets."""
    _, secret = factory.key(owner, calendar_id=calendar_id)
    return keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())


# ---------------------------------------------------------------------------------------------
# accessible_calendars


def test_an_all_calendars_key_reaches_every_calendar_of_its_owner_default_first(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    zulu = factory.calendar(owner, name="Zulu")
    alpha = factory.calendar(owner, name="Alpha", time_zone="Europe/Berlin")
    factory.calendar(factory.owner(), name="Not mine")
    reached = db.call(calendars.accessible_calendars, principal=principal_for(db, factory, owner))
    assert [(c.id, c.name, c.is_default) for c in reached] == [
        (owner.default_calendar_id, DEFAULT_CALENDAR_NAME, True),
        (alpha, "Alpha", False),
        (zulu, "Zulu", False),
    ]
    assert reached[1].time_zone == "Europe/Berlin"


def test_a_one_calendar_key_reaches_its_calendar_alone(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work", time_zone="America/New_York")
    principal = principal_for(db, factory, owner, calendar_id=work)
    reached = db.call(calendars.accessible_calendars, principal=principal)
    assert [(c.id, c.name, c.time_zone, c.is_default) for c in reached] == [
        (work, "Work", "America/New_York", False)
    ]


# ---------------------------------------------------------------------------------------------
# resolve_target


def target(db: Database, principal: Principal, **sent: str | None) -> str:
    row = db.call(
        calendars.resolve_target,
        principal=principal,
        calendar_id=sent.get("calendar_id"),
        calendar_name=sent.get("calendar_name"),
    )
    return str(row.id)


def refused(db: Database, principal: Principal, **sent: str | None) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as raised:
        target(db, principal, **sent)
    return raised.value


def test_an_all_calendars_key_that_names_no_calendar_writes_to_the_default(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    factory.calendar(owner, name="Work")
    assert target(db, principal_for(db, factory, owner)) == owner.default_calendar_id


def test_a_calendar_can_be_named_by_id_or_by_name(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner)
    assert target(db, principal, calendar_id=work) == work
    assert target(db, principal, calendar_name="Work") == work
    assert target(db, principal, calendar_name="  Work ") == work  # trimmed, as stored
    assert target(db, principal, calendar_id=work, calendar_name="Work") == work


def test_an_id_and_a_name_of_two_different_calendars_are_refused_naming_both(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    factory.calendar(owner, name="Home")
    error = refused(db, principal_for(db, factory, owner), calendar_id=work, calendar_name="Home")
    [field] = error.errors
    assert field["field"] == "calendar"
    assert "'Work'" in field["message"] and "'Home'" in field["message"]


def test_a_calendar_the_owner_does_not_have_is_refused_and_never_created(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = principal_for(db, factory, owner)
    error = refused(db, principal, calendar_id="cal_nope", calendar_name="Holidays")
    assert {(e["field"], e["message"]) for e in error.errors} == {
        ("calendarId", "no calendar with id 'cal_nope'"),
        ("calendar", "no calendar named 'Holidays'"),
    }
    reached = db.call(calendars.accessible_calendars, principal=principal)
    assert [c.name for c in reached] == [DEFAULT_CALENDAR_NAME]


def test_another_owners_calendar_is_as_unknown_as_one_that_does_not_exist(
    db: Database, factory: Factory
) -> None:
    owner, stranger = factory.owner(), factory.owner()
    theirs = factory.calendar(stranger, name="Secret plans")
    principal = principal_for(db, factory, owner)
    assert refused(db, principal, calendar_id=theirs).errors[0]["field"] == "calendarId"
    assert refused(db, principal, calendar_name="Secret plans").errors[0]["field"] == "calendar"


def test_a_one_calendar_key_that_names_no_calendar_writes_to_its_own(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner, calendar_id=work)
    assert target(db, principal) == work
    assert target(db, principal, calendar_id=work, calendar_name=" Work ") == work


@pytest.mark.parametrize(
    "sent",
    [
        lambda owner: {"calendar_name": DEFAULT_CALENDAR_NAME},
        lambda owner: {"calendar_id": owner.default_calendar_id},
        lambda owner: {"calendar_name": "No such calendar"},
        lambda owner: {"calendar_id": "cal_nope"},
    ],
    ids=["owners-other-by-name", "owners-other-by-id", "unknown-name", "unknown-id"],
)
def test_a_one_calendar_key_naming_any_other_calendar_is_out_of_scope_and_learns_nothing(
    db: Database, factory: Factory, sent: Callable[[Owner], dict[str, str]]
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner, calendar_id=work)
    with pytest.raises(InsufficientScope) as raised:
        target(db, principal, **sent(owner))
    message = raised.value.message
    assert "'Work'" in message and work in message  # its own calendar, to send instead
    # The same answer whether or not the owner has such a calendar: nothing else is named.
    assert DEFAULT_CALENDAR_NAME not in message and owner.default_calendar_id not in message
    assert "No such calendar" not in message and "cal_nope" not in message


# ---------------------------------------------------------------------------------------------
# create_calendar


def create(db: Database, owner: Owner, name: str, time_zone: str = "UTC") -> dict[str, object]:
    return db.call(
        calendars.create_calendar, user_id=owner.id, name=name, time_zone=time_zone, now=utcnow()
    )


def test_a_new_calendar_has_a_trimmed_name_and_its_time_zone(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    made = create(db, owner, "  Team offsites ", "Asia/Tokyo")
    assert made["name"] == "Team offsites"
    assert made["timeZone"] == "Asia/Tokyo"
    assert made["isDefault"] is False
    assert str(made["id"]).startswith("cal_")
    rows = db.call(calendars.list_owner_calendars, user_id=owner.id)
    assert [r.name for r in rows] == [DEFAULT_CALENDAR_NAME, "Team offsites"]


def test_an_owner_cannot_have_two_calendars_of_one_name_but_two_owners_can(
    db: Database, factory: Factory
) -> None:
    owner, other = factory.owner(), factory.owner()
    create(db, owner, "Work")
    with pytest.raises(ValidationFailed) as raised:
        create(db, owner, " Work")
    assert raised.value.errors == [
        {"field": "name", "message": "a calendar named 'Work' already exists"}
    ]
    assert create(db, other, "Work")["name"] == "Work"


@pytest.mark.parametrize(
    ("name", "time_zone", "fields"),
    [
        ("", "UTC", {"name"}),
        ("   ", "UTC", {"name"}),
        ("x" * (calendars.NAME_MAX + 1), "UTC", {"name"}),
        ("Work", "Mars/Olympus_Mons", {"timeZone"}),
        ("", "not a zone", {"name", "timeZone"}),
        ("nul\x00inside", "UTC", {"name"}),
    ],
    ids=["empty", "blank", "too-long", "unknown-zone", "both-bad", "nul"],
)
def test_a_calendar_with_bad_fields_is_refused_listing_every_one(
    db: Database, factory: Factory, name: str, time_zone: str, fields: set[str]
) -> None:
    owner = factory.owner()
    with pytest.raises(ValidationFailed) as raised:
        create(db, owner, name, time_zone)
    assert {e["field"] for e in raised.value.errors} == fields
    assert len(db.call(calendars.list_owner_calendars, user_id=owner.id)) == 1


def test_a_calendar_has_a_colour_set_changed_and_removed_and_a_bad_one_is_refused_by_name(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    made = db.call(
        calendars.create_calendar,
        user_id=owner.id,
        name="Work",
        color=" #1A73E8 ",
        now=utcnow(),
    )
    assert made["color"] == "#1a73e8"  # trimmed, lower case
    assert create(db, owner, "Home")["color"] is None  # none chosen
    assert update(db, owner, made["id"], color="#0b8043")["color"] == "#0b8043"
    assert update(db, owner, made["id"], name="Office")["color"] == "#0b8043"  # kept
    reached = db.call(calendars.accessible_calendars, principal=principal_for(db, factory, owner))
    assert [calendars.calendar_public(c)["color"] for c in reached] == [None, None, "#0b8043"]
    one = principal_for(db, factory, owner, calendar_id=made["id"])  # read with the key
    assert db.call(calendars.accessible_calendars, principal=one)[0].color == "#0b8043"
    assert update(db, owner, made["id"], color="")["color"] is None  # removed
    for bad in ("red", "#12345", "#1234567", "1a73e8", "#gggggg", "#1a73e8\x00"):
        with pytest.raises(ValidationFailed) as raised:
            update(db, owner, made["id"], color=bad)
        assert [e["field"] for e in raised.value.errors] == ["color"]
        assert "#rrggbb" in raised.value.errors[0]["message"]
        with pytest.raises(ValidationFailed) as raised:
            db.call(
                calendars.create_calendar, user_id=owner.id, name="New", color=bad, now=utcnow()
            )
        assert [e["field"] for e in raised.value.errors] == ["color"]


def test_a_name_of_the_longest_length_is_accepted(db: Database, factory: Factory) -> None:
    name = "x" * calendars.NAME_MAX
    assert create(db, factory.owner(), name)["name"] == name


# ---------------------------------------------------------------------------------------------
# update_calendar: name and time zone (calendar_changes)

KEY = b"test page-token key"


def update(db: Database, owner: Owner | None, calendar_id: str, **fields: str) -> dict[str, Any]:
    return db.call(
        calendar_changes.update_calendar,
        user_id=owner.id if owner is not None else None,
        calendar_id=calendar_id,
        now=utcnow(),
        **fields,
    )


def make(db: Database, principal: Principal, **body: Any) -> dict[str, Any]:
    event, _ = db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())
    return event


def listed(db: Database, principal: Principal, **options: Any) -> list[dict[str, Any]]:
    page = db.call(events.list_events, principal=principal, token_key=KEY, limit=50, **options)
    return list(page["events"])


def test_a_calendar_is_renamed_trimmed_and_every_key_sees_the_new_name_at_once(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    one = principal_for(db, factory, owner, calendar_id=work)
    everything = principal_for(db, factory, owner)
    make(db, one, title="Single", startsAt="2026-03-02T09:00:00Z", endsAt="2026-03-02T10:00:00Z")
    make(
        db,
        one,
        title="Weekly",
        startsAt="2026-03-03T09:00:00Z",
        endsAt="2026-03-03T10:00:00Z",
        recurrence=["RRULE:FREQ=WEEKLY;COUNT=3"],
    )
    window = {"time_min": "2026-03-01T00:00:00Z", "time_max": "2026-04-01T00:00:00Z"}
    for principal in (one, everything):  # what the list keeps in memory is warm
        assert {e["calendar"] for e in listed(db, principal, **window)} == {"Work"}
    renamed = update(db, owner, work, name="  Office ")
    assert renamed == {
        "id": work,
        "name": "Office",
        "timeZone": "UTC",
        "isDefault": False,
        "color": None,
        "readOnly": False,
    }
    one = principal_for(db, factory, owner, calendar_id=work)  # each request reads its key anew
    for principal in (one, everything):
        shown = listed(db, principal, **window)
        assert len(shown) == 4
        assert {e["calendar"] for e in shown} == {"Office"}
        assert {e["calendar"] for e in listed(db, principal, single_events=False)} == {"Office"}
    names = [c.name for c in db.call(calendars.list_owner_calendars, user_id=owner.id)]
    assert names == [DEFAULT_CALENDAR_NAME, "Office"]


def test_a_rename_follows_the_rules_of_a_new_name_and_keeping_its_own_name_is_fine(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    factory.calendar(owner, name="Home")
    with pytest.raises(ValidationFailed) as raised:
        update(db, owner, work, name=" Home")
    assert raised.value.errors == [
        {"field": "name", "message": "a calendar named 'Home' already exists"}
    ]
    for bad in ("", "  ", "x" * (calendars.NAME_MAX + 1), "nul\x00inside"):
        with pytest.raises(ValidationFailed) as raised:
            update(db, owner, work, name=bad)
        assert [e["field"] for e in raised.value.errors] == ["name"]
    with pytest.raises(ValidationFailed) as raised:
        update(db, owner, work, name="", time_zone="Mars/Olympus_Mons")
    assert {e["field"] for e in raised.value.errors} == {"name", "timeZone"}
    assert update(db, owner, work, name="Work")["name"] == "Work"
    assert update(db, owner, work)["name"] == "Work"  # nothing sent: nothing changes


def test_another_owners_calendar_cannot_be_changed_or_deleted_and_is_not_named(
    db: Database, factory: Factory
) -> None:
    owner, other = factory.owner(), factory.owner()
    theirs = factory.calendar(other, name="Theirs")
    with pytest.raises(NotFound):
        update(db, owner, theirs, name="Mine now")
    with pytest.raises(NotFound):
        db.call(
            calendar_changes.delete_calendar_step,
            user_id=owner.id,
            calendar_id=theirs,
            now=utcnow(),
        )
    with pytest.raises(NotFound):
        update(db, owner, "cal_nothing", name="x")
    assert update(db, None, theirs, name="By the operator")["name"] == "By the operator"


def test_a_re_zone_keeps_timed_instants_and_all_day_dates_and_says_so_to_the_webhook(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    set_webhook(db, owner, "http://127.0.0.1:9/hook")
    work = factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    one = principal_for(db, factory, owner, calendar_id=work)
    timed = make(
        db, one, title="Timed", startsAt="2026-03-02T09:00:00", endsAt="2026-03-02T10:00:00"
    )
    day = make(db, one, title="Day", startsAt="2026-03-05", endsAt="2026-03-06", allDay=True)
    assert timed["startsAt"] == "2026-03-02T09:00:00+01:00"
    assert day["startsAt"] == "2026-03-05T00:00:00+01:00"
    before = len(queued(db, owner))
    assert update(db, owner, work, time_zone="America/New_York")["timeZone"] == "America/New_York"
    one = principal_for(db, factory, owner, calendar_id=work)  # as the next request reads it
    shown = {e["title"]: e for e in listed(db, one)}
    assert shown["Timed"]["startsAt"] == "2026-03-02T03:00:00-05:00"  # the same instant
    assert shown["Timed"]["endsAt"] == "2026-03-02T04:00:00-05:00"
    assert shown["Day"]["startsAt"] == "2026-03-05T00:00:00-05:00"  # the same date
    assert shown["Day"]["endsAt"] == "2026-03-06T00:00:00-05:00"
    sent = queued(db, owner)[before:]
    assert [(kind, event["title"], event["startsAt"]) for kind, event in sent] == [
        ("calendar.event.updated", "Day", "2026-03-05T00:00:00-05:00")
    ]
    # a listing by a date of the new zone finds the all-day event on its day
    on_the_day = listed(
        db, one, time_min="2026-03-05T00:00:00-05:00", time_max="2026-03-05T00:00:01-05:00"
    )
    assert [e["title"] for e in on_the_day] == ["Day"]


def test_a_re_zoned_timed_series_keeps_the_old_zone_as_its_own_and_repeats_exactly_as_before(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    set_webhook(db, owner, "http://127.0.0.1:9/hook")
    work = factory.calendar(owner, name="Work", time_zone="UTC")
    one = principal_for(db, factory, owner, calendar_id=work)
    series = make(
        db,
        one,
        title="Weekly",
        startsAt="2026-03-02T08:00:00Z",  # 09:00 in Berlin, in winter
        endsAt="2026-03-02T09:00:00Z",
        recurrence=["RRULE:FREQ=WEEKLY;COUNT=6"],
    )
    own = make(
        db,
        one,
        title="New York",
        startsAt="2026-03-03T10:00:00",
        endsAt="2026-03-03T11:00:00",
        timeZone="America/New_York",
        recurrence=["RRULE:FREQ=WEEKLY;COUNT=2"],
    )
    yearly = make(
        db,
        one,
        title="Birthday",
        startsAt="2026-03-04",
        endsAt="2026-03-05",
        allDay=True,
        recurrence=["RRULE:FREQ=YEARLY;COUNT=2"],
    )
    before = len(queued(db, owner))
    update(db, owner, work, time_zone="Europe/Berlin")
    one = principal_for(db, factory, owner, calendar_id=work)
    window = {"time_min": "2026-03-01T00:00:00Z", "time_max": "2027-04-01T00:00:00Z"}
    shown = listed(db, one, **window)
    weekly = [e["startsAt"] for e in shown if e["recurringEventId"] == series["id"]]
    assert weekly == [  # 08:00 UTC each week, as before: 10:00 Berlin in summer time
        "2026-03-02T09:00:00+01:00",
        "2026-03-09T09:00:00+01:00",
        "2026-03-16T09:00:00+01:00",
        "2026-03-23T09:00:00+01:00",
        "2026-03-30T10:00:00+02:00",
        "2026-04-06T10:00:00+02:00",
    ]
    got = db.call(events.get_event, principal=one, event_id=series["id"])
    assert got["timeZone"] == "UTC"  # the zone it repeated in, now its own
    assert db.call(events.get_event, principal=one, event_id=own["id"])["timeZone"] == (
        "America/New_York"
    )
    days = [e["startsAt"] for e in shown if e["recurringEventId"] == yearly["id"]]
    assert days == ["2026-03-04T00:00:00+01:00", "2027-03-04T00:00:00+01:00"]
    sent = queued(db, owner)[before:]  # the series in its own zone did not change
    assert sorted((kind, event["title"]) for kind, event in sent) == [
        ("calendar.event.updated", "Birthday"),
        ("calendar.event.updated", "Weekly"),
    ]
    assert next(e for _, e in sent if e["title"] == "Weekly")["timeZone"] == "UTC"


def test_a_re_zone_keeps_the_changed_and_cancelled_occurrences_of_an_all_day_series(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work", time_zone="Asia/Tokyo")
    one = principal_for(db, factory, owner, calendar_id=work)
    series = make(
        db,
        one,
        title="Daily",
        startsAt="2026-03-02",
        endsAt="2026-03-03",
        allDay=True,
        recurrence=["RRULE:FREQ=DAILY;COUNT=4"],
    )
    now = utcnow()
    db.call(events.delete_event, principal=one, event_id=f"{series['id']}_20260303", now=now)
    db.call(
        events.update_event,
        principal=one,
        event_id=f"{series['id']}_20260304",
        body={"title": "Moved", "startsAt": "2026-03-07", "endsAt": "2026-03-08"},
        now=now,
    )
    update(db, owner, work, time_zone="America/Los_Angeles")
    one = principal_for(db, factory, owner, calendar_id=work)
    shown = listed(db, one, time_min="2026-03-01T00:00:00Z", time_max="2026-04-01T00:00:00Z")
    assert [(e["title"], e["startsAt"]) for e in shown] == [
        ("Daily", "2026-03-02T00:00:00-08:00"),
        ("Daily", "2026-03-05T00:00:00-08:00"),
        ("Moved", "2026-03-07T00:00:00-08:00"),
    ]
    moved = db.call(events.get_event, principal=one, event_id=f"{series['id']}_20260304")
    assert moved["originalStartsAt"] == "2026-03-04T00:00:00-08:00"


# ---------------------------------------------------------------------------------------------
# delete_calendar_step (calendar_changes)


def test_the_default_calendar_cannot_be_deleted(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    with pytest.raises(CalendarError) as raised:
        delete_all(db, owner, owner.default_calendar_id)
    assert (raised.value.code, raised.value.status) == ("default_calendar", 409)
    assert len(db.call(calendars.list_owner_calendars, user_id=owner.id)) == 1


def test_deleting_a_calendar_takes_its_events_feeds_and_keys_with_webhooks_and_tombstones(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    set_webhook(db, owner, "http://127.0.0.1:9/hook")
    work = factory.calendar(owner, name="Work")
    one_key, _ = factory.key(owner, calendar_id=work)
    kept_key, kept_secret = factory.key(owner, calendar_id=owner.default_calendar_id)
    one = principal_for(db, factory, owner, calendar_id=work)
    everything = principal_for(db, factory, owner)
    kept = make(
        db, everything, title="Kept", startsAt="2026-03-02", endsAt="2026-03-02", allDay=True
    )
    token = db.call(events.list_events, principal=everything, token_key=KEY)["nextSyncToken"]
    single = make(
        db, one, title="Single", startsAt="2026-03-02T09:00:00Z", endsAt="2026-03-02T10:00:00Z"
    )
    series = make(
        db,
        one,
        title="Weekly",
        startsAt="2026-03-03T09:00:00Z",
        endsAt="2026-03-03T10:00:00Z",
        recurrence=["RRULE:FREQ=WEEKLY"],
    )
    occurrence = f"{series['id']}_20260310T090000Z"
    db.call(
        events.update_event,
        principal=one,
        event_id=occurrence,
        body={"title": "Changed"},
        now=utcnow(),
    )
    made_feed = db.call(
        feeds.create_feed,
        user_id=owner.id,
        calendar_id=work,
        base_url="http://127.0.0.1",
        now=utcnow(),
    )
    db.call(
        feeds.record_fetch,
        feed_id=made_feed["id"],
        at=utcnow(),
        status=200,
        events=2,
        client_addr=None,
        user_agent=None,
    )
    assert db.call(calendar_changes.calendar_contents, user_id=owner.id, calendar_id=work) == {
        "id": work,
        "name": "Work",
        "timeZone": "UTC",
        "isDefault": False,
        "color": None,
        "readOnly": False,
        "events": 2,
        "feeds": 1,
        "keys": 2,  # the factory's and principal_for's
    }
    before = len(queued(db, owner))
    assert delete_all(db, owner, work) == 2
    # gone, each live event with its webhook carrying it as it was
    names = [c.name for c in db.call(calendars.list_owner_calendars, user_id=owner.id)]
    assert names == [DEFAULT_CALENDAR_NAME]
    sent = queued(db, owner)[before:]
    assert sorted((kind, event["id"]) for kind, event in sent) == sorted(
        [("calendar.event.deleted", single["id"]), ("calendar.event.deleted", series["id"])]
    )
    assert {event["calendar"] for _, event in sent} == {"Work"}
    gone_series = next(e for _, e in sent if e["id"] == series["id"])
    assert gone_series["recurrence"] == ["RRULE:FREQ=WEEKLY"]
    assert [e["id"] for e in listed(db, everything)] == [kept["id"]]
    # a sync of every calendar learns the events are gone
    synced = db.call(events.list_events, principal=everything, token_key=KEY, sync_token=token)
    assert sorted(e["id"] for e in synced["events"]) == sorted(
        [single["id"], series["id"], occurrence]
    )
    assert {e["status"] for e in synced["events"]} == {"cancelled"}
    assert [c["id"] for c in synced["calendars"]] == [owner.default_calendar_id]
    # its one-calendar keys are revoked, saying why, and keep the calendar's id (the pages
    # say "deleted calendar", not "All calendars") and their history; others untouched
    revoked = db.call(keys.get_key, user_id=owner.id, key_id=one_key)
    assert revoked["revoked_at"] is not None
    assert (revoked["calendar_id"], revoked["revoked_by"]) == (work, "calendar")
    [listed_key] = [
        k for k in db.call(keys.list_keys, user_id=owner.id, now=utcnow()) if k["id"] == one_key
    ]
    assert (listed_key["calendarId"], listed_key["revokedBy"]) == (work, "calendar")
    with pytest.raises(RevokedKey, match="the calendar it was limited to has been deleted"):
        keys.authorize(db.call(keys.key_row_by_id, key_id=one_key), now=utcnow())
    keys.authorize(db.call(keys.identify, secret=kept_secret), now=utcnow())
    assert db.call(keys.get_key, user_id=owner.id, key_id=kept_key)["revoked_at"] is None
    # its feed is revoked, kept with the calendar's id and its fetch history
    [feed] = db.call(feeds.list_feeds, user_id=owner.id)
    assert (feed["id"], feed["calendarId"], feed["calendar"], feed["state"]) == (
        made_feed["id"],
        work,
        None,
        "revoked",
    )
    assert feed["fetches"] == 1
    assert len(db.call(feeds.list_fetches, user_id=owner.id, feed_id=feed["id"])) == 1
    token = made_feed["url"].rsplit("/", 1)[1].removesuffix(".ics")
    found, version = db.call(feeds.open_feed, token=token, now=utcnow())
    assert (found.revoked, found.calendar, version) == (True, None, None)  # answered 404


def test_a_one_calendar_key_whose_calendar_is_gone_reaches_nothing_even_if_not_revoked(
    db: Database, factory: Factory
) -> None:
    """Defence in depth: the deletion revokes a calendar's keys in its own transaction, but a
    key row naming a calendar that does not exist (no foreign key holds it) is refused all the
    same, and a principal naming one reaches no calendar."""
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, secret = factory.key(owner, calendar_id=work)
    db.call(lambda conn: conn.execute(delete(calendars_t).where(calendars_t.c.id == work)))
    with pytest.raises(RevokedKey, match="the calendar it was limited to has been deleted"):
        keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())
    principal = keys.owner_principal(owner.id, calendar_id=work)
    assert db.call(calendars.accessible_calendars, principal=principal) == []


def test_a_sync_of_the_default_calendar_alone_learns_nothing_of_a_deleted_calendar(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    default_only = principal_for(db, factory, owner, calendar_id=owner.default_calendar_id)
    token = db.call(events.list_events, principal=default_only, token_key=KEY)["nextSyncToken"]
    one = principal_for(db, factory, owner, calendar_id=work)
    make(db, one, title="Gone", startsAt="2026-03-02", endsAt="2026-03-02", allDay=True)
    delete_all(db, owner, work)
    synced = db.call(events.list_events, principal=default_only, token_key=KEY, sync_token=token)
    assert synced["events"] == []


def test_a_big_calendar_is_deleted_in_bounded_steps(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    set_webhook(db, owner, "http://127.0.0.1:9/hook")
    work = factory.calendar(owner, name="Big")
    one = principal_for(db, factory, owner, calendar_id=work)
    for day in range(1, 8):
        make(
            db,
            one,
            title=f"d{day}",
            startsAt=f"2026-03-{day:02d}T09:00:00Z",
            endsAt=f"2026-03-{day:02d}T10:00:00Z",
        )
    before = len(queued(db, owner))
    steps = []
    for _ in range(10):
        step = db.call(
            calendar_changes.delete_calendar_step,
            user_id=owner.id,
            calendar_id=work,
            now=utcnow(),
            most=3,
        )
        steps.append((step["deletedEvents"], step["done"]))
        if step["done"]:
            break
    assert steps == [(3, False), (3, False), (1, True)]
    assert len(queued(db, owner)) - before == 7
    with pytest.raises(NotFound):  # deleted: deleting it again finds nothing
        delete_all(db, owner, work)
