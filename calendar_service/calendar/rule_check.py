"""The one check of the owner's rules for agents (``calendar.rules``; docs/rules.md).

``check_write`` is what every write by a key or a connected app goes through once it has
made its rows (``operations.gateway`` after each write operation, ``governance.approving``
before it applies a proposal, a scheduling link's booking): it looks at the changes the write
recorded (``Via.made``), and for each event it creates or whose time it changes that is a
meeting (neither all-day nor transparent), checks each rule against the owner's meetings in
every calendar (``events.busy.meetings_of``, the one read of busy time the rules make; for
a single event, with the owner's calendars in one statement when the owner has no series
and no connected calendar: ``_calendars_and_meetings``), in the event's calendar's zone. A
series is checked occurrence by occurrence from its first occurrence not past up to the
horizon after it (``maxDaysAhead``, 90 days when unset), at most ``MAX_OCCURRENCES`` of them.
Whether the owner has set any rule is read with the key (``Principal.rules``): a write whose
owner has none, or by a principal they do not bind, reads nothing more.

The rules' verdict on a time is ``rule_verdict``'s (no database): here ``suggestions``, the
nearest times of the same length that pass, and ``slot_filter``, what ``findFreeTime`` keeps
for a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from sqlalchemy import Connection

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import CalendarRow
from calendar_service.calendar.events.busy import (
    Busy,
    OwnerCalendars,
    meetings_of,
    owner_calendars,
)
from calendar_service.calendar.events.queries import owner_meetings_statement, window_floor
from calendar_service.calendar.rule_verdict import (
    MAX_OCCURRENCES,
    Meetings,
    SlotFilter,
    Verdict,
    broken,
    days_around,
    instant,
    keeps_one,
    passes,
    reach,
    slack,
)
from calendar_service.calendar.rules import Rules, rules_of
from calendar_service.journal.change_table import CREATED, UPDATED
from calendar_service.platform.models.columns import to_db
from calendar_service.platform.timeutil import format_in, zone

SUGGESTIONS = 3

SUGGESTION_STEP = timedelta(minutes=15)
SUGGESTION_REACH = timedelta(days=14)

_TIME_FIELDS = ("startsAt", "endsAt", "allDay", "transparency", "calendarId", "recurrence")


def _to_check(made: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events a write's changes create or change the time of that are meetings, as they
    are now (each change's ``after``); a series cut short (``UNTIL`` added, times kept: the
    first part of a "this and following" edit) books nothing new and is left out."""
    found = []
    for change in made:
        after = change.get("after")
        if after is None or change.get("kind") not in (CREATED, UPDATED):
            continue
        if not _meeting(after):
            continue
        new_series = change.get("newSeries")  # "this and following": the series it starts
        if new_series is not None and _meeting(new_series):
            found.append(new_series)
        before = change.get("before")
        if change["kind"] == UPDATED and before is not None:
            moved = [f for f in _TIME_FIELDS if before.get(f) != after.get(f)]
            if not moved:
                continue
            if moved == ["recurrence"] and "UNTIL=" in str(after.get("recurrence")):
                continue
        found.append(after)
    return found


def _meeting(event: dict[str, Any]) -> bool:
    return not event.get("allDay") and event.get("transparency") != "transparent"


def check_write(
    conn: Connection, *, principal: Principal, made: Sequence[dict[str, Any]], now: datetime
) -> Verdict | None:
    """The rules' verdict on the write that recorded ``made`` (its changes, made in the
    caller's transaction), for ``principal``; ``None`` when they do not bind it, the owner has
    none, or the write breaks none. Suggestions are given for the first event that breaks
    them (for a series, times for its first occurrence)."""
    rules = rules_of(principal)  # read with the key
    if rules is None:
        return None
    events = _to_check(made)
    if not events:
        return None
    verdict = Verdict(rules)
    seen: set[str] = set()
    calendars: OwnerCalendars | None = None  # read with the first event's meetings
    for event in events:
        calendars, (errors, first) = _check_event(conn, principal, calendars, rules, event, now)
        for rule, message in errors:
            if rule not in seen:
                seen.add(rule)
                verdict.errors.append({"rule": rule, "message": message})
        if errors and not verdict.suggestions and first is not None:
            verdict.suggestions = suggestions(
                conn,
                principal=principal,
                calendars=calendars,
                rules=rules,
                tz=first[2],
                span=first[:2],
                skip=first[3],
                now=now,
            )
    return verdict if verdict.errors else None


_Found = tuple[list[tuple[str, str]], tuple[datetime, datetime, tzinfo, str] | None]


def _check_event(
    conn: Connection,
    principal: Principal,
    calendars: OwnerCalendars | None,
    rules: Rules,
    event: dict[str, Any],
    now: datetime,
) -> tuple[OwnerCalendars, _Found]:
    """The owner's calendars (``calendars``, or read now), and the rules ``event`` breaks
    (each once, with the occurrence that breaks it first) and the time the suggestions
    replace: the event's, or its series' first breaking one."""
    user_id = principal.user_id
    # Not ``instant``'s: a new event's times are seldom read again.
    start = datetime.fromisoformat(event["startsAt"]).astimezone(UTC)
    end = datetime.fromisoformat(event["endsAt"]).astimezone(UTC)
    if event.get("recurrence"):
        if calendars is None:
            calendars = owner_calendars(conn, user_id=user_id)
        return calendars, _check_series(conn, principal, calendars, rules, event, now)
    event_id = event["id"]
    items, known = None, None
    if calendars is None:  # the first event's meetings are read with the calendars
        known = _ZONES.get(event["calendarId"])
        if known is not None:  # its calendar's zone when last read (checked below)
            low, high = reach(rules, zone(known), start, end)
        else:  # whatever the zone
            low, high = start - slack(rules), end + slack(rules)
        calendars, items = _calendars_and_meetings(conn, user_id=user_id, low=low, high=high)
    name = _zone_of(calendars, event["calendarId"])
    tz = zone(name)
    # The meetings the rules look at: those read, when read for the calendar's zone.
    near = (low, high) if items is not None and name == known else reach(rules, tz, start, end)
    if items is None or near[0] < low or near[1] > high:
        items = meetings_of(conn, user_id=user_id, low=near[0], high=near[1], calendars=calendars)
    # Most writes keep the rules: the quick check first (``passes``'s verdict).
    if keeps_one(rules, tz, start, end, now=now, items=items, skip=event_id):
        return calendars, ([], (start, end, tz, event_id))
    meetings = Meetings(items)
    found = broken(rules, tz, start, end, now=now, meetings=meetings, skip=event_id)
    return calendars, (found, (start, end, tz, event_id))


# Hints for ``_calendars_and_meetings``, each checked against what is read with it (never
# served as read): a calendar's zone (the window's local days), an owner's longest event
# (how far before the window a meeting that reaches into it may start).
_ZONES: dict[str, str] = {}
_LONGEST: dict[str, int] = {}
_HINTS_MOST = 4096
_DAY_SECONDS = 86_400


def _zone_of(calendars: Sequence[CalendarRow], calendar_id: str) -> str:
    """The zone of the owner's calendar ``calendar_id`` (its name)."""
    name = next(c.time_zone for c in calendars if c.id == calendar_id)
    if _ZONES.get(calendar_id) != name:
        if len(_ZONES) >= _HINTS_MOST:
            _ZONES.clear()
        _ZONES[calendar_id] = name
    return name


def _calendars_and_meetings(
    conn: Connection, *, user_id: str, low: datetime, high: datetime
) -> tuple[OwnerCalendars, list[Busy]]:
    """``owner_calendars`` and ``meetings_of`` over ``[low, high)``, in one statement when the
    owner has no series and no connected calendar that counts (``owner_meetings_statement``,
    its window's floor from the owner's longest event when last read: read again with the
    calendars' own when one is longer now)."""
    dialect = conn.dialect.name
    guess = _LONGEST.get(user_id, _DAY_SECONDS)
    rows = owner_meetings_statement().all(
        conn,
        user_id=user_id,
        low=to_db(low, dialect),
        low_floor=to_db(window_floor(low, guess), dialect),
        high=to_db(high, dialect),
    )
    calendars = OwnerCalendars()
    items: list[Busy] = []
    for r in rows:
        if r[3] is None:  # a calendar
            version = r[5] if r[5] == 0 else None  # as ``owner_calendars`` after writes
            calendars.append(CalendarRow(r[0], r[2], r[1], bool(r[6]), r[4], version))
            calendars.connected = bool(r[7])
        elif r[2] > r[1]:  # zero-length events take no time
            items.append((r[0], r[1], r[2], r[3], ""))
    longest = max((c.max_event_seconds for c in calendars), default=0)
    if _LONGEST.get(user_id) != longest:
        if len(_LONGEST) >= _HINTS_MOST:
            _LONGEST.clear()
        _LONGEST[user_id] = longest
    if (
        not calendars
        or calendars.connected
        or longest > guess
        or any(c.series_version != 0 for c in calendars)
    ):  # their busy times, or the floor, as ``meetings_of`` reads them
        items = meetings_of(conn, user_id=user_id, low=low, high=high, calendars=calendars)
    return calendars, items


def _check_series(
    conn: Connection,
    principal: Principal,
    calendars: Sequence[CalendarRow],
    rules: Rules,
    event: dict[str, Any],
    now: datetime,
) -> _Found:
    """``_check_event`` for a series: occurrence by occurrence."""
    tz = zone(_zone_of(calendars, event["calendarId"]))
    user_id = principal.user_id
    start, end = instant(event["startsAt"]), instant(event["endsAt"])
    low = max(now, start) - (end - start)
    high = max(now, start) + rules.horizon
    around = slack(rules)
    meetings = Meetings(
        meetings_of(
            conn, user_id=user_id, low=low - around, high=high + around, calendars=calendars
        )
    )
    prefix = event["id"] + "_"
    own = [m for m in meetings.items if m[2].startswith(prefix) and low < m[1] and m[0] < high]
    errors: list[tuple[str, str]] = []
    first: tuple[datetime, datetime, tzinfo, str] | None = None
    seen: set[str] = set()
    if rules.max_days_ahead is not None and start > now + rules.horizon:
        days = rules.max_days_ahead
        errors.append(
            (
                "maxDaysAhead",
                f"The series starts {format_in(start, tz)}, more than {days} days ahead; the "
                f"owner allows booking up to {days} days ahead.",
            )
        )
        seen.add("maxDaysAhead")
        first = (start, end, tz, own[0][2] if own else event["id"])
    for s, e, occurrence_id in own[:MAX_OCCURRENCES]:
        found = broken(rules, tz, s, e, now=now, meetings=meetings, skip=occurrence_id, series=True)
        for rule, message in found:
            if rule not in seen:
                seen.add(rule)
                errors.append((rule, f"The occurrence at {format_in(s, tz)}: {message}"))
                if first is None:
                    first = (s, e, tz, occurrence_id)
    return errors, first


def suggestions(
    conn: Connection,
    *,
    principal: Principal,
    calendars: Sequence[CalendarRow],
    rules: Rules,
    tz: tzinfo,
    span: tuple[datetime, datetime],
    skip: str | None,
    now: datetime,
) -> list[dict[str, str]]:
    """Up to ``SUGGESTIONS`` times of the length of ``span``, the nearest to it first looked
    for (on the quarter hours of the calendar's zone, within ``SUGGESTION_REACH`` either
    side, never in the past), that pass every rule; in time order. A time past
    ``maxDaysAhead`` is looked for from the last start the rule allows, the nearest that can
    pass, however far ahead the time asked was."""
    start, end = span
    length = end - start
    centre = start
    if rules.max_days_ahead is not None:
        centre = min(start, now + timedelta(days=rules.max_days_ahead))
    around = SUGGESTION_REACH + timedelta(days=2) + (rules.buffer or timedelta(0))
    meetings = Meetings(
        meetings_of(
            conn,
            user_id=principal.user_id,
            low=centre - around,
            high=centre + length + around,
            calendars=calendars,
        )
    )
    base = _quarter(centre, tz)
    found: list[datetime] = []
    steps = int(SUGGESTION_REACH / SUGGESTION_STEP)
    for k in range(steps + 1):
        for at in (base + k * SUGGESTION_STEP, base - (k + 1) * SUGGESTION_STEP):
            if at < now or at == start or at in found:
                continue
            if passes(rules, tz, at, at + length, now=now, meetings=meetings, skip=skip):
                found.append(at)
                if len(found) == SUGGESTIONS:
                    break
        if len(found) == SUGGESTIONS:
            break
    return [
        {"startsAt": format_in(at, tz), "endsAt": format_in(at + length, tz)}
        for at in sorted(found)
    ]


def _quarter(instant: datetime, tz: tzinfo) -> datetime:
    """The quarter hour (of the local wall clock's hour) at or after ``instant``."""
    local = instant.astimezone(tz)
    minutes = local.minute % 15
    if minutes == 0 and not local.second and not local.microsecond:
        return instant
    return instant + timedelta(
        minutes=15 - minutes, seconds=-local.second, microseconds=-local.microsecond
    )


def slot_filter(
    conn: Connection,
    *,
    principal: Principal,
    tz: tzinfo,
    low: datetime,
    high: datetime,
    now: datetime,
) -> SlotFilter | None:
    """For ``findFreeTime`` (and a scheduling link's slots): what keeps the rules that bind
    ``principal`` within ``[low, high)`` (``tz``: the zone of the calendar it would go in);
    ``None`` when no rule binds it. Only in a transaction that has written nothing yet (its
    series may be read from memory, under versions no rollback takes back). ``findFreeTime``
    that reads every calendar of the owner itself makes its own (``SlotFilter``, from its
    busy read: ``events.busy.busy_later``'s ``all_day``)."""
    rules = rules_of(principal)
    if rules is None:
        return None
    user_id = principal.user_id
    calendars = owner_calendars(conn, user_id=user_id, before_writes=True)  # a read: no write
    low, high = days_around(rules, tz, low, high)
    meetings = Meetings(meetings_of(conn, user_id=user_id, low=low, high=high, calendars=calendars))
    return SlotFilter(rules, tz, now, meetings)


__all__ = ["check_write", "slot_filter", "suggestions"]
