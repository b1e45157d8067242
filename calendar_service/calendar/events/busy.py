"""What takes time in calendars: for ``calendar_service.calendar.availability`` (free/busy, finding
a time) and ``ifFree`` on create (``conflicts``, which counts the owner's connected calendars
too, ``calendar.connected``).

Busy time is what the list shows, from the same window query (``queries.busy_statement``,
``queries.series_statement``): single events and changed occurrences, and the occurrences of
series (``busy_occurrences``), cancelled occurrences left out; ``transparent``
events are free. All-day events are busy for their whole local days in their calendar's zone
(they are stored as those midnights). Zero-length events take no time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, exists, select

from calendar_service.access.keys import READ, WRITE, Principal
from calendar_service.calendar.calendars import CalendarRow, calendar_row
from calendar_service.calendar.connected import busy_of_owner
from calendar_service.calendar.events.chunks import (
    PLANS,
    SHARE_FLOOR,
    Plan,
    Series,
    now_or_later,
    skipped_starts,
)
from calendar_service.calendar.events.queries import (
    busy_statement,
    series_rows,
    window_floor,
    window_series,
)
from calendar_service.calendar.recurrence import READ_BUDGET, Budget
from calendar_service.platform.db import Statement
from calendar_service.platform.deferred import Later, finish
from calendar_service.platform.models.calendars import ROW_COLUMNS, calendars_t
from calendar_service.platform.models.columns import to_db
from calendar_service.platform.models.connections import connections_t
from calendar_service.platform.timeutil import EARLIEST, LATEST, format_in, utc_text, zone

BUDGET = 4 * READ_BUDGET
"""Work units one availability request may spend expanding series (a window is at most 92
days, where a list page stops when it is full)."""

Busy = tuple[str, str, str, str, str]
"""What takes time: calendar id, start and end (stored UTC text), event id, title."""


def meetings_of(
    conn: Connection,
    *,
    user_id: str,
    low: datetime,
    high: datetime,
    calendars: Sequence[CalendarRow] | None = None,
) -> list[Busy]:
    """The owner's meetings that overlap ``[low, high)``, in no order: what the owner's rules
    for agents count (``calendar.rule_check``), in every calendar of the owner: events that
    are neither all-day nor transparent (free), cancelled occurrences left out, and the busy
    times of the owner's connected calendars. The one read
    of busy time the rules make (``calendars``: ``owner_calendars``, when read already).

    It runs after the write it checks, in the same transaction, which may yet be rolled back
    (a refusal, a dry run): the calendars' ``series_version`` is left unread, so that the
    series found are not kept in memory (``queries.window_series``) under a version that the
    rollback takes back and a later write numbers again (but 0, a calendar without series:
    ``owner_calendars``)."""
    if calendars is None:
        calendars = owner_calendars(conn, user_id=user_id)
    found = finish(
        busy_later(conn, user_id=user_id, calendars=calendars, low=low, high=high, timed=True)
    )
    if not getattr(calendars, "connected", True):  # read with them: the owner has none
        return found
    # The owner's connected calendars count too (``calendar.connected``): their busy times,
    # but those of all-day events (as here: not meetings).
    return found + busy_of_owner(conn, user_id=user_id, low=low, high=high, timed=True)


class OwnerCalendars(list[CalendarRow]):
    """Every calendar of the owner (``owner_calendars``), and whether the owner has a
    connected calendar that counts for availability (``connected``)."""

    connected: bool = True


# ``calendars.every_calendar``'s statement, and whether the owner has a connected calendar
# that counts (an index probe in the same statement: the rules of an owner without one read
# no connected busy time, one statement fewer).
_OWNER_CALENDARS = Statement(
    select(
        *ROW_COLUMNS,
        exists()
        .where(
            connections_t.c.user_id == bindparam("user_id"),
            connections_t.c.counts_for_availability.is_(True),
        )
        .label("connected"),
    )
    .where(calendars_t.c.user_id == bindparam("user_id"))
    .order_by(calendars_t.c.is_default.desc(), calendars_t.c.name)
)


def owner_calendars(
    conn: Connection, *, user_id: str, before_writes: bool = False
) -> OwnerCalendars:
    """Every calendar of the owner, for ``meetings_of`` (its ``calendars``: read once for
    several reads of meetings); ``before_writes``: for a transaction that has written nothing
    (``findFreeTime``), whose series may then be read from memory. After a write, a calendar
    whose ``series_version`` is 0 keeps it (it never had a series, this transaction's writes
    counted: no series to ask the database for); any other version is left unread. A
    connected calendar's mirror is left out: its busy time is counted as its connection's."""
    rows = _OWNER_CALENDARS.all(conn, user_id=user_id)
    found = OwnerCalendars(
        calendar_row(r, versions=before_writes or r[5] == 0)
        for r in rows
        if not r[7]  # mirrors: counted as their connection
    )
    found.connected = bool(rows[0][9]) if rows else True
    return found


def busy_later(
    conn: Connection,
    *,
    user_id: str,
    calendars: Sequence[Any],
    low: datetime,
    high: datetime,
    timed: bool = False,
    all_day: set[str] | None = None,
) -> list[Busy] | Later:
    """Everything that takes time in ``calendars`` (rows with ``id``, ``time_zone``,
    ``max_event_seconds``) and overlaps ``[low, high)``: opaque single events and changed
    occurrences, and occurrences of opaque series, in no order; or a ``Later`` that gives it
    without the database when series must be expanded (the availability operations' fronts
    run it off the event loop; ``finish`` runs it at once). ``timed``: all-day events left
    out (``meetings_of``). ``all_day``: a set that gets the event ids of the all-day items
    (once the ``Later`` is done), so that one read serves the busy time and the owner's
    rules' meetings."""
    if not calendars:
        return []
    dialect = conn.dialect.name
    size = 1 << max(len(calendars) - 1, 0).bit_length()  # a few statement shapes only
    params: dict[str, Any] = {
        f"calendar_{i}": calendars[i].id if i < len(calendars) else None for i in range(size)
    }
    longest = max(c.max_event_seconds for c in calendars)
    window = {
        "low": to_db(low, dialect),
        "low_floor": to_db(window_floor(low, longest), dialect),
        "high": to_db(high, dialect),
    }
    rows = busy_statement(size, timed, all_day is not None).all(conn, **params, **window)
    found: list[Busy] = [
        (r[0], r[1], r[2], r[3], r[4])
        for r in rows
        if r[2] > r[1]  # zero-length events take no time
    ]
    if all_day is not None:
        all_day.update(r[3] for r in rows if r[5])
    # The list's search for series in the window (from memory while a calendar's series are
    # unchanged); when it asks the database for all the owner's calendars, only ours count.
    one = len(calendars) == 1
    scope = {"calendar_id": calendars[0].id} if one else {"user_id": user_id}
    keys = window_series(
        conn,
        calendars,
        shape=(one, True, True, False),
        params={**window, **scope},
        texts=(utc_text(low), utc_text(high), None),
    )
    wanted = {c.id for c in calendars}
    keys = [k for k in keys if k[1] in wanted]
    if not keys:
        return found
    occurrences = busy_occurrences(
        keys,
        calendars,
        load=lambda ids: series_rows(conn, ids),
        low=low,
        high=high,
        budget=BUDGET,
        later=True,
        timed=timed,
        all_day=all_day,
    )

    def all_of(occurrences: list[Busy]) -> list[Busy]:
        return found + [b for b in occurrences if b[2] > b[1]]

    return occurrences.then(all_of) if isinstance(occurrences, Later) else all_of(occurrences)


def conflicts(
    conn: Connection,
    *,
    principal: Principal,
    calendar: Any,
    start: datetime,
    end: datetime,
) -> list[dict[str, Any]]:
    """The opaque events and occurrences of ``calendar`` overlapping ``[start, end)``, in time
    order (times in the calendar's zone; ids and titles only for keys that may read them).
    On PostgreSQL the calendar's row is locked first (``FOR NO KEY UPDATE``: plain inserts of
    events, whose foreign key only shares the row's key, do not wait for it), so that two such
    checks of one calendar (and the inserts that follow them) run one after the other; SQLite
    has one writer."""
    if end <= start:
        return []  # a zero-length event takes no time
    # Read again, locked: what the check relies on (the longest event, the series' version)
    # is then what the last booking before this one committed.
    query = select(calendars_t.c.max_event_seconds, calendars_t.c.series_version).where(
        calendars_t.c.id == calendar.id
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(key_share=True)
    longest, version = conn.execute(query).one()
    locked = CalendarRow(
        calendar.id,
        calendar.name,
        calendar.time_zone,
        bool(calendar.is_default),
        longest,
        version,
    )
    items = finish(
        busy_later(conn, user_id=principal.user_id, calendars=[locked], low=start, high=end)
    )
    # The owner's connected calendars count too (``calendar.connected``): times only.
    items += busy_of_owner(conn, user_id=principal.user_id, low=start, high=end)
    tz = zone(calendar.time_zone)
    readable = principal.permission in (READ, WRITE)
    found = []
    for _, s, e, event_id, title in sorted(items, key=lambda b: (b[1], b[3])):
        item: dict[str, Any] = {"startsAt": format_in(s, tz), "endsAt": format_in(e, tz)}
        if readable and event_id:
            item["id"], item["title"] = event_id, title
        found.append(item)
    return found


def busy_occurrences(
    series_keys: Sequence[Any],
    calendars: Sequence[Any],
    *,
    load: Callable[[Sequence[str]], list[Any]],
    low: datetime,
    high: datetime,
    budget: int,
    later: bool = False,
    timed: bool = False,
    all_day: set[str] | None = None,
) -> list[Busy] | Later:
    """Every occurrence of the opaque series among ``series_keys`` (``queries.SERIES_KEYS``)
    that overlaps ``[low, high)``, in no order and without paging (for
    ``busy_later``), read through the same chunk cache as the list (``events.chunks``). The
    original starts of a series' exceptions are left out: a changed occurrence is a row of
    the window query, a cancelled one takes no time.

    The series share ``budget`` equally (at least ``SHARE_FLOOR`` each); a series whose
    share runs out is busy from the instant it paused at to ``high``: time that may be taken
    is never shown as free. ``later``: when series must be expanded (chunks not kept), a
    ``Later`` that finds them without the database (as ``occurrences.page_with_series``)."""
    by_calendar = {c.id: (c.name, zone(c.time_zone)) for c in calendars}
    plans = [
        p
        for p in PLANS.of(series_keys, by_calendar, load)
        if p.template["transparency"] == "opaque" and not (timed and p.rule.all_day)
    ]
    if not plans:
        return []
    found = functools.partial(
        _busy_entries,
        plans,
        skipped_starts(series_keys),
        low=low,
        high=high,
        budget=budget,
        all_day=all_day,
    )
    return now_or_later(found, later=later)


def _busy_entries(
    plans: list[Plan],
    skipped: dict[str, set[str]],
    *,
    low: datetime,
    high: datetime,
    budget: int,
    may_expand: bool,
    all_day: set[str] | None = None,
) -> list[Busy]:
    """``busy_occurrences`` once the plans are known (no database); ``all_day`` gets the ids
    of the entries of all-day series."""
    share = max(budget // len(plans), SHARE_FLOOR)
    texts = (utc_text(low), utc_text(high))
    found: list[Busy] = []
    for plan in plans:
        entries = _plan_entries(
            plan, skipped.get(plan.id, ()), (low, high), texts, share, may_expand
        )
        if all_day is not None and plan.rule.all_day:
            all_day.update(b[3] for b in entries)
        found.extend(entries)
    return found


def _plan_entries(
    plan: Plan,
    skip: Any,
    window: tuple[datetime, datetime],
    texts: tuple[str, str],
    share: int,
    may_expand: bool,
) -> list[Busy]:
    """One series' busy entries in ``window`` (``_busy_entries``; ``texts``: its bounds as
    stored UTC text)."""
    (low, high), (low_text, high_text) = window, texts
    calendar_id, title = plan.template["calendarId"], plan.template["title"]
    found: list[Busy] = []
    series = Series(
        plan,
        since=EARLIEST,
        low=None,
        high_text=None,
        budget=Budget(share),
        may_expand=may_expand,
    )
    first = max(low - plan.longest, EARLIEST)
    first_text = utc_text(first)
    index = max(0, (first - plan.anchor) // plan.step)
    while True:
        chunk_start = plan.anchor + index * plan.step
        if chunk_start >= high or chunk_start > LATEST:
            break
        if plan.ends is not None and chunk_start >= plan.ends:
            break
        chunk = series.whole_chunk(chunk_start, index)
        entries = series.partial if chunk is None else chunk[1]
        for entry in entries:
            start_text, end_text = entry[0], entry[1]
            if start_text < first_text or start_text >= high_text or end_text <= low_text:
                continue
            if start_text not in skip:
                found.append((calendar_id, start_text, end_text, f"{plan.id}_{entry[2]}", title))
        if chunk is None:
            paused = series.paused or low
            found.append((calendar_id, utc_text(max(paused, low)), high_text, plan.id, title))
            break
        index += 1
    return found
