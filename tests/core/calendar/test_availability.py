"""Availability in the core (``availability``, ``events.busy``), without HTTP: merging and
clipping, working hours and the slot grid on DST days and in zones with odd offsets, what a
free/busy key sees of a conflict, and the operations as the gateway runs them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from calendar_service.access import keys
from calendar_service.access.keys import Principal
from calendar_service.calendar import availability, events
from calendar_service.calendar.availability import Hours, merged
from calendar_service.calendar.calendars import get_calendar_row
from calendar_service.calendar.events.busy import BUDGET as BUSY_BUDGET
from calendar_service.calendar.events.busy import conflicts
from calendar_service.calendar.recurrence import measured
from calendar_service.calendar.recurrence.expansion import READ_INSTANCE_UNITS
from calendar_service.operations import catalog as operations
from calendar_service.operations import gateway
from calendar_service.platform.db import Database
from calendar_service.platform.deferred import Later, finish
from calendar_service.platform.errors import InsufficientScope, ValidationFailed
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import utc_text, utcnow, zone
from tests.support import Factory, Owner, call_context

BERLIN = zone("Europe/Berlin")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def busy(start: str, end: str) -> tuple[str, str, str, str, str]:
    return ("cal", utc_text(at(start)), utc_text(at(end)), "ev", "title")


def principal_for(db: Database, factory: Factory, owner: Owner, permission: str) -> Principal:
    _, secret = factory.key(owner, permission=permission)
    return keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())


def add(db: Database, owner: Owner, calendar_id: str, **fields: Any) -> dict[str, Any]:
    return db.call(
        events.create_event,
        principal=events.owner_principal(owner.id),
        data=EventCreate(calendarId=calendar_id, title=fields.pop("title", "busy"), **fields),
        now=utcnow(),
    )


def test_merging_joins_overlapping_and_touching_intervals_and_clips_to_the_window() -> None:
    items = [
        busy("2026-03-02T11:00Z", "2026-03-02T12:00Z"),  # touches the next-to-last
        busy("2026-03-02T07:00Z", "2026-03-02T09:30Z"),  # starts before the window
        busy("2026-03-02T09:00Z", "2026-03-02T10:00Z"),  # overlaps it
        busy("2026-03-02T10:00Z", "2026-03-02T11:00Z"),
        busy("2026-03-02T13:00Z", "2026-03-02T13:00Z"),  # zero-length: no time
        busy("2026-03-02T17:30Z", "2026-03-03T02:00Z"),  # ends after the window
        busy("2026-03-03T09:00Z", "2026-03-03T10:00Z"),  # outside it
    ]
    spans = merged(items, at("2026-03-02T08:00Z"), at("2026-03-02T18:00Z"))
    assert spans == [
        (utc_text(at("2026-03-02T08:00Z")), utc_text(at("2026-03-02T12:00Z"))),
        (utc_text(at("2026-03-02T17:30Z")), utc_text(at("2026-03-02T18:00Z"))),
    ]


@pytest.mark.parametrize(
    ("day", "offset"),
    [("2026-03-29", "+02:00"), ("2026-10-25", "+01:00"), ("2026-06-01", "+02:00")],
)
def test_working_hours_are_wall_clock_hours_on_dst_change_days(day: str, offset: str) -> None:
    hours = Hours(timedelta(hours=9), timedelta(hours=17), frozenset(range(7)))
    whole_day = [(at(f"{day}T00:00{offset}") - timedelta(hours=3), at(f"{day}T23:59{offset}"))]
    [(start, end)] = availability._within_hours(whole_day, hours, BERLIN, whole_day[0])
    assert start == at(f"{day}T09:00{offset}")
    assert end == at(f"{day}T17:00{offset}")


def test_free_time_is_cut_to_each_working_day_and_several_gaps_share_one_day() -> None:
    hours = Hours(timedelta(hours=9), timedelta(hours=17), frozenset(range(5)))  # MO-FR
    free = [
        (at("2026-03-02T08:00Z"), at("2026-03-02T10:00Z")),  # Monday
        (at("2026-03-02T11:00Z"), at("2026-03-02T11:30Z")),  # Monday again
        (at("2026-03-02T12:00Z"), at("2026-03-04T12:00Z")),  # to Wednesday noon
        (at("2026-03-06T18:00Z"), at("2026-03-09T10:00Z")),  # Friday evening to Monday
    ]
    window = (at("2026-03-02T00:00Z"), at("2026-03-10T00:00Z"))
    cut = list(availability._within_hours(free, hours, UTC, window))
    assert cut == [
        (at("2026-03-02T09:00Z"), at("2026-03-02T10:00Z")),
        (at("2026-03-02T11:00Z"), at("2026-03-02T11:30Z")),
        (at("2026-03-02T12:00Z"), at("2026-03-02T17:00Z")),
        (at("2026-03-03T09:00Z"), at("2026-03-03T17:00Z")),
        (at("2026-03-04T09:00Z"), at("2026-03-04T12:00Z")),
        (at("2026-03-09T09:00Z"), at("2026-03-09T10:00Z")),
    ]


def test_a_working_day_that_starts_in_the_dst_gap_starts_when_the_gap_ends() -> None:
    hours = Hours(timedelta(hours=2, minutes=30), timedelta(hours=6), frozenset(range(7)))
    free = [(at("2026-03-29T00:00+01:00"), at("2026-03-29T12:00+02:00"))]
    [(start, end)] = availability._within_hours(free, hours, BERLIN, free[0])
    assert start == at("2026-03-29T03:30+02:00")  # 02:30 does not exist: moved by the gap
    assert end == at("2026-03-29T06:00+02:00")


def test_the_grid_is_local_quarter_hours_even_in_a_zone_offset_by_45_minutes() -> None:
    kathmandu = zone("Asia/Kathmandu")  # +05:45
    free = [(at("2026-03-02T03:20Z"), at("2026-03-02T05:00Z"))]
    starts = list(availability._starts(free, timedelta(minutes=30), kathmandu))
    local = [s.astimezone(kathmandu).strftime("%H:%M") for s in starts]
    assert local == ["09:15", "09:30", "09:45", "10:00", "10:15"]
    short = list(availability._starts(free, timedelta(minutes=7), kathmandu))
    # A 7-minute grid from local midnight: 09:05 (03:20Z) rounds up to 09:06 (the 78th step).
    assert short[0].astimezone(kathmandu).strftime("%H:%M") == "09:06"
    assert all(b - a == timedelta(minutes=7) for a, b in itertools.pairwise(short))


def test_a_free_busy_key_learns_the_times_of_a_conflict_but_not_the_titles(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    cal = factory.calendar(owner, time_zone="Europe/Berlin")
    made = add(
        db, owner, cal, title="Salary talk", startsAt="2026-03-02T09:00", endsAt="2026-03-02T10:00"
    )
    row = db.call(get_calendar_row, calendar_id=cal)
    span = {"start": at("2026-03-02T09:30+01:00"), "end": at("2026-03-02T11:00+01:00")}
    seen_by_writer = db.call(
        conflicts, principal=principal_for(db, factory, owner, "write"), calendar=row, **span
    )
    assert seen_by_writer == [
        {
            "startsAt": "2026-03-02T09:00:00+01:00",
            "endsAt": "2026-03-02T10:00:00+01:00",
            "id": made["id"],
            "title": "Salary talk",
        }
    ]
    seen_by_scheduler = db.call(
        conflicts, principal=principal_for(db, factory, owner, "freebusy"), calendar=row, **span
    )
    assert seen_by_scheduler == [
        {"startsAt": "2026-03-02T09:00:00+01:00", "endsAt": "2026-03-02T10:00:00+01:00"}
    ]
    assert db.call(conflicts, principal=events.owner_principal(owner.id), calendar=row,
                   start=span["end"], end=span["end"]) == []  # fmt: skip


async def test_the_gateway_lets_every_key_query_availability_and_refuses_the_rest_to_freebusy(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    window = {"timeMin": "2026-03-02", "timeMax": "2026-03-03"}
    bodies = {operations.FREE_BUSY: window, operations.FREE_TIME: {**window, "durationMinutes": 60}}
    for permission in ("read", "write", "freebusy"):
        _, secret = factory.key(owner, permission=permission)
        for op, body in bodies.items():
            outcome = await db.run_grouped(
                gateway.perform,
                secret=secret,
                ctx=call_context(op.name, "POST", "/api/v1/calendar/x"),
                op=op,
                args={"body": body},
            )
            assert outcome.status == 200
        if permission == "freebusy":
            with pytest.raises(InsufficientScope) as refused:
                await db.run_grouped(
                    gateway.perform,
                    secret=secret,
                    ctx=call_context(),
                    op=operations.LIST,
                    args={"token_key": b"k"},
                )
            assert refused.value.required_scope == "calendar:read"


def test_a_window_of_92_days_is_accepted_and_one_minute_more_is_not(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = events.owner_principal(owner.id)
    window = {"timeMin": "2026-01-01T00:00Z", "timeMax": "2026-04-03T00:00Z"}
    answer = db.call(availability.query_free_busy, principal=principal, body=window)
    assert [c["busy"] for c in answer["calendars"]] == [[]]
    with pytest.raises(ValidationFailed) as refused:
        db.call(
            availability.query_free_busy,
            principal=principal,
            body={**window, "timeMax": "2026-04-03T00:01Z"},
        )
    assert refused.value.errors[0]["field"] == "timeMax"


def test_availability_over_a_dense_series_is_left_for_after_the_transaction_and_bounded(
    db: Database, factory: Factory
) -> None:
    """96 a day over the longest window (issue 24, B): what the fronts run is a ``Later``
    (expanded off the event loop), busy all through, within the budget's instances."""
    owner = factory.owner()
    principal = events.owner_principal(owner.id)
    quarters = "BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,15,30,45"
    add(
        db,
        owner,
        owner.default_calendar_id,
        title="dense",
        startsAt="2033-01-03T00:00:00Z",  # chunks no other test has made
        endsAt="2033-01-03T00:15:00Z",
        recurrence=[f"RRULE:FREQ=DAILY;{quarters}"],
    )
    window = {"timeMin": "2033-01-03T00:00:00Z", "timeMax": "2033-04-05T00:00:00Z"}
    for op in (operations.FREE_BUSY, operations.FREE_TIME):
        body = window if op is operations.FREE_BUSY else {**window, "durationMinutes": 15}
        with measured() as work:
            found = db.call(op.run, principal=principal, body=body)
            # The first expands (later); the second reads what the first kept, at once.
            assert isinstance(found, Later) == (op is operations.FREE_BUSY)
            answer = finish(found)
        if op is operations.FREE_BUSY:
            assert answer["calendars"][0]["busy"] == [
                {"startsAt": "2033-01-03T00:00:00Z", "endsAt": "2033-04-05T00:00:00Z"}
            ]
        else:
            assert answer["slots"] == []
        assert work.instances <= BUSY_BUDGET // READ_INSTANCE_UNITS + 3 * 733
