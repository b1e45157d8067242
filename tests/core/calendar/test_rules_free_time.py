"""``findFreeTime`` keeps the owner's rules (a property test): hypothesis draws rule sets and
calendars, and every slot offered to a bound key passes the write check (its dry run reports
no rule broken), and a write at an offered slot succeeds. Through ``gateway.perform``, as the
fronts call it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calendar_service.access import keys
from calendar_service.calendar import events
from calendar_service.calendar.rules import WEEKDAYS, set_rules
from calendar_service.operations import catalog as operations
from calendar_service.operations import gateway
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import format_in, utcnow, zone
from tests.support import Factory, call_context

BERLIN = zone("Europe/Berlin")


def clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@st.composite
def rule_sets(draw: st.DrawFn) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    if draw(st.booleans()):
        start = draw(st.integers(7 * 4, 11 * 4)) * 15
        end = draw(st.integers(14 * 4, 20 * 4)) * 15
        days = draw(st.sets(st.sampled_from(WEEKDAYS), min_size=1))
        rules["workingHours"] = {d: [{"start": clock(start), "end": clock(end)}] for d in days}
    if draw(st.booleans()):
        rules["bufferMinutes"] = draw(st.sampled_from([5, 10, 15, 30]))
    if draw(st.booleans()):
        rules["maxMeetingsPerDay"] = draw(st.integers(1, 5))
    if draw(st.booleans()):
        rules["maxMeetingMinutesPerDay"] = draw(st.sampled_from([60, 120, 240, 480]))
    if draw(st.booleans()):
        rules["focus"] = {
            "minutes": draw(st.sampled_from([30, 60, 120])),
            "start": "12:00",
            "end": "17:00",
        }
    if draw(st.booleans()):
        rules["noMeetingDays"] = sorted(draw(st.sets(st.sampled_from(WEEKDAYS), max_size=3)))
    if draw(st.booleans()):
        rules["minNoticeMinutes"] = draw(st.sampled_from([0, 60, 1440]))
    if draw(st.booleans()):
        rules["maxDaysAhead"] = draw(st.sampled_from([20, 60]))
    if draw(st.booleans()):
        rules["maxDurationMinutes"] = draw(st.sampled_from([30, 60, 120]))
    return rules


meetings = st.lists(
    st.tuples(
        st.integers(0, 6),  # day of the week
        st.integers(7 * 4, 19 * 4),  # start, in quarter hours
        st.sampled_from([15, 30, 45, 60, 90, 120]),  # minutes
        st.sampled_from(["opaque", "opaque", "transparent", "all-day"]),
    ),
    max_size=8,
)


def week() -> date:
    """The Monday 14 to 20 days ahead."""
    day = utcnow().astimezone(BERLIN).date() + timedelta(days=14)
    return day + timedelta(days=-day.weekday() % 7)


def perform(db: Database, secret: str, op: operations.Operation, **options: Any) -> Any:
    with db.engine.connect() as conn:
        return gateway.perform(
            conn, secret=secret, ctx=call_context(op.name, "POST"), op=op, **options
        )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rules=rule_sets(),
    busy=meetings,
    minutes=st.sampled_from([15, 30, 60, 90]),
    first=st.integers(0, 4),
)
def test_every_slot_find_free_time_offers_passes_the_rules_and_may_be_booked(
    db: Database,
    factory: Factory,
    rules: dict[str, Any],
    busy: list[tuple[int, int, int, str]],
    minutes: int,
    first: int,
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    db.call(set_rules, user_id=owner.id, value=rules, now=utcnow())
    monday = week()
    for day, quarter, length, kind in busy:
        local = datetime(monday.year, monday.month, monday.day, tzinfo=BERLIN)
        start = (local + timedelta(days=day, minutes=quarter * 15)).astimezone(UTC)
        fields: dict[str, Any] = {
            "startsAt": format_in(start, BERLIN),
            "endsAt": format_in(start + timedelta(minutes=length), BERLIN),
        }
        if kind == "all-day":
            the_day = (monday + timedelta(days=day)).isoformat()
            fields = {"startsAt": the_day, "endsAt": the_day, "allDay": True}
        elif kind == "transparent":
            fields["transparency"] = "transparent"
        db.call(
            events.create_event,
            principal=keys.owner_principal(owner.id),
            data=EventCreate(calendarId=owner.default_calendar_id, title="Busy", **fields),
            now=utcnow(),
        )
    asked = {
        "timeMin": (monday + timedelta(days=first)).isoformat(),
        "timeMax": (monday + timedelta(days=7)).isoformat(),
        "durationMinutes": minutes,
        "limit": 20,
    }
    found = perform(db, secret, operations.FREE_TIME, args={"body": asked}).value
    if not isinstance(found, dict):
        found = found.finish()
    for slot in found["slots"]:
        body = {"title": "Offered", **slot}
        dry = perform(
            db, secret, operations.CREATE, args={"body": body, "now": utcnow()}, dry_run=True
        )
        assert "ruleViolations" not in dry.value, (rules, slot, dry.value["ruleViolations"])
    if found["slots"]:
        body = {"title": "Booked", **found["slots"][-1]}
        made = perform(db, secret, operations.CREATE, args={"body": body, "now": utcnow()})
        assert made.status == 201
