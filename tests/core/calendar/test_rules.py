"""The owner's rules for agents in the core (``calendar.rules``, ``calendar.rule_check``): every
write path a key takes through the gateway against every rule (table-driven), each rule exact
on its own (DST days, midnight, all-day and transparent events), bad rules refused naming the
field, and what the owner, exempt keys and app passwords may do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from calendar_service.access import keys
from calendar_service.calendar import events
from calendar_service.calendar.rule_verdict import Meetings, broken
from calendar_service.calendar.rules import parsed, read_rules, set_rules, stored_rules
from calendar_service.governance import approving
from calendar_service.operations import catalog as operations
from calendar_service.operations import gateway
from calendar_service.platform.db import Database
from calendar_service.platform.errors import RuleViolation, ValidationFailed
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import format_in, utcnow, zone
from tests.support import Factory, Owner, call_context

BERLIN = zone("Europe/Berlin")
WEEKDAYS_9_TO_5 = {d: [{"start": "09:00", "end": "17:00"}] for d in ("mon", "tue", "wed", "thu")}
WEEKDAYS_9_TO_5["fri"] = [{"start": "09:00", "end": "17:00"}]

Span = tuple[datetime, datetime]


def monday() -> date:
    """A Monday three to four weeks ahead: far enough for every rule's good time."""
    day = utcnow().astimezone(BERLIN).date() + timedelta(days=21)
    return day + timedelta(days=-day.weekday() % 7)


def local(day: date, clock: str, days: int = 0) -> datetime:
    hours, minutes = (int(p) for p in clock.split(":"))
    wall = datetime(day.year, day.month, day.day, hours, minutes) + timedelta(days=days)
    return wall.replace(tzinfo=BERLIN).astimezone(UTC)


def span(day: date, start: str, end: str, days: int = 0) -> Span:
    return local(day, start, days), local(day, end, days)


def ahead(hours: int) -> Span:
    """A whole hour ``hours`` from now (only rules about notice and horizon use it)."""
    at = utcnow().replace(minute=0, second=0, microsecond=0) + timedelta(hours=hours)
    return at, at + timedelta(hours=1)


@dataclass
class Case:
    """One rule: the rules set, the meetings already there, a time that breaks only it and one
    that keeps every rule."""

    rule: str
    rules: dict[str, Any]
    existing: Callable[[date], list[Span]]
    bad: Callable[[date], Span]
    good: Callable[[date], Span]


CASES = [
    Case(
        "workingHours",
        {"workingHours": WEEKDAYS_9_TO_5},
        lambda m: [],
        lambda m: span(m, "08:00", "09:00"),
        lambda m: span(m, "10:00", "11:00"),
    ),
    Case(
        "bufferMinutes",
        {"bufferMinutes": 15},
        lambda m: [span(m, "10:00", "11:00")],
        lambda m: span(m, "11:05", "11:35"),
        lambda m: span(m, "11:15", "11:45"),
    ),
    Case(
        "maxMeetingsPerDay",
        {"maxMeetingsPerDay": 2},
        lambda m: [span(m, "09:00", "10:00"), span(m, "13:00", "14:00")],
        lambda m: span(m, "15:00", "16:00"),
        lambda m: span(m, "15:00", "16:00", days=1),
    ),
    Case(
        "maxMeetingMinutesPerDay",
        {"maxMeetingMinutesPerDay": 120},
        lambda m: [span(m, "09:00", "10:30")],
        lambda m: span(m, "14:00", "15:00"),
        lambda m: span(m, "14:00", "14:30"),
    ),
    Case(
        "focus",
        {"focus": {"minutes": 120, "start": "13:00", "end": "17:00"}},
        lambda m: [span(m, "13:00", "14:00")],
        lambda m: span(m, "15:00", "16:00"),
        lambda m: span(m, "16:00", "17:00"),
    ),
    Case(
        "noMeetingDays",
        {"noMeetingDays": ["fri"]},
        lambda m: [],
        lambda m: span(m, "10:00", "11:00", days=4),
        lambda m: span(m, "10:00", "11:00"),
    ),
    Case(
        "minNoticeMinutes",
        {"minNoticeMinutes": 2880},
        lambda m: [],
        lambda m: ahead(24),
        lambda m: span(m, "10:00", "11:00"),
    ),
    Case(
        "maxDaysAhead",
        {"maxDaysAhead": 10},
        lambda m: [],
        lambda m: span(m, "10:00", "11:00"),
        lambda m: ahead(48),
    ),
    Case(
        "maxDurationMinutes",
        {"maxDurationMinutes": 60},
        lambda m: [],
        lambda m: span(m, "10:00", "12:00"),
        lambda m: span(m, "10:00", "11:00"),
    ),
]


@dataclass
class Setup:
    db: Database
    owner: Owner
    calendar: str
    secret: str

    def add(self, times: Span, **fields: Any) -> dict[str, Any]:
        """An event the owner makes in person (not bound by the rules)."""
        start, end = times
        return self.db.call(
            events.create_event,
            principal=keys.owner_principal(self.owner.id),
            data=EventCreate(
                calendarId=self.calendar,
                title=fields.pop("title", "Existing"),
                startsAt=format_in(start, BERLIN),
                endsAt=format_in(end, BERLIN),
                **fields,
            ),
            now=utcnow(),
        )


def setup(db: Database, factory: Factory, case: Case, **key: Any) -> Setup:
    owner = factory.owner(time_zone="Europe/Berlin")
    calendar = factory.calendar(owner, time_zone="Europe/Berlin")
    other = factory.calendar(owner, time_zone="UTC")  # meetings count in every calendar
    _, secret = factory.key(owner, **key)
    db.call(set_rules, user_id=owner.id, value=case.rules, now=utcnow())
    made = Setup(db, owner, calendar, secret)
    for times in case.existing(monday()):
        made.calendar = other
        made.add(times)
        made.calendar = calendar
    return made


async def perform(
    s: Setup, op: operations.Operation, args: dict[str, Any], **options: Any
) -> gateway.Outcome[Any]:
    return await s.db.run_grouped(
        gateway.perform,
        secret=s.secret,
        ctx=call_context(op.name, "POST", "/api/v1/calendar/events"),
        op=op,
        args=args,
        **options,
    )


def body(times: Span, **more: Any) -> dict[str, Any]:
    start, end = times
    return {"startsAt": format_in(start, BERLIN), "endsAt": format_in(end, BERLIN), **more}


# Each path: what a key does to put a meeting at ``times`` (an event made by the owner first
# where it changes one), through the gateway as the fronts call it.
async def create(s: Setup, times: Span) -> Any:
    args = {"body": {"title": "Agent", "calendarId": s.calendar, **body(times)}, "now": utcnow()}
    return await perform(s, operations.CREATE, args)


async def move_event(s: Setup, times: Span) -> Any:
    neutral = (times[0] + timedelta(days=1), times[1] + timedelta(days=1))
    event = s.add(neutral)
    args = {"event_id": event["id"], "body": body(times), "now": utcnow(), "scope": None}
    return await perform(s, operations.UPDATE, args)


def _series(s: Setup, times: Span) -> dict[str, Any]:
    """A daily series of 3 a week after ``times``: apart from what the write makes there."""
    neutral = (times[0] + timedelta(days=7), times[1] + timedelta(days=7))
    return s.add(neutral, recurrence=["RRULE:FREQ=DAILY;COUNT=3"])


async def move_occurrence(s: Setup, times: Span) -> Any:
    series = _series(s, times)
    occurrence = _occurrence_id(s, series, 0)
    args = {"event_id": occurrence, "body": body(times), "now": utcnow(), "scope": "this"}
    return await perform(s, operations.UPDATE, args)


async def move_following(s: Setup, times: Span) -> Any:
    series = _series(s, times)
    occurrence = _occurrence_id(s, series, 1)
    args = {"event_id": occurrence, "body": body(times), "now": utcnow(), "scope": "following"}
    return await perform(s, operations.UPDATE, args)


async def move_series(s: Setup, times: Span) -> Any:
    series = _series(s, times)
    args = {"event_id": series["id"], "body": body(times), "now": utcnow(), "scope": "all"}
    return await perform(s, operations.UPDATE, args)


async def import_file(s: Setup, times: Span) -> Any:
    start, end = (t.strftime("%Y%m%dT%H%M%SZ") for t in times)
    text = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{start}-agent@example.com\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:{start}\r\n"
        f"DTEND:{end}\r\nSUMMARY:Imported\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    args = {"data": text.encode(), "now": utcnow(), "calendar_id": s.calendar}
    return await perform(s, operations.IMPORT, args)


def _occurrence_id(s: Setup, series: dict[str, Any], index: int) -> str:
    page = s.db.call(
        events.list_events,
        principal=keys.owner_principal(s.owner.id),
        token_key=b"test page-token key",
        calendar_ids=[s.calendar],
        time_min=series["startsAt"],
    )
    found = [e for e in page["events"] if e.get("recurringEventId") == series["id"]]
    return str(found[index]["id"])


PATHS = [create, move_event, move_occurrence, move_following, move_series, import_file]


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
@pytest.mark.parametrize("path", PATHS, ids=[p.__name__ for p in PATHS])
async def test_every_write_path_keeps_every_rule(
    db: Database, factory: Factory, case: Case, path: Callable[..., Any]
) -> None:
    s = setup(db, factory, case)
    with pytest.raises(RuleViolation) as refused:
        await path(s, case.bad(monday()))
    assert [e["rule"] for e in refused.value.errors] == [case.rule]
    assert refused.value.errors[0]["message"]
    problem = refused.value.to_dict()
    assert problem["code"] == "rule_violation" and case.rule in problem["message"]
    s = setup(db, factory, case)  # without what the refused attempt left
    outcome = await path(s, case.good(monday()))
    assert outcome.status in (200, 201)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
async def test_suggestions_keep_every_rule_and_a_write_there_succeeds(
    db: Database, factory: Factory, case: Case
) -> None:
    s = setup(db, factory, case)
    with pytest.raises(RuleViolation) as refused:
        await create(s, case.bad(monday()))
    suggested = refused.value.suggestions
    if case.rule == "maxDurationMinutes":  # nothing that long may be booked
        assert suggested == []
        return
    assert 1 <= len(suggested) <= 3
    length = case.bad(monday())[1] - case.bad(monday())[0]
    for slot in suggested:
        start = datetime.fromisoformat(slot["startsAt"])
        end = datetime.fromisoformat(slot["endsAt"])
        assert end - start == length
    slot = suggested[0]
    times = (datetime.fromisoformat(slot["startsAt"]), datetime.fromisoformat(slot["endsAt"]))
    assert (await create(s, times)).status == 201


@pytest.mark.parametrize("weeks", [4, 9, 52])
async def test_a_time_past_the_horizon_is_offered_the_last_times_it_allows(
    db: Database, factory: Factory, weeks: int
) -> None:
    """Past ``maxDaysAhead``, however far the time asked is, the suggestions are the nearest
    times that can pass: the last ones within the horizon."""
    case = next(c for c in CASES if c.rule == "maxDaysAhead")
    s = setup(db, factory, case)
    asked = ahead(24 * 7 * weeks)
    with pytest.raises(RuleViolation) as refused:
        await create(s, asked)
    suggested = refused.value.suggestions
    assert len(suggested) == 3
    limit = utcnow() + timedelta(days=10)
    starts = [datetime.fromisoformat(slot["startsAt"]) for slot in suggested]
    assert all(limit - timedelta(hours=2) <= start <= limit for start in starts), starts
    slot = suggested[-1]
    times = (datetime.fromisoformat(slot["startsAt"]), datetime.fromisoformat(slot["endsAt"]))
    assert (await create(s, times)).status == 201


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
async def test_the_owner_an_exempt_key_and_an_app_password_are_not_bound(
    db: Database, factory: Factory, case: Case
) -> None:
    for key in ({"rules": "exempt"}, {"app_password": True}):
        s = setup(db, factory, case, **key)
        assert (await create(s, case.bad(monday()))).status == 201
    s.add(case.bad(monday()))  # the owner in person


async def test_a_dry_run_reports_the_violations_and_writes_nothing(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, CASES[0])
    args = {"body": {"title": "Agent", **body(CASES[0].bad(monday()))}, "now": utcnow()}
    outcome = await perform(s, operations.CREATE, args, dry_run=True)
    assert outcome.status == 200
    assert [e["rule"] for e in outcome.value["ruleViolations"]] == ["workingHours"]
    assert outcome.value["suggestions"]
    listed = s.db.call(
        events.list_events, principal=keys.owner_principal(s.owner.id), token_key=b"k"
    )
    assert listed["events"] == []


async def test_ask_makes_the_write_a_proposal_naming_the_rules_and_its_approval_applies_it(
    db: Database, factory: Factory
) -> None:
    case = CASES[0]
    s = setup(db, factory, case)
    db.call(set_rules, user_id=s.owner.id, value={**case.rules, "onViolation": "ask"}, now=utcnow())
    outcome = await create(s, case.bad(monday()))
    assert outcome.status == 202
    proposal = outcome.value
    assert [e["rule"] for e in proposal["ruleViolations"]] == ["workingHours"]
    decided = db.call(
        approving.approve,
        user_id=s.owner.id,
        proposal_id=proposal["id"],
        now=utcnow(),
        transport="settings",
    )
    assert decided["status"] == "approved"


async def test_an_approval_that_breaks_rules_set_since_fails_naming_them(
    db: Database, factory: Factory
) -> None:
    case = CASES[0]
    s = setup(db, factory, case, approval="all")
    db.call(set_rules, user_id=s.owner.id, value={}, now=utcnow())
    waiting = await create(s, case.bad(monday()))
    good = await create(s, case.good(monday()))
    assert (waiting.status, good.status) == (202, 202)
    db.call(set_rules, user_id=s.owner.id, value=case.rules, now=utcnow())

    def approve(proposal: dict[str, Any]) -> dict[str, Any]:
        return db.call(
            approving.approve,
            user_id=s.owner.id,
            proposal_id=proposal["id"],
            now=utcnow(),
            transport="settings",
        )

    failed = approve(waiting.value)
    assert (failed["status"], failed["code"]) == ("failed", "rule_violation")
    assert [e["rule"] for e in failed["ruleViolations"]] == ["workingHours"]
    assert approve(good.value)["status"] == "approved"


async def test_a_key_whose_writes_wait_is_refused_at_once_when_it_breaks_a_rule(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, CASES[0], approval="all")
    with pytest.raises(RuleViolation):
        await create(s, CASES[0].bad(monday()))


async def test_all_day_and_transparent_events_are_not_meetings(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, CASES[2])  # at most 2 meetings a day, 2 there
    m = monday()
    day = {"title": "Trip", "startsAt": m.isoformat(), "endsAt": m.isoformat(), "allDay": True}
    assert (await perform(s, operations.CREATE, {"body": day, "now": utcnow()})).status == 201
    free = {"title": "Hold", "transparency": "transparent", **body(CASES[2].bad(m))}
    assert (await perform(s, operations.CREATE, {"body": free, "now": utcnow()})).status == 201
    s.add(span(m, "18:00", "19:00", days=1), transparency="transparent")
    assert (await create(s, span(m, "15:00", "16:00", days=1))).status == 201


async def test_a_series_is_checked_occurrence_by_occurrence(db: Database, factory: Factory) -> None:
    s = setup(db, factory, CASES[5])  # no meetings on Fridays
    m = monday()
    daily = {
        "title": "Stand-up",
        "recurrence": ["RRULE:FREQ=DAILY;COUNT=4"],
        **body(span(m, "09:00", "09:15")),
    }
    with pytest.raises(RuleViolation):  # Monday to Thursday: fine
        daily["recurrence"] = ["RRULE:FREQ=DAILY;COUNT=5"]  # ...and Friday
        await perform(s, operations.CREATE, {"body": daily, "now": utcnow()})
    daily["recurrence"] = ["RRULE:FREQ=DAILY;COUNT=4"]
    assert (await perform(s, operations.CREATE, {"body": daily, "now": utcnow()})).status == 201


def test_changing_the_rules_leaves_existing_events_as_they_are(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, CASES[8])
    event = s.add(span(monday(), "10:00", "14:00"))
    db.call(set_rules, user_id=s.owner.id, value={"maxDurationMinutes": 30}, now=utcnow())
    got = db.call(
        events.get_event, principal=keys.owner_principal(s.owner.id), event_id=event["id"]
    )
    assert (got["startsAt"], got["endsAt"]) == (event["startsAt"], event["endsAt"])


# ---------------------------------------------------------------------------------------------
# Each rule exact, as a pure function


def rules_of(value: dict[str, Any]) -> Any:
    return parsed(read_rules(value))


def verdict(value: dict[str, Any], start: str, end: str, *others: tuple[str, str]) -> list[str]:
    meetings = Meetings(("c", _utc(a), _utc(b), f"m{i}", "t") for i, (a, b) in enumerate(others))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    found = broken(
        rules_of(value),
        BERLIN,
        datetime.fromisoformat(start),
        datetime.fromisoformat(end),
        now=now,
        meetings=meetings,
        skip=None,
    )
    return [rule for rule, _ in found]


def _utc(text: str) -> str:
    return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_working_hours_are_wall_clock_times_on_the_days_dst_begins_and_ends() -> None:
    hours = {"workingHours": {"sun": [{"start": "09:00", "end": "17:00"}]}}
    # 2026-03-29: Berlin springs forward at 02:00; 09:00 is +02:00 that day.
    assert verdict(hours, "2026-03-29T09:00+02:00", "2026-03-29T10:00+02:00") == []
    assert verdict(hours, "2026-03-29T08:30+02:00", "2026-03-29T09:30+02:00") == ["workingHours"]
    # 2026-10-25: back to +01:00 at 03:00.
    assert verdict(hours, "2026-10-25T16:00+01:00", "2026-10-25T17:00+01:00") == []
    assert verdict(hours, "2026-10-25T16:30+01:00", "2026-10-25T17:30+01:00") == ["workingHours"]


def test_a_meeting_crossing_midnight_must_lie_in_hours_joined_across_it() -> None:
    night = {
        "workingHours": {
            "mon": [{"start": "20:00", "end": "24:00"}],
            "tue": [{"start": "00:00", "end": "02:00"}],
        }
    }
    # 2026-03-02 is a Monday.
    assert verdict(night, "2026-03-02T23:00+01:00", "2026-03-03T01:00+01:00") == []
    assert verdict(night, "2026-03-02T23:00+01:00", "2026-03-03T03:00+01:00") == ["workingHours"]
    assert verdict(night, "2026-03-03T23:00+01:00", "2026-03-04T01:00+01:00") == ["workingHours"]


def test_a_weekday_without_hours_has_none() -> None:
    hours = {"workingHours": {"mon": [{"start": "09:00", "end": "12:00"}]}}
    assert verdict(hours, "2026-03-03T10:00+01:00", "2026-03-03T11:00+01:00") == ["workingHours"]


def test_buffers_apply_before_and_after_and_to_overlaps() -> None:
    rule = {"bufferMinutes": 10}
    other = ("2026-03-02T10:00+01:00", "2026-03-02T11:00+01:00")
    assert verdict(rule, "2026-03-02T11:10+01:00", "2026-03-02T12:00+01:00", other) == []
    assert verdict(rule, "2026-03-02T09:00+01:00", "2026-03-02T09:50+01:00", other) == []
    for start, end in (("11:05", "12:00"), ("09:00", "09:55"), ("10:30", "10:45")):
        got = verdict(rule, f"2026-03-02T{start}+01:00", f"2026-03-02T{end}+01:00", other)
        assert got == ["bufferMinutes"]


def test_meetings_a_day_count_by_the_local_day_of_their_start() -> None:
    rule = {"maxMeetingsPerDay": 1}
    # 23:30 UTC on the 1st is 00:30 on the 2nd in Berlin: the same local day.
    other = ("2026-03-01T23:30Z", "2026-03-01T23:45Z")
    assert verdict(rule, "2026-03-02T10:00+01:00", "2026-03-02T11:00+01:00", other) == [
        "maxMeetingsPerDay"
    ]
    assert verdict(rule, "2026-03-03T10:00+01:00", "2026-03-03T11:00+01:00", other) == []


def test_minutes_a_day_count_overlaps_once() -> None:
    rule = {"maxMeetingMinutesPerDay": 90}
    other = ("2026-03-02T10:00+01:00", "2026-03-02T11:00+01:00")
    assert verdict(rule, "2026-03-02T10:30+01:00", "2026-03-02T11:30+01:00", other) == []
    assert verdict(rule, "2026-03-02T12:00+01:00", "2026-03-02T12:31+01:00", other) == [
        "maxMeetingMinutesPerDay"
    ]


def test_focus_keeps_one_block_on_working_days_only() -> None:
    rule = {"focus": {"minutes": 60, "start": "13:00", "end": "15:00"}}
    assert verdict(rule, "2026-03-02T13:00+01:00", "2026-03-02T14:00+01:00") == []
    assert verdict(rule, "2026-03-02T13:30+01:00", "2026-03-02T14:30+01:00") == ["focus"]
    assert verdict(rule, "2026-03-07T13:30+01:00", "2026-03-07T14:30+01:00") == []  # Saturday
    assert verdict(rule, "2026-03-02T10:00+01:00", "2026-03-02T11:00+01:00") == []  # outside


def test_no_meeting_days_notice_horizon_and_duration() -> None:
    assert verdict({"noMeetingDays": ["mon"]}, "2026-03-02T10:00Z", "2026-03-02T11:00Z") == [
        "noMeetingDays"
    ]
    # now is 2026-01-01T00:00Z in ``verdict``.
    assert verdict({"minNoticeMinutes": 60}, "2026-01-01T00:30Z", "2026-01-01T01:00Z") == [
        "minNoticeMinutes"
    ]
    assert verdict({"minNoticeMinutes": 60}, "2026-01-01T01:00Z", "2026-01-01T02:00Z") == []
    assert verdict({"maxDaysAhead": 30}, "2026-02-01T00:00Z", "2026-02-01T01:00Z") == [
        "maxDaysAhead"
    ]
    assert verdict({"maxDurationMinutes": 30}, "2026-02-01T00:00Z", "2026-02-01T00:31Z") == [
        "maxDurationMinutes"
    ]


# ---------------------------------------------------------------------------------------------
# Bad rules


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (
            {"workingHours": {"mon": [{"start": "17:00", "end": "09:00"}]}},
            "workingHours.mon[0].end",
        ),
        (
            {
                "workingHours": {
                    "mon": [{"start": "09:00", "end": "13:00"}, {"start": "12:00", "end": "17:00"}]
                }
            },
            "workingHours.mon",
        ),
        ({"workingHours": {"monday": []}}, "workingHours.monday"),
        ({"workingHours": {"mon": [{"start": "9", "end": "17:00"}]}}, "workingHours.mon[0].start"),
        ({"bufferMinutes": -5}, "bufferMinutes"),
        ({"maxMeetingsPerDay": 10_000}, "maxMeetingsPerDay"),
        ({"maxDurationMinutes": 1.5}, "maxDurationMinutes"),
        ({"maxDaysAhead": True}, "maxDaysAhead"),
        ({"noMeetingDays": ["friday"]}, "noMeetingDays"),
        ({"focus": {"minutes": 300, "start": "13:00", "end": "15:00"}}, "focus.minutes"),
        ({"lunch": 60}, "lunch"),
        ({"onViolation": "warn"}, "onViolation"),
    ],
)
def test_bad_rules_are_refused_naming_the_field_as_sent(value: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        read_rules(value)
    assert field in [e["field"] for e in refused.value.errors]


def test_set_replaces_the_rules_and_an_empty_object_clears_them(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    assert db.call(stored_rules, user_id=owner.id) == {"onViolation": "refuse"}
    shown = db.call(set_rules, user_id=owner.id, value={"bufferMinutes": 10}, now=utcnow())
    assert shown == {"bufferMinutes": 10, "onViolation": "refuse"}
    db.call(set_rules, user_id=owner.id, value={"maxDaysAhead": 5}, now=utcnow())
    assert db.call(stored_rules, user_id=owner.id) == {"maxDaysAhead": 5, "onViolation": "refuse"}
    db.call(set_rules, user_id=owner.id, value={}, now=utcnow())
    assert db.call(stored_rules, user_id=owner.id) == {"onViolation": "refuse"}


async def test_a_series_that_breaks_a_rule_gets_times_for_its_first_such_occurrence(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, CASES[1])  # 15 minutes around meetings; one on Monday 10-11
    m = monday()
    series = {
        "title": "Daily",
        "recurrence": ["RRULE:FREQ=DAILY;COUNT=2"],
        **body(span(m, "10:30", "11:00")),
    }
    with pytest.raises(RuleViolation) as refused:
        await perform(s, operations.CREATE, {"body": series, "now": utcnow()})
    assert [e["rule"] for e in refused.value.errors] == ["bufferMinutes"]
    assert "The occurrence at" in refused.value.errors[0]["message"]
    first = refused.value.suggestions[0]
    moved = {**series, "startsAt": first["startsAt"], "endsAt": first["endsAt"]}
    assert (await perform(s, operations.CREATE, {"body": moved, "now": utcnow()})).status == 201
