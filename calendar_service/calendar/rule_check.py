"""The one check of the owner's rules for agents (``calendar.rules``; docs/rules.md).

``check_write`` is what every write by a key or a connected app goes through once it has
made its rows (``operations.gateway`` after each write operation, ``governance.approving``
before it applies a proposal, a scheduling link's booking): it looks at the changes the write
recorded (``Via.made``), and for each event it creates or whose time it changes that is a
meeting (neither all-day nor transparent), checks each rule against the owner's meetings in
every calendar (``events.busy.meetings_of``, the one read of busy time the rules make), in
the event's calendar's zone. A series is checked occurrence by occurrence from its first
occurrence not past up to the horizon after it (``maxDaysAhead``, 90 days when unset), at most
``MAX_OCCURRENCES`` of them. Whether the owner has set any rule is read with the key
(``Principal.rules``): a write whose owner has none, or by a principal they do not bind, reads
nothing more.

``broken`` is the rules' verdict on one time (pure: no database), ``suggestions`` the nearest
times of the same length that pass, ``slot_filter`` what ``findFreeTime`` keeps.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from sqlalchemy import Connection

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import CalendarRow
from calendar_service.calendar.events.busy import Busy, meetings_of, owner_calendars
from calendar_service.calendar.rules import WEEKDAYS, Rules, rules_of
from calendar_service.journal.change_table import CREATED, UPDATED
from calendar_service.platform.timeutil import format_in, localize, zone

MAX_OCCURRENCES = 400
"""Occurrences of one series a check looks at, at most (a daily series over 90 days is 90)."""
SUGGESTIONS = 3
DAY = timedelta(days=1)
SUGGESTION_STEP = timedelta(minutes=15)
SUGGESTION_REACH = timedelta(days=14)
"""How far before and after the time asked the suggestions are looked for."""
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_TIME_FIELDS = ("startsAt", "endsAt", "allDay", "transparency", "calendarId", "recurrence")

Span = tuple[datetime, datetime]


@dataclass(slots=True)
class Verdict:
    """What the rules say of a write: ``errors`` (``{rule, message}``, each rule once) and
    ``suggestions`` (``{startsAt, endsAt}``); ``rules`` the owner's."""

    rules: Rules
    errors: list[dict[str, str]] = field(default_factory=list)
    suggestions: list[dict[str, str]] = field(default_factory=list)

    @property
    def asks(self) -> bool:
        """Whether the owner asked to decide such writes (``onViolation: ask``)."""
        return self.rules.on_violation == "ask"


class Meetings:
    """The owner's meetings as (start, end, id), sorted by start, for the pure checks."""

    def __init__(self, items: Iterable[Busy]) -> None:
        found = sorted((_instant(b[1]), _instant(b[2]), b[3]) for b in items if b[2] > b[1])
        self.items = found
        self.starts = [m[0] for m in found]
        self.longest = max((m[1] - m[0] for m in found), default=timedelta(0))

    def overlapping(self, low: datetime, high: datetime, skip: str | None) -> list[Span]:
        """The meetings overlapping ``[low, high)``, but the one whose id is ``skip``."""
        first = bisect.bisect_left(self.starts, low - self.longest)
        last = bisect.bisect_left(self.starts, high)
        return [(s, e) for s, e, i in self.items[first:last] if e > low and s < high and i != skip]

    def starting(self, low: datetime, high: datetime, skip: str | None) -> int:
        first, last = bisect.bisect_left(self.starts, low), bisect.bisect_left(self.starts, high)
        return sum(1 for _, _, i in self.items[first:last] if i != skip)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@functools.lru_cache(maxsize=8192)
def _at(day: date, clock: timedelta, tz: tzinfo) -> datetime:
    """``clock`` (00:00 to 24:00) on the local ``day``, in UTC (a wall time in a spring gap
    moves forward by the gap; 24:00 is the next midnight)."""
    wall = datetime.combine(day, time()) + clock
    return localize(wall, tz).astimezone(UTC)


def _days(start: datetime, end: datetime, tz: tzinfo) -> list[date]:
    """The local days ``[start, end)`` touches (its start's day for a zero-length one)."""
    first = start.astimezone(tz).date()
    last = max((end - timedelta(microseconds=1)).astimezone(tz).date(), first)
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _day_text(day: date) -> str:
    return f"{_DAY_NAMES[day.weekday()]} {day.isoformat()}"


def _clock_text(clock: timedelta) -> str:
    minutes = int(clock.total_seconds()) // 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _union(spans: Sequence[Span]) -> list[Span]:
    merged: list[Span] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def broken(
    rules: Rules,
    tz: tzinfo,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    meetings: Meetings,
    skip: str | None,
    series: bool = False,
) -> list[tuple[str, str]]:
    """The rules a meeting at ``[start, end)`` (UTC) breaks, as ``(rule, message)`` in the
    order of ``rules.RULE_NAMES``, among the owner's ``meetings`` (the one whose id is
    ``skip`` is this meeting itself) in the calendar's zone ``tz``. ``series``: an occurrence
    of a series (``maxDaysAhead`` binds its first one only)."""
    found: list[tuple[str, str]] = []
    days = _days(start, end, tz)

    def when() -> str:
        return f"{start.astimezone(tz):%Y-%m-%d %H:%M} ({getattr(tz, 'key', 'UTC')})"

    if rules.hours is not None and not _within_hours(rules, tz, start, end):
        day = days[0]
        spans = rules.hours.get(day.weekday(), ())
        hours = ", ".join(f"{_clock_text(a)}-{_clock_text(b)}" for a, b in spans)
        found.append(
            (
                "workingHours",
                f"{when()} to {end.astimezone(tz):%H:%M} is outside the owner's working hours"
                + (
                    f" on {_DAY_NAMES[day.weekday()]}s ({hours})."
                    if hours
                    else f" ({_DAY_NAMES[day.weekday()]} has none)."
                ),
            )
        )
    if rules.buffer is not None:
        near = meetings.overlapping(start - rules.buffer, end + rules.buffer, skip)
        if near:
            s, e = near[0]
            buffer = int(rules.buffer.total_seconds() // 60)
            found.append(
                (
                    "bufferMinutes",
                    f"{when()} leaves less than {buffer} minutes between it and the meeting "
                    f"{format_in(s, tz)} to {format_in(e, tz)}; the owner keeps {buffer} "
                    "minutes free before and after each meeting.",
                )
            )
    if rules.max_meetings is not None:
        day = days[0]
        low, high = _at(day, timedelta(0), tz), _at(day, timedelta(days=1), tz)
        count = meetings.starting(low, high, skip) + 1
        if count > rules.max_meetings:
            found.append(
                (
                    "maxMeetingsPerDay",
                    f"It would be meeting {count} on {_day_text(day)}; the owner allows "
                    f"{rules.max_meetings} a day.",
                )
            )
    if rules.max_minutes is not None:
        for day in days:
            minutes = _minutes_on(day, tz, start, end, meetings, skip)
            if minutes > rules.max_minutes:
                found.append(
                    (
                        "maxMeetingMinutesPerDay",
                        f"It would make {minutes} minutes of meetings on {_day_text(day)}; "
                        f"the owner allows {rules.max_minutes} a day.",
                    )
                )
                break
    if rules.focus is not None:
        for day in days:
            message = _focus_broken(rules, tz, day, start, end, meetings, skip)
            if message is not None:
                found.append(("focus", message))
                break
    if rules.no_meeting_days:
        for day in days:
            if day.weekday() in rules.no_meeting_days:
                found.append(
                    (
                        "noMeetingDays",
                        f"{_day_text(day)} is a {WEEKDAYS[day.weekday()]}, a day the owner "
                        "keeps free of meetings.",
                    )
                )
                break
    if rules.min_notice is not None and start < now + rules.min_notice:
        notice = int(rules.min_notice.total_seconds() // 60)
        found.append(
            (
                "minNoticeMinutes",
                f"{when()} is less than {notice} minutes from now; the owner wants at least "
                f"{notice} minutes' notice.",
            )
        )
    if (
        rules.max_days_ahead is not None
        and not series
        and start > now + timedelta(days=rules.max_days_ahead)
    ):
        found.append(
            (
                "maxDaysAhead",
                f"{when()} is more than {rules.max_days_ahead} days ahead; the owner allows "
                f"booking up to {rules.max_days_ahead} days ahead.",
            )
        )
    if rules.max_duration is not None and end - start > rules.max_duration:
        limit = int(rules.max_duration.total_seconds() // 60)
        minutes = int((end - start).total_seconds() // 60)
        found.append(
            (
                "maxDurationMinutes",
                f"It lasts {minutes} minutes; the owner allows meetings of at most {limit}.",
            )
        )
    return found


def _within_hours(rules: Rules, tz: tzinfo, start: datetime, end: datetime) -> bool:
    """Whether ``[start, end)`` lies within the working hours (those of consecutive days
    joined: a meeting may cross midnight only from one working span into the next)."""
    first = start.astimezone(tz).date() - timedelta(days=1)
    last = end.astimezone(tz).date()
    spans: list[Span] = []
    day = first
    while day <= last:
        spans.extend(_working_spans(rules, day, tz))
        day += timedelta(days=1)
    return any(s <= start and end <= e for s, e in _union(spans))


def _working_spans(rules: Rules, day: date, tz: tzinfo) -> list[Span]:
    """The working hours of the local ``day``, as instants (worked out once per rules)."""
    key = ("hours", day, tz)
    found: list[Span] | None = rules.memo.get(key)
    if found is None:
        assert rules.hours is not None
        found = [(_at(day, a, tz), _at(day, b, tz)) for a, b in rules.hours.get(day.weekday(), ())]
        if len(rules.memo) < 4096:
            rules.memo[key] = found
    return found


def _focus_broken(
    rules: Rules,
    tz: tzinfo,
    day: date,
    start: datetime,
    end: datetime,
    meetings: Meetings,
    skip: str | None,
) -> str | None:
    """Why the meeting breaks the focus rule on ``day``, or ``None``: on a working day whose
    focus window it overlaps, no free block of the length asked would be left there."""
    assert rules.focus is not None
    length, a, b = rules.focus
    if not rules.working_day(day.weekday()):
        return None
    low, high = _at(day, a, tz), _at(day, b, tz)
    if not (start < high and end > low):
        return None
    taken = _union([*meetings.overlapping(low, high, skip), (start, end)])
    at, longest = low, timedelta(0)
    for s, e in taken:
        longest = max(longest, s - at)
        at = max(at, e)
    longest = max(longest, high - at)
    if longest >= length:
        return None
    minutes = int(length.total_seconds() // 60)
    return (
        f"It would leave no free block of {minutes} minutes between {_clock_text(a)} and "
        f"{_clock_text(b)} on {_day_text(day)}; the owner keeps one for focus on working days."
    )


def passes(
    rules: Rules,
    tz: tzinfo,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    meetings: Meetings,
    skip: str | None = None,
) -> bool:
    """Whether a meeting at ``[start, end)`` would keep every rule: ``broken`` says none, the
    rules that need no counting tried first (``findFreeTime`` asks of many times)."""
    if rules.max_duration is not None and end - start > rules.max_duration:
        return False
    if rules.min_notice is not None and start < now + rules.min_notice:
        return False
    if rules.max_days_ahead is not None and start > now + timedelta(days=rules.max_days_ahead):
        return False
    if rules.no_meeting_days and any(
        d.weekday() in rules.no_meeting_days for d in _days(start, end, tz)
    ):
        return False
    if rules.hours is not None and not _within_hours(rules, tz, start, end):
        return False
    buffer = rules.buffer
    if buffer is not None and meetings.overlapping(start - buffer, end + buffer, skip):
        return False
    days = _days(start, end, tz)
    if rules.max_meetings is not None:
        low, high = _at(days[0], timedelta(0), tz), _at(days[0], DAY, tz)
        if meetings.starting(low, high, skip) + 1 > rules.max_meetings:
            return False
    if rules.max_minutes is not None:
        for day in days:
            if _minutes_on(day, tz, start, end, meetings, skip) > rules.max_minutes:
                return False
    if rules.focus is not None:
        for day in days:
            if _focus_broken(rules, tz, day, start, end, meetings, skip) is not None:
                return False
    return True


def _minutes_on(
    day: date, tz: tzinfo, start: datetime, end: datetime, meetings: Meetings, skip: str | None
) -> int:
    """Minutes of meetings on the local ``day`` with one at ``[start, end)`` (overlaps once)."""
    low, high = _at(day, timedelta(0), tz), _at(day, DAY, tz)
    busy = [*meetings.overlapping(low, high, skip), (start, end)]
    taken = sum(((min(e, high) - max(s, low)) for s, e in _union(busy)), start=timedelta(0))
    return int(taken.total_seconds() // 60)


# ---------------------------------------------------------------------------------------------
# A write


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
    calendars = owner_calendars(conn, user_id=principal.user_id)
    for event in events:
        errors, first = _check_event(conn, principal, calendars, rules, event, now)
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


def _check_event(
    conn: Connection,
    principal: Principal,
    calendars: Sequence[CalendarRow],
    rules: Rules,
    event: dict[str, Any],
    now: datetime,
) -> tuple[list[tuple[str, str]], tuple[datetime, datetime, tzinfo, str] | None]:
    """The rules ``event`` breaks (each once, with the occurrence that breaks it first), and
    the time the suggestions replace: the event's, or its series' first breaking one."""
    tz = zone(next(c.time_zone for c in calendars if c.id == event["calendarId"]))
    user_id = principal.user_id
    start, end = _instant(event["startsAt"]), _instant(event["endsAt"])
    slack = timedelta(days=2) + (rules.buffer or timedelta(0))
    if not event.get("recurrence"):
        meetings = Meetings(
            meetings_of(
                conn, user_id=user_id, low=start - slack, high=end + slack, calendars=calendars
            )
        )
        found = broken(rules, tz, start, end, now=now, meetings=meetings, skip=event["id"])
        return found, (start, end, tz, event["id"])
    low = max(now, start) - (end - start)
    high = max(now, start) + rules.horizon
    meetings = Meetings(
        meetings_of(conn, user_id=user_id, low=low - slack, high=high + slack, calendars=calendars)
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
    side, never in the past), that pass every rule; in time order."""
    start, end = span
    length = end - start
    reach = SUGGESTION_REACH + timedelta(days=2) + (rules.buffer or timedelta(0))
    meetings = Meetings(
        meetings_of(
            conn,
            user_id=principal.user_id,
            low=start - reach,
            high=end + reach,
            calendars=calendars,
        )
    )
    base = _quarter(start, tz)
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


@dataclass(slots=True)
class SlotFilter:
    """What ``findFreeTime`` keeps of its free time under the rules binding the key:
    ``clip`` cuts free intervals to the times a meeting may lie in at all (working hours, not
    on a no-meeting day, after the notice, within the days ahead), ``keeps`` says whether a
    meeting at ``[start, end)`` keeps every rule."""

    rules: Rules
    tz: tzinfo
    now: datetime
    meetings: Meetings

    def keeps(self, start: datetime, end: datetime) -> bool:
        return passes(self.rules, self.tz, start, end, now=self.now, meetings=self.meetings)

    def clip(self, free: Iterable[Span]) -> list[Span]:
        rules, tz = self.rules, self.tz
        floor = self.now + rules.min_notice if rules.min_notice is not None else None
        ceiling = None
        if rules.max_days_ahead is not None:
            ceiling = self.now + timedelta(days=rules.max_days_ahead)
        out: list[Span] = []
        for start, end in free:
            if floor is not None:
                start = max(start, floor)
            if ceiling is not None:
                end = min(end, ceiling + DAY)  # a meeting starts by then, lasts a day at most
            if start >= end:
                continue
            if rules.hours is None and not rules.no_meeting_days:
                out.append((start, end))
                continue
            for a, b in _allowed(rules, tz, start, end):
                if max(a, start) < min(b, end):
                    out.append((max(a, start), min(b, end)))
        return out


def _allowed(rules: Rules, tz: tzinfo, low: datetime, high: datetime) -> list[Span]:
    """The spans of ``[low, high)`` a meeting may lie in by working hours and no-meeting
    days (joined across midnight), on the local days they touch."""
    day = low.astimezone(tz).date() - DAY
    last = high.astimezone(tz).date()
    spans: list[Span] = []
    while day <= last:
        if day.weekday() not in rules.no_meeting_days:
            if rules.hours is None:
                spans.append((_at(day, timedelta(0), tz), _at(day, DAY, tz)))
            else:
                spans.extend(_working_spans(rules, day, tz))
        day += DAY
    return _union(spans)


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
    series may be read from memory, under versions no rollback takes back)."""
    rules = rules_of(principal)
    if rules is None:
        return None
    slack = timedelta(days=2) + (rules.buffer or timedelta(0))
    user_id = principal.user_id
    calendars = owner_calendars(conn, user_id=user_id, before_writes=True)  # a read: no write
    meetings = Meetings(
        meetings_of(conn, user_id=user_id, low=low - slack, high=high + slack, calendars=calendars)
    )
    return SlotFilter(rules, tz, now, meetings)


__all__ = [
    "MAX_OCCURRENCES",
    "Meetings",
    "SlotFilter",
    "Verdict",
    "broken",
    "check_write",
    "passes",
    "slot_filter",
    "suggestions",
]
