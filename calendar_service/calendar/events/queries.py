"""The events' SQL: the list's window query, the insert, loading one event within a key's
reach, and the calendar's longest event.

The statements every list or create runs are compiled once and run straight on the driver
(``db.Statement``); the rest go through SQLAlchemy as usual.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    BindParameter,
    Connection,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal_column,
    null,
    or_,
    select,
    union_all,
    update,
)

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import CalendarRow, calendars_t, within_reach
from calendar_service.calendar.events.search import matched_condition, search_matches
from calendar_service.platform.db import Statement
from calendar_service.platform.db.dialects import joined_texts
from calendar_service.platform.errors import NotFound
from calendar_service.platform.lru import Lru
from calendar_service.platform.models import (
    SERIES_ROWS,
    UTCDateTime,
    connections_t,
    events_t,
    users_t,
    utc_text_of,
)

EVENT_COLUMNS = (
    events_t.c.id,
    events_t.c.calendar_id,
    events_t.c.title,
    events_t.c.starts_at,
    events_t.c.ends_at,
    events_t.c.all_day,
    events_t.c.description,
    events_t.c.location,
    events_t.c.created_at,
    events_t.c.updated_at,
    events_t.c.recurrence,
    events_t.c.recurrence_last_start,
    events_t.c.recurrence_ends_at,
    events_t.c.recurring_event_id,
    events_t.c.original_starts_at,
    events_t.c.status,
    events_t.c.transparency,
    events_t.c.time_zone,
    events_t.c.attendees,
)


def _as_text(columns: Any) -> tuple[Any, ...]:
    """The list reads its date-times as stored UTC text on every backend (see utc_text_of)."""
    return tuple(utc_text_of(c) if isinstance(c.type, UTCDateTime) else c for c in columns)


_OPAQUE: Any = literal_column("'opaque'")
_SPACE: Any = literal_column("' '")
_NEWLINE: Any = literal_column("'\n'")  # a line break, in the SQL text
# What a listed row has beside a plain event's fields, in one column (``shapes.events_public``
# unpacks it): NULL for an opaque timed event of its own (nearly every row); else
# "<transparency> <1 if all day, else 0>", and for a changed occurrence of a series
# "<transparency> <all day> <original start> <series id>" (the id last: the only part that is
# not a fixed word or a stored UTC text). One value fetched a row instead of four: the driver's
# per-column work (a call to SQLite's API under its mutex, the GIL given up and taken back, a
# Python object) was most of what they cost (docs/performance.md, "The list"). A
# ``CASE`` costs SQLite next to nothing; building text (``||``, ``replace``) costs it about
# what a value fetched does, so the fields every row has stay columns of their own.
# An event with attendees has its people (``calendar.attendees``: JSON, which holds no raw line
# break) after a line break at the end.
LIST_EXTRA = case(
    (
        and_(
            events_t.c.recurring_event_id.is_(None),
            events_t.c.transparency == _OPAQUE,
            ~events_t.c.all_day,
            events_t.c.attendees.is_(None),
        ),
        null(),
    ),
    else_=events_t.c.transparency
    + _SPACE
    + case((events_t.c.all_day, literal_column("'1'")), else_=literal_column("'0'"))
    + func.coalesce(
        _SPACE
        + utc_text_of(events_t.c.original_starts_at)
        + _SPACE
        + events_t.c.recurring_event_id,
        literal_column("''"),
    )
    + func.coalesce(_NEWLINE + events_t.c.attendees, literal_column("''")),
).label("extra")

# An event's last change, NULL while it is its creation (most events are never changed): a
# NULL costs the driver less than a text, and the list writes the creation's text again.
LIST_UPDATED = case(
    (events_t.c.updated_at == events_t.c.created_at, null()),
    else_=utc_text_of(events_t.c.updated_at),
).label("updated_at")

# The window query's columns: a plain event's (``shapes.events_public`` unpacks them; not
# ``all_day``, which is in ``LIST_EXTRA``), and the rest packed (``LIST_EXTRA``).
_LIST_COLUMNS = (
    *_as_text(EVENT_COLUMNS[:5]),
    *_as_text(EVENT_COLUMNS[6:9]),
    LIST_UPDATED,
    LIST_EXTRA,
)
_CONFIRMED: Any = literal_column("'confirmed'")  # literal: no parameter to merge each time


@functools.cache
def list_statement(among: int, low: bool, high: bool, after: bool) -> Statement:
    """The window query, one compiled statement per shape of request: single events and the
    changed occurrences of series (exceptions), which are rows with times of their own;
    series rows and cancelled occurrences are not in it. ``among``: which calendars
    (``in_calendars_params``)."""
    return Statement(_window_rows(select(*_LIST_COLUMNS), among, low, high, after))


def _window_rows(query: Any, among: int, low: bool, high: bool, after: bool) -> Any:
    """``query`` (of the list's columns) made the window query: its calendars, its window,
    from the page token's place (the start and id of the last row of the page before), in
    order, a page's rows (the parameter ``limit``)."""
    query = _in_window(_in_calendars(query, among), low, high)
    if after:
        after_start: BindParameter[Any] = bindparam("after_start")
        query = query.where(
            events_t.c.starts_at >= after_start,
            or_(
                events_t.c.starts_at > after_start,
                and_(events_t.c.starts_at == after_start, events_t.c.id > bindparam("after_id")),
            ),
        )
    return query.order_by(events_t.c.starts_at, events_t.c.id).limit(bindparam("limit"))


@functools.cache
def search_statement(
    dialect: str, parts: tuple[int, ...], among: int, low: bool, high: bool, after: bool
) -> Statement:
    """A search's one statement (``events.search``): the window query's rows that match the
    search, then the series that match it and may occur in the window, in one answer: each
    row's first column says which (``SEARCH_WINDOW`` or ``SEARCH_SERIES``); a series row is
    ``SERIES_KEYS``, then NULLs. The matches are found once (``search.search_matches``) and
    read by both parts. ``dialect``: the statement is written for it (the matches are each
    database's own); ``parts``: SQLite's parts of the index (``search.search_params``)."""
    matches = search_matches(dialect, parts)
    matched = matched_condition(dialect, matches)
    kind: Any = literal_column(str(SEARCH_WINDOW))
    rows = _window_rows(select(kind.label("kind"), *_LIST_COLUMNS), among, low, high, after)
    padding = [null()] * (len(_LIST_COLUMNS) - len(SERIES_KEYS))
    series = _series_in_window(
        select(literal_column(str(SEARCH_SERIES)), *SERIES_KEYS, *padding), among, low, high, after
    )
    found = union_all(select(rows.where(matched).subquery("found")), series.where(matched))
    return _SearchStatement(found)


SEARCH_WINDOW = 0
"""``search_statement``'s first column for a row of the window query."""
SEARCH_SERIES = 1
"""``search_statement``'s first column for a series that may occur in the window."""


class _SearchStatement(Statement):
    """On SQLite, ``NOT INDEXED`` on both parts: the rows the search matches, found by rowid,
    are few; left to itself the planner may walk the calendar's window through
    ``ix_events_calendar_start`` (or its series through ``ix_events_series``) and test each
    row against them instead (the rowid lookup stays allowed)."""

    def edited(self, sql: str, dialect: Any) -> str:
        if dialect.name != "sqlite":
            return sql
        assert sql.count("FROM events \n") == 2, sql
        return sql.replace("FROM events \n", "FROM events NOT INDEXED \n")


def _in_window(query: Any, low: bool, high: bool) -> Any:
    """The window query's rows: single events and changed occurrences (not series, not
    cancelled occurrences) overlapping ``[low, high)`` (either side optional)."""
    query = query.where(events_t.c.recurrence.is_(None), events_t.c.status == _CONFIRMED)
    if low:
        # Bounded below by the longest event so the index on (calendar_id, starts_at) does the
        # work on both sides instead of scanning every older event.
        query = query.where(
            events_t.c.starts_at >= bindparam("low_floor"),
            or_(events_t.c.ends_at > bindparam("low"), events_t.c.starts_at >= bindparam("low")),
        )
    if high:
        query = query.where(events_t.c.starts_at < bindparam("high"))
    return query


_BUSY_COLUMNS = (
    events_t.c.calendar_id,
    *_as_text((events_t.c.starts_at, events_t.c.ends_at)),
    events_t.c.id,
    events_t.c.title,
)


@functools.cache
def busy_statement(calendars: int, timed: bool = False, flagged: bool = False) -> Statement:
    """The window query (``_in_window``, both bounds) of ``calendars`` calendars
    (``calendar_0``...), opaque rows only: what is busy, for ``availability``. In no order.
    ``timed``: not all-day events either (meetings, for the owner's rules); ``flagged``: each
    row's ``all_day`` after its columns (what the rules leave out of the same read)."""
    ids: list[BindParameter[Any]] = [bindparam(f"calendar_{i}") for i in range(calendars)]
    columns = (*_BUSY_COLUMNS, events_t.c.all_day) if flagged else _BUSY_COLUMNS
    query = select(*columns).where(
        events_t.c.calendar_id.in_(ids), events_t.c.transparency == "opaque"
    )
    if timed:
        query = query.where(~events_t.c.all_day)
    return Statement(_in_window(query, low=True, high=True))


@functools.cache
def owner_meetings_statement() -> Statement:
    """The owner's rules' read for a write (``rule_check``), one statement: every calendar of
    the owner ``user_id`` but connected calendars' mirrors (id, zone, name, NULL, longest
    event, series version, whether default, and ``connected``: whether the owner has a
    connected calendar that counts), then their meetings in the window (``busy_statement``'s
    timed rows: calendar id, start and end as stored UTC text, event id, NULLs; the event id
    tells them apart). ``low_floor`` is ``low`` less a length that the caller checks against
    the calendars' longest events read with them."""
    owned = (calendars_t.c.user_id == bindparam("user_id"), calendars_t.c.connection_id.is_(None))
    calendars = select(
        calendars_t.c.id,
        calendars_t.c.time_zone,
        calendars_t.c.name,
        null(),
        calendars_t.c.max_event_seconds,
        calendars_t.c.series_version,
        calendars_t.c.is_default,
        exists()
        .where(
            connections_t.c.user_id == bindparam("user_id"),
            connections_t.c.counts_for_availability.is_(True),
        )
        .label("connected"),
    ).where(*owned)
    meetings = _in_window(
        select(*_BUSY_COLUMNS[:4], null(), null(), null(), null())
        .select_from(calendars_t.join(events_t, events_t.c.calendar_id == calendars_t.c.id))
        .where(
            *owned,
            events_t.c.transparency == "opaque",
            ~events_t.c.all_day,
        ),
        low=True,
        high=True,
    )
    return Statement(union_all(calendars, meetings))


def in_calendars_params(
    params: dict[str, Any], calendars: Sequence[CalendarRow], *, user_id: str | None
) -> int:
    """Put the list's calendars into ``params``; returns the statements' ``among`` for them:
    1 for one calendar (``calendar_id``); 0 for every calendar of the owner ``user_id`` (an
    all-calendars key's list); else the number of ``calendar_<i>`` parameters, a power of two
    (unused ones are NULL, which matches nothing), so that a few statements serve every list
    narrowed to some calendars (``calendarIds``)."""
    if len(calendars) == 1:
        params["calendar_id"] = calendars[0].id
        return 1
    if user_id is not None:
        params["user_id"] = user_id
        return 0
    among = 1 << (len(calendars) - 1).bit_length()
    for i in range(among):
        params[f"calendar_{i}"] = calendars[i].id if i < len(calendars) else None
    return among


def _in_calendars(query: Any, among: int) -> Any:
    if among == 1:
        return query.where(events_t.c.calendar_id == bindparam("calendar_id"))
    if among > 1:  # some calendars of the owner, by id
        chosen: list[BindParameter[Any]] = [bindparam(f"calendar_{i}") for i in range(among)]
        return query.where(events_t.c.calendar_id.in_(chosen))
    # an all-calendars key reaches every calendar of its owner
    owned = select(calendars_t.c.id).where(calendars_t.c.user_id == bindparam("user_id"))
    return query.where(events_t.c.calendar_id.in_(owned.scalar_subquery()))


_exception = events_t.alias("exception")
# What the list needs of each series it may expand, all in ix_events_series (no table row is
# read): its id, calendar, start, version (updated_at) and end, and the original starts of
# its exceptions (changed or cancelled occurrences) joined, through ix_events_recurring.
SERIES_KEYS = (
    events_t.c.id,
    events_t.c.calendar_id,
    *_as_text((events_t.c.starts_at, events_t.c.updated_at, events_t.c.recurrence_ends_at)),
    select(joined_texts(utc_text_of(_exception.c.original_starts_at)))
    .where(_exception.c.recurring_event_id == events_t.c.id)
    .scalar_subquery()
    .label("exceptions"),
)
# A series' columns (date-times as stored UTC text), read when a version of it is new to the
# process (``series_rows``).
SERIES_COLUMNS = _as_text(
    (*EVENT_COLUMNS[:13], events_t.c.transparency, events_t.c.time_zone, events_t.c.attendees)
)


@functools.cache
def series_statement(among: int, low: bool, high: bool, after: bool) -> Statement:
    """The series that may occur in a window (``SERIES_KEYS``, from ``ix_events_series``,
    which holds series rows only): they start before its end, and their last occurrence (if
    they have one) ends after its start, or after the page token's start."""
    query = _series_in_window(select(*SERIES_KEYS), among, low, high, after)
    return _SeriesStatement(query)  # in no order: the list orders occurrences itself


def _series_in_window(query: Any, among: int, low: bool, high: bool, after: bool) -> Any:
    query = _in_calendars(query, among).where(SERIES_ROWS)
    ends = events_t.c.recurrence_ends_at
    if high:
        query = query.where(events_t.c.starts_at < bindparam("high"))
    # >=: a zero-length occurrence at the window's start (or the token's) is in the window.
    if low:
        query = query.where(or_(ends.is_(None), ends >= bindparam("low")))
    if after:
        query = query.where(or_(ends.is_(None), ends >= bindparam("after_start")))
    return query


class _SeriesStatement(Statement):
    """On SQLite, ``INDEXED BY ix_events_series``: without statistics its planner would rather
    walk every event of the calendar through ``ix_events_calendar_start`` and test each row,
    where the partial index holds the series alone (SQLAlchemy renders no table hints for
    SQLite, hence the edit of the compiled text)."""

    def edited(self, sql: str, dialect: Any) -> str:
        if dialect.name != "sqlite":
            return sql
        # The main FROM (the exceptions' subquery reads "FROM events AS exception").
        assert sql.count("FROM events \n") == 1, sql
        return sql.replace("FROM events \n", "FROM events INDEXED BY ix_events_series \n")


SERIES_KEPT_MOST = 500
"""Series of one calendar the process keeps in memory (``window_series``); a calendar with more
is asked for its series in the window each time, through ``ix_events_series``."""

_TOO_MANY: Any = object()  # kept for a calendar version with more than SERIES_KEPT_MOST series
_KEPT_SERIES = Lru(4096)

# A calendar's series (``SERIES_KEYS``), all of them, with the calendar's ``series_version``
# read in the same statement: what is kept for a version is exactly what that version holds.
# A calendar without series gives one row of NULLs but the version.
_CALENDAR_SERIES = Statement(
    select(*SERIES_KEYS, calendars_t.c.series_version)
    .select_from(
        calendars_t.outerjoin(
            events_t, and_(events_t.c.calendar_id == calendars_t.c.id, SERIES_ROWS)
        )
    )
    .where(calendars_t.c.id == bindparam("calendar_id"))
    .limit(bindparam("most"))
)


@dataclass(frozen=True, slots=True)
class _KeptSeries:
    """A calendar's series as kept for one version: in order of their starts (stored text),
    and whether they all repeat without end (then a window takes a prefix of them)."""

    keys: tuple[Any, ...]
    starts: tuple[str, ...]
    endless: bool
    prefixes: dict[int, tuple[Any, ...]] = field(default_factory=dict)

    def started(self, before: str | None) -> tuple[Any, ...]:
        """The series that start before ``before`` (stored text; ``None``: all), as the same
        tuple each time (later steps keep what they derive from it by its identity)."""
        count = len(self.keys) if before is None else bisect_left(self.starts, before)
        found = self.prefixes.get(count)
        if found is None:
            found = self.prefixes.setdefault(count, self.keys[:count])
        return found


def window_series(
    conn: Connection,
    calendars: Sequence[CalendarRow],
    *,
    shape: tuple[int, bool, bool, bool],
    params: dict[str, Any],
    texts: tuple[str | None, str | None, str | None],
) -> list[Any]:
    """The series that may occur in the list's window (``series_statement``'s rows): from
    memory for calendars whose ``series_version`` the process has seen (none for one at 0,
    which never had a series), else from the database. ``texts``: the window's low and high
    bounds and the page token's start, as stored UTC text (or ``None``); ``params``: the
    window query's."""
    low, high, after = texts
    found: list[Any] = []
    only = None  # one calendar's kept series, as they are: ``started``'s tuple
    for calendar in calendars:
        version = calendar.series_version
        if version == 0:
            continue
        kept = None if version is None else _KEPT_SERIES.get((calendar.id, version))
        if kept is None and version is not None:
            kept = _read_calendar_series(conn, calendar.id)
        if kept is None or kept is _TOO_MANY:  # not read with its calendar, or too many
            return _series_from_database(conn, shape, params)
        # Those that start before the window's end; of those, the ones that end after its
        # start (and after the page token's), or never.
        started = kept.started(high)
        if kept.endless or (low is None and after is None):
            if only is None and not found:
                only = started
            found.extend(started)
            continue
        only = ()  # filtered: not as kept
        found.extend(
            key
            for key in started
            if key[4] is None
            or ((low is None or key[4] >= low) and (after is None or key[4] >= after))
        )
    if only and len(only) == len(found):
        return only
    return found


def _series_from_database(
    conn: Connection,
    shape: tuple[int, bool, bool, bool],
    params: dict[str, Any],
) -> list[Any]:
    """``series_statement``'s rows, with the window query's ``params`` it takes."""
    wanted: tuple[str, ...] = ("calendar_id", "user_id", "low", "high", "after_start")
    wanted += tuple(f"calendar_{i}" for i in range(shape[0] if shape[0] > 1 else 0))
    statement = series_statement(*shape)
    return statement.all(conn, **{k: params[k] for k in wanted if k in params})


def _read_calendar_series(conn: Connection, calendar_id: str) -> _KeptSeries | None:
    """A calendar's series, kept under the version read with them (``None``: no calendar)."""
    rows = _CALENDAR_SERIES.all(conn, calendar_id=calendar_id, most=SERIES_KEPT_MOST + 1)
    if not rows:
        return None
    version = rows[0][-1]
    if len(rows) > SERIES_KEPT_MOST:
        kept = _TOO_MANY
    else:
        keys = sorted((row[:-1] for row in rows if row[0] is not None), key=itemgetter(2))
        kept = _KeptSeries(tuple(keys), tuple(k[2] for k in keys), all(k[4] is None for k in keys))
    _KEPT_SERIES.put((calendar_id, version), kept)
    return kept


_CHUNK = 256


def series_rows(conn: Connection, series_ids: Sequence[str]) -> list[Any]:
    """The series' rows (``SERIES_COLUMNS``), by id: a few statement shapes only (the ids
    padded to a power of two, at most ``_CHUNK`` a statement)."""
    found: list[Any] = []
    for first in range(0, len(series_ids), _CHUNK):
        chunk = series_ids[first : first + _CHUNK]
        size = 1 << max(len(chunk) - 1, 0).bit_length()
        params = {f"id_{i}": chunk[i] if i < len(chunk) else None for i in range(size)}
        found.extend(_series_by_id(size).all(conn, **params))
    return found


@functools.lru_cache(maxsize=16)
def _series_by_id(size: int) -> Statement:
    ids: list[BindParameter[Any]] = [bindparam(f"id_{i}") for i in range(size)]
    return Statement(select(*SERIES_COLUMNS).where(events_t.c.id.in_(ids)))


_FIRST_INSTANT = datetime.min.replace(tzinfo=UTC)


def window_floor(low: datetime, longest_seconds: int) -> datetime:
    """The least ``starts_at`` an event overlapping ``[low, ...)`` can have: ``low`` less the
    calendar's longest event, never below the first instant a ``datetime`` holds (a longest
    length stored by an older version can be any size, and it never shrinks)."""
    try:
        return low - _lengths(longest_seconds)
    except OverflowError:  # before the first instant, or longer than a timedelta holds
        return _FIRST_INSTANT


@functools.lru_cache(maxsize=256)
def _lengths(seconds: int) -> timedelta:
    """``seconds`` as a ``timedelta``, kept: a calendar's longest event rarely changes."""
    return timedelta(seconds=seconds)


# Run straight from the driver (see db.Statement): every column, date-times through to_db.
INSERT = Statement(insert(events_t).values({c.name: bindparam(c.name) for c in events_t.c}))


def bump_longest(conn: Connection, calendar: Any, start: datetime, end: datetime) -> None:
    """Keep the calendar's longest event length (the window query's lower bound) up to date."""
    seconds = int((end - start).total_seconds()) + 1
    if seconds > calendar.max_event_seconds:
        conn.execute(
            update(calendars_t)
            .where(calendars_t.c.id == calendar.id, calendars_t.c.max_event_seconds < seconds)
            .values(max_event_seconds=seconds)
        )


_EVENT_CALENDAR = (  # the event's calendar, read with it (CalendarRow's fields, but the id)
    calendars_t.c.name.label("calendar_name"),
    calendars_t.c.time_zone.label("calendar_time_zone"),
    calendars_t.c.is_default.label("calendar_is_default"),
    calendars_t.c.max_event_seconds.label("calendar_max_event_seconds"),
    calendars_t.c.connection_id.label("calendar_connection_id"),
    calendars_t.c.connection_kind.label("calendar_connection_kind"),
)


def load_in_scope(
    conn: Connection, *, principal: Principal, event_id: str
) -> tuple[Any, CalendarRow]:
    """The event (``EVENT_COLUMNS``) and its calendar, if the key may reach it; otherwise 404
    (never revealing whether an event exists outside the key's reach)."""
    row = conn.execute(
        select(*EVENT_COLUMNS, *_EVENT_CALENDAR)
        .join(calendars_t, calendars_t.c.id == events_t.c.calendar_id)
        .where(events_t.c.id == event_id, within_reach(principal))
    ).first()
    if row is None:
        raise NotFound(f"No event {event_id!r} in the calendars this key can reach.")
    calendar = CalendarRow(
        row.calendar_id,
        row.calendar_name,
        row.calendar_time_zone,
        bool(row.calendar_is_default),
        row.calendar_max_event_seconds,
        connection_id=row.calendar_connection_id,
        connection_kind=row.calendar_connection_kind,
    )
    return row, calendar


def owner_email(conn: Connection, user_id: str) -> str:
    """The owner's email: an event's organizer (``people.organizer_of``)."""
    return str(conn.execute(select(users_t.c.email).where(users_t.c.id == user_id)).scalar_one())
