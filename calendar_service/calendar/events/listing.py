"""Listing events: the key's calendars and the events overlapping a window, a page at a time.

The REST list's hot path: one query for the calendars (none for a one-calendar key, whose
calendar was read with it), one compiled window query, and the rows formatted in one loop
(``shapes.events_public``).

Series are listed as their occurrences (``events.occurrences``), or, with ``single_events``
false (``False`` or ``"false"``), as themselves (with ``recurrence``; their changed
occurrences are listed too, as Google Calendar does). A page may be shorter than ``limit``
when expanding series reached the request's work budget; it then has a ``nextPageToken``.

The last page carries ``nextSyncToken``; given it back as ``sync_token`` (or given a sync's
page token), the list is a sync instead: the changes since (``sync.sync_events``; no window
then). The position the token holds is taken at the first page, before its rows are read, and
carried by the page tokens.

``calendar_ids`` (``calendarIds``) narrows the list, and its sync, to some of the key's
calendars (``calendars.chosen_calendars``: ids or names, comma-separated or not); the answer's
``calendars`` are those. Its page and sync tokens are bound to them: they are refused with
other calendars, or none. Bounds without an offset are still read in the key's calendar's zone
(or the default calendar's), whichever calendars are named.

``q`` makes the list a search (``events.search``): only the events whose words match, a series
by its own text (its occurrences in the window, but those changed into events of their own,
which match by theirs). Without ``time_min`` it starts at ``now`` (or the current time; not
when ``time_max`` is before then). Its page tokens are bound to its words too; its last page
has no ``nextSyncToken`` (a sync is of every change).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any

from sqlalchemy import Connection

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import (
    CalendarRow,
    accessible_calendars,
    calendar_public,
    chosen_calendars,
)
from calendar_service.calendar.event_input import parse_list_params, parse_single_events
from calendar_service.calendar.events.occurrences import Page, Window, page_with_series
from calendar_service.calendar.events.queries import (
    SEARCH_SERIES,
    SEARCH_WINDOW,
    SERIES_KEYS,
    in_calendars_params,
    list_statement,
    search_statement,
    series_rows,
    window_floor,
    window_series,
)
from calendar_service.calendar.events.search import (
    Search,
    parse_search,
    search_params,
    write_pending_words,
)
from calendar_service.calendar.events.shapes import events_public
from calendar_service.calendar.events.sync import (
    DEFAULT_RETENTION_DAYS,
    SYNC_PAGE_PREFIX,
    Position,
    current_position,
    encode_sync_token,
    sync_events,
)
from calendar_service.calendar.page_tokens import (
    bad_page_token,
    decode_token,
    encode_token,
    token_query,
)
from calendar_service.platform.deferred import Later, finish
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.models import to_db
from calendar_service.platform.timeutil import format_in, utc_text, utcnow, zone


def list_events_later(
    conn: Connection,
    *,
    principal: Principal,
    time_min: str | None = None,
    time_max: str | None = None,
    limit: Any = None,
    page_token: str | None = None,
    token_key: bytes,
    now: datetime | None = None,
    single_events: bool | str | None = True,
    sync_token: str | None = None,
    sync_retention_days: int = DEFAULT_RETENTION_DAYS,
    calendar_ids: str | Sequence[str] | None = None,
    q: str | None = None,
    later: bool = True,
) -> dict[str, Any] | Later:
    """``EventList``: the key's calendars and the events overlapping ``[timeMin, timeMax)``;
    for the fronts (``operations.LIST``), a page that needs series expanded is a ``Later``
    (``calendar_service.platform.deferred``), made once the transaction is over and off the
    event loop (one read from memory is made at once). ``later=False`` makes it here and now
    (``list_events``).

    An event overlaps when ``endsAt > timeMin`` (or it starts at/after timeMin, so zero-length
    events at timeMin count) and ``startsAt < timeMax``. Either bound may be omitted (``None``
    or empty). Date-times without an offset are read in the time zone of the key's calendar
    (or the default one). ``token_key`` signs and checks page tokens (the fronts get it from
    ``service_secrets.page_token_key``). Given ``now``, the list starts with it, in the zone
    the bounds are read in (MCP's ``now``: the reference for "today" and "tomorrow").

    Series, sync tokens, ``calendar_ids`` and ``q``: the module's docstring.
    """
    search = None if q is None else parse_search(q)
    if sync_token is not None or (page_token and page_token[0] == SYNC_PAGE_PREFIX):
        return _sync_instead(
            conn,
            principal=principal,
            window=(time_min, time_max),
            searched=search is not None,
            sync_token=sync_token,
            page_token=page_token,
            limit=limit,
            token_key=token_key,
            retention_days=sync_retention_days,
            now=now,
            calendar_ids=calendar_ids,
        )
    calendars, chosen, tz = _reached(conn, principal, calendar_ids)
    low, high, size = parse_list_params(time_min=time_min, time_max=time_max, limit=limit, tz=tz)
    single_events = parse_single_events(single_events)
    # What the page tokens are bound to, made only when one is read or written.
    query = functools.partial(
        token_query, principal, low, high, single_events=single_events, chosen=chosen
    )
    if search is not None:
        query = functools.partial(query, search=search.token_part())
    position, after = _started(conn, token_key, query, page_token)
    result: dict[str, Any] = {} if now is None else {"now": format_in(now, tz)}
    result["calendars"] = [calendar_public(c) for c in calendars]
    answer = functools.partial(_answer, result, token_key, query, principal, position, chosen)
    if search is not None:
        answer = functools.partial(answer, sync=False)
        if not search.words:
            return answer(([], None))
        if low is None:
            low = _search_start(now, high, after)
    if not calendars:
        return answer(([], None))
    page = _window_page(
        conn,
        calendars,
        user_id=None if chosen else principal.user_id,
        low=low,
        high=high,
        after=after,
        size=size,
        single_events=single_events,
        later=later,
        search=search,
    )
    return page.then(answer) if isinstance(page, Later) else answer(page)


def _search_start(
    now: datetime | None, high: datetime | None, after: tuple[datetime, str] | None
) -> datetime | None:
    """Where a search without ``timeMin`` starts: now (its first page's), unless ``timeMax``
    is not after it (then it has no start); on a later page, at the page token's start (the
    events before it were on the pages before)."""
    if after is not None:
        return after[0]
    start = utcnow() if now is None else now
    return start if high is None or high > start else None


def _sync_instead(
    conn: Connection,
    *,
    principal: Principal,
    window: tuple[str | None, str | None],
    searched: bool,
    **sync: Any,
) -> dict[str, Any]:
    """A list given a sync token (or a sync's page token) is a sync (``sync.sync_events``),
    which has no window and no words."""
    if searched:
        raise ValidationFailed(
            [FieldError("q", "cannot be combined with syncToken: a sync has every change")]
        )
    time_min, time_max = window
    if time_min or time_max:
        field = "timeMin" if time_min else "timeMax"
        raise ValidationFailed(
            [FieldError(field, "cannot be combined with syncToken: a sync has no window")]
        )
    return sync_events(conn, principal=principal, **sync)


def _reached(
    conn: Connection, principal: Principal, calendar_ids: str | Sequence[str] | None
) -> tuple[list[CalendarRow], list[str] | None, tzinfo]:
    """The list's calendars (those of the key, narrowed to ``calendar_ids`` if given), their
    ids when narrowed (what the tokens are bound to), and the zone bounds without an offset
    are read in: the key's calendar's, or its owner's default calendar's."""
    calendars = accessible_calendars(conn, principal=principal)
    if len(calendars) == 1:
        tz = zone(calendars[0].time_zone)
    else:
        default = next((c for c in calendars if c.is_default), calendars[0] if calendars else None)
        tz = zone(default.time_zone) if default is not None else UTC
    if calendar_ids is None:
        return calendars, None, tz
    calendars = chosen_calendars(calendars, principal=principal, wanted=calendar_ids)
    return calendars, [c.id for c in calendars], tz


def _started(
    conn: Connection, token_key: bytes, query: Callable[[], bytes], page_token: str | None
) -> tuple[Position, tuple[datetime, str] | None]:
    """The sync position the list's pages carry, and where this page starts (the start and
    id of the last event of the page before, ``None`` on the first): taken now on the first
    page, before its rows are read; read from the page token on the others."""
    if not page_token:
        return current_position(conn), None
    after_start, after_id, carried = decode_token(token_key, query(), page_token)
    position = Position.from_compact(carried)
    if position is None:
        raise bad_page_token()
    return position, (after_start, after_id)


def _answer(
    result: dict[str, Any],
    token_key: bytes,
    query: Callable[[], bytes],
    principal: Principal,
    position: Position,
    chosen: list[str] | None,
    page: Page,
    *,
    sync: bool = True,
) -> dict[str, Any]:
    """``result`` with the page's events, and the token of the next page, or the sync token
    after it (``sync``: not after a search's)."""
    result["events"], following = page
    if following is not None:
        carry = position.compact()
        result["nextPageToken"] = encode_token(token_key, query(), *following, carry)
    elif sync:
        result["nextSyncToken"] = encode_sync_token(token_key, principal, position, chosen)
    return result


def _window_page(
    conn: Connection,
    calendars: list[CalendarRow],
    *,
    user_id: str | None,
    low: datetime | None,
    high: datetime | None,
    after: tuple[datetime, str] | None,
    size: int,
    single_events: bool,
    later: bool,
    search: Search | None = None,
) -> Page | Later:
    """The page of ``calendars``' events overlapping ``[low, high)`` from the page token's
    place (``after``: the start and id of the last event of the page before), and where the
    next one starts: the window query's rows, merged with the occurrences of the series that
    may occur in it (``occurrences.page_with_series``) if there are any. ``user_id``: the
    owner whose every calendar is listed (an all-calendars key's list), or ``None``.
    ``search``: only the events and series that match it."""
    dialect = conn.dialect.name
    params: dict[str, Any] = {"limit": size + 1}
    among = in_calendars_params(params, calendars, user_id=user_id)
    low_text = high_text = None
    after_key: tuple[str, str] | None = None  # after's start as stored text, and its id
    if low is not None:
        longest = max(c.max_event_seconds for c in calendars)
        params["low"] = to_db(low, dialect)
        params["low_floor"] = to_db(window_floor(low, longest), dialect)
        low_text = utc_text(low)
    if high is not None:
        params["high"] = to_db(high, dialect)
        high_text = utc_text(high)
    if after is not None:
        params["after_start"] = to_db(after[0], dialect)
        params["after_id"] = after[1]
        after_key = (utc_text(after[0]), after[1])
    shape = (among, low is not None, high is not None, after is not None)
    texts = (low_text, high_text, None if after_key is None else after_key[0])
    if search is None:
        rows = list_statement(*shape).all(conn, **params)
        series = window_series(conn, calendars, shape=shape, params=params, texts=texts)
    else:
        parts = search_params(params, search, dialect, [c.id for c in calendars])
        write_pending_words(conn)
        found = search_statement(dialect, parts, *shape).all(conn, **params)
        rows = [row[1:] for row in found if row[0] == SEARCH_WINDOW]
        series = [row[1 : 1 + len(SERIES_KEYS)] for row in found if row[0] == SEARCH_SERIES]
    if not series:
        # The last row's start and id: starts_at is the stored UTC text on every backend.
        following = (rows[size - 1][3], rows[size - 1][0]) if len(rows) > size else None
        return events_public(rows[:size], calendars), following
    return page_with_series(
        rows,
        series,
        calendars,
        load=functools.partial(series_rows, conn),
        window=Window(low, high, (low_text, high_text), after_key, size),
        single_events=single_events,
        later=later,
    )


def list_events(conn: Connection, **options: Any) -> dict[str, Any]:
    """``EventList`` made here and now: ``list_events_later``'s keywords, its answer finished
    (the settings pages, the CLI, the benchmarks)."""
    return finish(list_events_later(conn, later=False, **options))
