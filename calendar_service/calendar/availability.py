"""Availability: when calendars are busy (``query_free_busy``) and when they are all free for
a while (``find_free_time``). See docs/availability.md; what takes time is found by
``events.busy`` (which ``ifFree`` on create uses too).

Busy time is what the list shows, computed in the core from the same window query
(``queries.busy_statement``, ``queries.series_statement``): single events and changed
occurrences, and the occurrences of series (``events.busy``), cancelled
occurrences left out; ``transparent`` events are free. All-day events are busy for their whole
local days in their calendar's zone (they are stored as those midnights). Zero-length events
take no time. Busy intervals are merged per calendar (overlapping or touching ones become one)
and clipped to the window.

Every query starts from what the key reaches (``calendars.accessible_calendars``): an id
outside it is a 401 ``insufficient_scope`` for a one-calendar key (which may not learn what
else exists) and a 400 naming ``calendarIds`` for an unknown id of an all-calendars key.

``find_free_time`` offers only the slots that keep the owner's rules for agents binding the
key (``rule_check.slot_filter``, in the zone of the first calendar asked, where it would book);
``query_free_busy`` is a statement of fact and ignores them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, TypeVar

from sqlalchemy import Connection

from calendar_service.access.keys import Principal
from calendar_service.calendar import sharing
from calendar_service.calendar.calendars import CalendarRow, accessible_calendars
from calendar_service.calendar.connected import (
    SourceRow,
    connected_busy,
    counted_sources,
    source_public,
)
from calendar_service.calendar.event_input import parse_untrusted
from calendar_service.calendar.events.busy import Busy, busy_later
from calendar_service.calendar.rule_check import slot_filter
from calendar_service.calendar.rule_verdict import Meetings, SlotFilter, days_around, instant
from calendar_service.calendar.rules import rules_of
from calendar_service.platform.deferred import Later, finish
from calendar_service.platform.errors import FieldError, InsufficientScope, ValidationFailed
from calendar_service.platform.models.availability import FreeBusyQuery, FreeTimeQuery, WorkingHours
from calendar_service.platform.timeutil import (
    format_in,
    is_valid_zone,
    localize,
    midnight,
    parse_date_time,
    parse_day,
    utc_text,
    utcnow,
    zone,
)

MAX_WINDOW = timedelta(days=92)
MAX_DURATION = 24 * 60
DEFAULT_SLOTS = 10
MAX_SLOTS = 100
MAX_CALENDARS = 50
GRID = timedelta(minutes=15)
"""Slots start every 15 minutes of local time (every ``duration`` when it is shorter)."""
DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
WORKING_DAYS = DAYS[:5]
_HHMM = re.compile(r"^(\d{2}):(\d{2})$")

# ---------------------------------------------------------------------------------------------
# Reading the input


_Query = TypeVar("_Query", FreeBusyQuery, FreeTimeQuery)


def _asked(
    conn: Connection, principal: Principal, model: type[_Query], body: Any
) -> tuple[_Query, list[FieldError], set[str], list[CalendarRow], tzinfo, list[SourceRow]]:
    """A question as read (``body`` as ``model``): its fields, the errors found so far, the
    fields whose type was wrong (left unread), the calendars asked for, the first one's
    zone (bounds without an offset are read in it; UTC without calendars), and the owner's
    connected calendars asked for (``calendar.connected``: every one that counts for
    availability without ``calendarIds``, else those whose ``conn_…`` ids it lists)."""
    data, errors = parse_untrusted(model, body, ())
    bad = {e["field"].split(".", 1)[0] for e in errors}
    ids = None if "calendarIds" in bad else data.calendar_ids
    sources = counted_sources(conn, user_id=principal.user_id)
    if ids is not None:
        known = {s.id: s for s in sources}
        asked = [i for i in dict.fromkeys(ids) if i in known]
        ids = [i for i in ids if i not in known]
        sources = [known[i] for i in asked]
        if asked and not ids:
            calendars: list[CalendarRow] = []
            tz: tzinfo = UTC
            if len(asked) > MAX_CALENDARS:
                errors.append(
                    FieldError("calendarIds", f"must list at most {MAX_CALENDARS} calendars")
                )
            return data, errors, bad, calendars, tz, sources
    calendars = _calendars(conn, principal, ids, errors)
    tz = zone(calendars[0].time_zone) if calendars else UTC
    return data, errors, bad, calendars, tz, sources


def _calendars(
    conn: Connection, principal: Principal, ids: Sequence[str] | None, errors: list[FieldError]
) -> list[CalendarRow]:
    """The calendars asked for (default: all the key reaches, the default one first). A
    connected calendar's read-only mirror is not one of them: its busy time is the
    connection's (``conn_…``), counted once."""
    reachable = [c for c in accessible_calendars(conn, principal=principal) if not c.connection_id]
    if ids is None:
        return reachable
    if not ids:
        errors.append(FieldError("calendarIds", "must list at least one calendar id"))
        return []
    if len(ids) > MAX_CALENDARS:
        errors.append(FieldError("calendarIds", f"must list at most {MAX_CALENDARS} calendars"))
        return []
    by_id = {c.id: c for c in reachable}
    wanted = list(dict.fromkeys(ids))
    missing = [i for i in wanted if i not in by_id]
    if missing and principal.calendar_id is not None:
        own = reachable[0] if reachable else None
        named = f" {own.name!r} (calendarId {own.id!r})" if own is not None else ""
        raise InsufficientScope(
            f"This API key is limited to the calendar{named} and cannot reach another one. "
            "Send that calendar's id, or no calendarIds."
        )
    if missing:
        errors.append(
            FieldError(
                "calendarIds",
                "no calendar with id " + ", ".join(repr(i) for i in missing) + " for this key",
            )
        )
        return []
    return [by_id[i] for i in wanted]


def _bound(text: str, tz: tzinfo) -> datetime:
    text = text.strip()
    if len(text) == 10:
        return midnight(parse_day(text, tz), tz).astimezone(UTC)
    return parse_date_time(text, tz).astimezone(UTC)


def _window(
    time_min: Any, time_max: Any, tz: tzinfo, errors: list[FieldError], bad: set[str]
) -> tuple[datetime, datetime] | None:
    bounds: list[datetime | None] = []
    for name, text in (("timeMin", time_min), ("timeMax", time_max)):
        if name in bad:
            bounds.append(None)
            continue
        try:
            bounds.append(_bound(text, tz))
        except ValueError as exc:
            errors.append(FieldError(name, str(exc)))
            bounds.append(None)
    low, high = bounds
    if low is None or high is None:
        return None
    if high <= low:
        errors.append(FieldError("timeMax", "must be after timeMin"))
        return None
    if high - low > MAX_WINDOW:
        errors.append(
            FieldError("timeMax", f"must be at most {MAX_WINDOW.days} days after timeMin")
        )
        return None
    return low, high


# ---------------------------------------------------------------------------------------------
# Busy time


def merged(items: Sequence[Busy], low: datetime, high: datetime) -> list[tuple[str, str]]:
    """``items``' times (stored UTC text, which sorts in time order) clipped to ``[low,
    high)`` and merged: overlapping or touching intervals become one."""
    low_text, high_text = utc_text(low), utc_text(high)
    spans = sorted((max(b[1], low_text), min(b[2], high_text)) for b in items)
    out: list[list[str]] = []
    for start, end in spans:
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1][1] = end
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def query_free_busy(conn: Connection, *, principal: Principal, body: Any) -> dict[str, Any]:
    """``FreeBusyPublic``: the merged busy intervals of each calendar asked for (each in its
    own time zone), clipped to ``[timeMin, timeMax)`` (at most 92 days)."""
    return finish(query_free_busy_later(conn, principal=principal, body=body))


def query_free_busy_later(
    conn: Connection, *, principal: Principal, body: Any
) -> dict[str, Any] | Later:
    """``query_free_busy`` for the fronts (``operations.FREE_BUSY``): a ``Later`` when series
    must be expanded, made off the event loop after the transaction."""
    data, errors, bad, calendars, tz, sources = _asked(conn, principal, FreeBusyQuery, body)
    window = _window(data.time_min, data.time_max, tz, errors, bad)
    if errors or window is None:
        raise ValidationFailed(errors)
    low, high = window
    outside = connected_busy(conn, sources=sources, low=low, high=high)
    now = utcnow()

    def answer(items: list[Busy]) -> dict[str, Any]:
        found = []
        for c in calendars:
            local = zone(c.time_zone)
            spans = merged([b for b in items if b[0] == c.id], low, high)
            busy = [
                {"startsAt": format_in(s, local), "endsAt": format_in(e, local)} for s, e in spans
            ]
            found.append({"id": c.id, "name": c.name, "busy": busy})
        for source in sources:  # connected calendars: in the answer's zone
            spans = merged([b for b in outside if b[0] == source.id], low, high)
            busy = [{"startsAt": format_in(s, tz), "endsAt": format_in(e, tz)} for s, e in spans]
            found.append({"id": source.id, "name": source.name, "busy": busy})
        return {
            "timeMin": format_in(low, tz),
            "timeMax": format_in(high, tz),
            "calendars": found,
            "sources": [source_public(s, now=now) for s in sources],
        }

    return _answered(conn, principal, calendars, window, answer)


def _answered(
    conn: Connection,
    principal: Principal,
    calendars: list[CalendarRow],
    window: tuple[datetime, datetime],
    answer: Callable[[list[Busy]], dict[str, Any]],
) -> dict[str, Any] | Later:
    """``answer`` of what takes time in ``calendars`` within ``window``: now, or a ``Later``
    when series must be expanded (off the event loop, after the transaction)."""
    low, high = window
    items = busy_later(conn, user_id=principal.user_id, calendars=calendars, low=low, high=high)
    return items.then(answer) if isinstance(items, Later) else answer(items)


# ---------------------------------------------------------------------------------------------
# Finding free time


@dataclass(frozen=True, slots=True)
class Hours:
    """Working hours: local ``start`` to ``end`` (``end`` may be 24:00) on ``days``."""

    start: timedelta
    end: timedelta
    days: frozenset[int]  # date.weekday(): 0 is Monday


def _clock(text: Any, field: str, errors: list[FieldError], *, end: bool) -> timedelta | None:
    match = _HHMM.match(text) if isinstance(text, str) else None
    hours, minutes = (int(match.group(1)), int(match.group(2))) if match else (99, 99)
    if (hours, minutes) == (24, 0) and end:
        return timedelta(days=1)
    if hours > 23 or minutes > 59:
        latest = "24:00" if end else "23:59"
        errors.append(FieldError(field, f"must be a local time HH:MM from 00:00 to {latest}"))
        return None
    return timedelta(hours=hours, minutes=minutes)


def _hours(value: Any, errors: list[FieldError], bad: set[str]) -> Hours | None:
    """The working hours asked for; ``None`` without them, or when a type error in them was
    already reported (``bad``), or with their value errors added to ``errors``."""
    if value is None or "workingHours" in bad:
        return None
    if isinstance(value, dict):  # well typed, but left unread when another field was bad
        value = WorkingHours.model_validate(value)
    start = _clock(value.start, "workingHours.start", errors, end=False)
    end = _clock(value.end, "workingHours.end", errors, end=True)
    if start is not None and end is not None and end <= start:
        errors.append(
            FieldError(
                "workingHours.end",
                "must be after workingHours.start (working hours across midnight are not "
                "supported: ask for two ranges in two calls)",
            )
        )
    days: set[int] = set()
    names = value.days if value.days is not None else list(WORKING_DAYS)
    if not names:
        errors.append(FieldError("workingHours.days", "must list at least one day"))
    for name in names:
        if name not in DAYS:
            errors.append(
                FieldError("workingHours.days", f"{name!r} is not a day: use {' '.join(DAYS)}")
            )
            return None
        if DAYS.index(name) in days:
            errors.append(FieldError("workingHours.days", f"lists {name!r} more than once"))
            return None
        days.add(DAYS.index(name))
    if start is None or end is None or not days or end <= start:
        return None
    return Hours(start, end, frozenset(days))


def whole_number(
    value: Any, field: str, low: int, high: int, errors: list[FieldError]
) -> int | None:
    """A whole number in ``[low, high]``: JSON's ``30`` or ``30.0`` (JSON Schema's integer),
    never ``true`` or ``"30"``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    errors.append(FieldError(field, f"must be a whole number from {low} to {high}"))
    return None


def find_free_time(
    conn: Connection, *, principal: Principal, body: Any, most: int | None = None
) -> dict[str, Any]:
    """``FreeTimePublic``: start times, earliest first, where every calendar asked for is
    free for ``durationMinutes``, within the working hours if given, in ``timeZone`` (default:
    the first calendar's). See docs/availability.md for the grid and the DST rules.

    ``most``: for the core's own callers (a scheduling link's page), every slot up to that
    many when ``body`` has no ``limit``."""
    return finish(find_free_time_later(conn, principal=principal, body=body, most=most))


def find_free_time_later(
    conn: Connection, *, principal: Principal, body: Any, most: int | None = None
) -> dict[str, Any] | Later:
    """``find_free_time`` for the fronts (``operations.FREE_TIME``): a ``Later`` when series
    must be expanded, made off the event loop after the transaction."""
    data, errors, bad, calendars, tz, sources = _asked(conn, principal, FreeTimeQuery, body)
    zone_name = calendars[0].time_zone if calendars else "UTC"
    if data.time_zone is not None and "timeZone" not in bad:
        if is_valid_zone(data.time_zone):
            tz, zone_name = zone(data.time_zone), data.time_zone
        else:
            errors.append(FieldError("timeZone", "must be an IANA time zone such as Europe/Berlin"))
    duration = (
        None
        if "durationMinutes" in bad
        else whole_number(data.duration_minutes, "durationMinutes", 1, MAX_DURATION, errors)
    )
    limit = DEFAULT_SLOTS if most is None else most
    if data.limit is not None and "limit" not in bad:
        limit = whole_number(data.limit, "limit", 1, MAX_SLOTS, errors) or DEFAULT_SLOTS
    hours = _hours(data.working_hours, errors, bad)
    window = _window(data.time_min, data.time_max, tz, errors, bad)
    asked = None if "attendees" in bad else _attendees(data.attendees, errors)
    if errors or window is None or duration is None:
        raise ValidationFailed(errors)
    low, high = window
    length = timedelta(minutes=duration)
    # The owner's rules for agents that bind this key, in the zone of the calendar it books in.
    target_tz = zone(calendars[0].time_zone) if calendars else tz
    now = utcnow()
    bound = rules_of(principal)
    # Asked of every calendar of the owner (and their connected ones), the busy read serves
    # the rules too, read over the local days of the window and the buffer (what they look
    # at), all-day events told apart (not meetings); else the rules read the owner's meetings
    # themselves.
    shared = bound is not None and principal.calendar_id is None and data.calendar_ids is None
    shared = shared and not asked
    own_filter = None
    if bound is not None and not shared:
        own_filter = slot_filter(
            conn, principal=principal, tz=target_tz, low=low, high=high, now=now
        )
    read = days_around(bound, target_tz, low, high) if shared and bound is not None else window
    all_day: set[str] | None = set() if shared else None
    known: list[tuple[str, str, list[CalendarRow]]] = []
    unknown: list[str] = []
    if asked:
        known, unknown = sharing.sharers(conn, viewer_id=principal.user_id, emails=asked)
    # The owner's connected calendars always count: a slot is free only if the whole day is.
    if data.calendar_ids is not None and "calendarIds" not in bad:
        sources = counted_sources(conn, user_id=principal.user_id)
    outside = connected_busy(conn, sources=sources, low=read[0], high=read[1])
    # The rules' meetings in connected calendars: not the busy time only all-day events give.
    timed_outside = []
    if shared and sources:
        timed_outside = connected_busy(conn, sources=sources, low=read[0], high=read[1], timed=True)
    for _, user_id, _ in known:  # theirs too: never more than the times
        their_sources = counted_sources(conn, user_id=user_id)
        outside += connected_busy(conn, sources=their_sources, low=low, high=high)

    def answer(items: list[Busy]) -> dict[str, Any]:
        busy = merged(items + outside, low, high)
        free: Iterable[tuple[datetime, datetime]] = _free(busy, low, high)
        rules = own_filter
        if all_day is not None and bound is not None:
            meetings = Meetings([b for b in items if b[3] not in all_day] + timed_outside)
            rules = SlotFilter(bound, target_tz, now, meetings)
        if rules is not None:  # only where a meeting may be at all
            free = rules.clip(free)
        if hours is not None:
            free = _within_hours(free, hours, tz, (low, high))
        slots = []
        for start in _starts(free, length, tz):
            end = start + length
            if rules is not None and not rules.keeps(start, end):
                continue
            slots.append({"startsAt": format_in(start, tz), "endsAt": format_in(end, tz)})
            if len(slots) == limit:
                break
        found: dict[str, Any] = {
            "timeZone": zone_name,
            "slots": slots,
            "sources": [source_public(s, now=now) for s in sources],
        }
        if asked is not None:
            found["attendeesConsidered"] = [email for email, _, _ in known]
            found["attendeesUnknown"] = unknown
        return found

    if not known:
        items = busy_later(
            conn,
            user_id=principal.user_id,
            calendars=calendars,
            low=read[0],
            high=read[1],
            all_day=all_day,
        )
        return items.then(answer) if isinstance(items, Later) else answer(items)
    parts = [busy_later(conn, user_id=principal.user_id, calendars=calendars, low=low, high=high)]
    for _, user_id, theirs in known:  # their busy time: never more than that
        parts.append(busy_later(conn, user_id=user_id, calendars=theirs, low=low, high=high))
    if not any(isinstance(p, Later) for p in parts):
        return answer([b for p in parts for b in finish(p)])
    return Later(lambda: answer([b for p in parts for b in finish(p)]))


def _attendees(value: Any, errors: list[FieldError]) -> list[str] | None:
    """``attendees`` of findFreeTime: at most ``sharing.MAX_ASKED`` emails."""
    if value is None:
        return None
    if len(value) > sharing.MAX_ASKED:
        errors.append(FieldError("attendees", f"must list at most {sharing.MAX_ASKED} emails"))
        return None
    return [str(v) for v in value]


def _free(
    busy: Sequence[tuple[str, str]], low: datetime, high: datetime
) -> Iterator[tuple[datetime, datetime]]:
    """The complement of ``busy`` (merged, in order) within ``[low, high)``, lazily: a search
    that stops at its first slots reads only the busy times before them."""
    at = low
    for start_text, end_text in busy:
        start, end = instant(start_text), instant(end_text)
        if start > at:
            yield at, start
        at = max(at, end)
    if at < high:
        yield at, high


def _local_day(instant: datetime, tz: tzinfo) -> date:
    return instant.astimezone(tz).date()


def _at(day: date, clock: timedelta, tz: tzinfo) -> datetime:
    """``clock`` after the start of local ``day`` by the wall clock (a time in a DST gap is
    moved forward by the gap, ``timeutil.localize``), in UTC."""
    wall = datetime.combine(day, time()) + clock
    return localize(wall, tz).astimezone(UTC)


def _within_hours(
    free: Iterable[tuple[datetime, datetime]],
    hours: Hours,
    tz: tzinfo,
    window: tuple[datetime, datetime],
) -> Iterator[tuple[datetime, datetime]]:
    """``free`` (in order, disjoint, within ``window``) cut to the working hours of each local
    day (wall-clock times, so 09:00 is 09:00 on the days DST begins and ends), lazily: the two
    ordered lists are walked side by side, each working day computed once."""
    days = _working_days(hours, tz, window)
    working = next(days, None)
    for start, end in free:
        # The working days that end before this free interval are behind us.
        while working is not None and working[1] <= start:
            working = next(days, None)
        # Every working day that overlaps [start, end), in order; the last may overlap the
        # next free interval too, so it is kept.
        while working is not None and working[0] < end:
            a, b = max(start, working[0]), min(end, working[1])
            if a < b:
                yield a, b
            if working[1] > end:
                break
            working = next(days, None)
        if working is None:
            return


def _working_days(
    hours: Hours, tz: tzinfo, window: tuple[datetime, datetime]
) -> Iterator[tuple[datetime, datetime]]:
    """The working hours of each working day (local) that may overlap ``window``, in order."""
    day = _local_day(window[0], tz) - timedelta(days=1)
    last = _local_day(window[1], tz)
    while day <= last:
        if day.weekday() in hours.days:
            yield _at(day, hours.start, tz), _at(day, hours.end, tz)
        day += timedelta(days=1)


def _starts(
    free: Iterable[tuple[datetime, datetime]], length: timedelta, tz: tzinfo
) -> Iterator[datetime]:
    """Slot starts in ``free``, in order: the grid points of each local day (every
    ``GRID``, or ``length`` when shorter, of elapsed time from the local midnight) from which
    ``length`` fits."""
    step = min(GRID, length)
    for start, end in free:
        at = _on_grid(start, step, tz)
        while at + length <= end:
            yield at
            following = at + step
            if _local_day(following, tz) != _local_day(at, tz):
                following = _on_grid(following, step, tz)
            at = following


def _on_grid(instant: datetime, step: timedelta, tz: tzinfo) -> datetime:
    """The first grid point at or after ``instant``."""
    day = _local_day(instant, tz)
    base = _at(day, timedelta(0), tz)
    if base > instant:  # a midnight inside a DST gap moved forward
        return base
    steps = math.ceil((instant - base) / step)
    return base + steps * step
