"""Listing events: the key's calendars and the events overlapping a window, a page at a time.

The REST list's hot path: one query for the calendars (none for a one-calendar key, whose
calendar was read with it), one compiled window query, and the rows formatted in one loop
(``shapes.events_public``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from calendar_service.calendars import accessible_calendars, calendar_public, chosen_calendars
from calendar_service.errors import FieldError, ValidationFailed
from calendar_service.events.occurrences import Page, page_with_series
from calendar_service.events.parsing import parse_list_params, parse_single_events
from calendar_service.events.queries import (
    in_calendars_params,
    list_statement,
    series_rows,
    window_floor,
    window_series,
)
from calendar_service.events.shapes import events_public
from calendar_service.events.sync import (
    DEFAULT_RETENTION_DAYS,
    SYNC_PAGE_PREFIX,
    Position,
    current_position,
    encode_sync_token,
    sync_events,
)
from calendar_service.events.tokens import (
    bad_page_token,
    decode_token,
    encode_token,
    token_query,
)
from calendar_service.keys import Principal
from calendar_service.later import Later, finish
from calendar_service.models import to_db
from calendar_service.timeutil import format_in, utc_text, zone


def list_events(
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
) -> dict[str, Any]:
    """``EventList``: the key's calendars and the events overlapping ``[timeMin, timeMax)``
    (``_list_events`` says how), made here and now."""
    return finish(
        _list_events(
            conn,
            principal=principal,
            time_min=time_min,
            time_max=time_max,
            limit=limit,
            page_token=page_token,
            token_key=token_key,
            now=now,
            single_events=single_events,
            sync_token=sync_token,
            sync_retention_days=sync_retention_days,
            calendar_ids=calendar_ids,
            later=False,
        )
    )


def _list_events(
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
    later: bool,
) -> dict[str, Any] | Later:
    """``EventList``: the key's calendars and the events overlapping ``[timeMin, timeMax)``.

    An event overlaps when ``endsAt > timeMin`` (or it starts at/after timeMin, so zero-length
    events at timeMin count) and ``startsAt < timeMax``. Either bound may be omitted (``None``
    or empty). Date-times without an offset are read in the time zone of the key's calendar
    (or the default one). ``token_key`` signs and checks page tokens (the fronts get it from
    ``service_secrets.page_token_key``). Given ``now``, the list starts with it, in the zone
    the bounds are read in (MCP's ``now``: the reference for "today" and "tomorrow").

    Series are listed as their occurrences (``events.occurrences``), or, with
    ``single_events`` false (``False`` or ``"false"``), as themselves (with ``recurrence``;
    their changed occurrences are listed too, as Google Calendar does). A page may be shorter
    than ``limit`` when expanding series reached the request's work budget; it then has a
    ``nextPageToken``.

    The last page carries ``nextSyncToken``; given it back as ``sync_token`` (or given a
    sync's page token), the list is a sync instead: the changes since (``sync.sync_events``;
    no window then). The position the token holds is taken at the first page, before its rows
    are read, and carried by the page tokens.

    ``calendar_ids`` (``calendarIds``) narrows the list, and its sync, to some of the key's
    calendars (``calendars.chosen_calendars``: ids or names, comma-separated or not); the
    answer's ``calendars`` are those. Its page and sync tokens are bound to them: they are
    refused with other calendars, or none. Bounds without an offset are still read in the
    key's calendar's zone (or the default calendar's), whichever calendars are named.
    """
    if sync_token is not None or (page_token and page_token[0] == SYNC_PAGE_PREFIX):
        if time_min or time_max:
            field = "timeMin" if time_min else "timeMax"
            raise ValidationFailed(
                [FieldError(field, "cannot be combined with syncToken: a sync has no window")]
            )
        return sync_events(
            conn,
            principal=principal,
            sync_token=sync_token,
            page_token=page_token,
            limit=limit,
            token_key=token_key,
            retention_days=sync_retention_days,
            now=now,
            calendar_ids=calendar_ids,
        )
    calendars = accessible_calendars(conn, principal=principal)
    default = next((c for c in calendars if c.is_default), calendars[0] if calendars else None)
    tz = zone(default.time_zone) if default is not None else UTC
    chosen = None
    if calendar_ids is not None:
        calendars = chosen_calendars(calendars, principal=principal, wanted=calendar_ids)
        chosen = [c.id for c in calendars]
    low, high, size = parse_list_params(time_min=time_min, time_max=time_max, limit=limit, tz=tz)
    single_events = parse_single_events(single_events)
    result: dict[str, Any] = {} if now is None else {"now": format_in(now, tz)}
    result["calendars"] = [calendar_public(c) for c in calendars]
    result["events"] = []
    # What the page tokens are bound to, made only when one is read or written.
    query = functools.partial(
        token_query, principal, low, high, single_events=single_events, chosen=chosen
    )
    after: tuple[str, str] | None = None
    if page_token:
        after_start, after_id, carried = decode_token(token_key, query(), page_token)
        position = Position.from_compact(carried)
        if position is None:
            raise bad_page_token()
    else:
        position = current_position(conn)

    def answer(page: Page) -> dict[str, Any]:
        """The page's events, and the token of the next page, or the sync token after it."""
        result["events"], following = page
        if following is not None:
            carry = position.compact()
            result["nextPageToken"] = encode_token(token_key, query(), *following, carry)
        else:
            result["nextSyncToken"] = encode_sync_token(token_key, principal, position, chosen)
        return result

    if not calendars:
        return answer(([], None))
    dialect = conn.dialect.name
    params: dict[str, Any] = {"limit": size + 1}
    among = in_calendars_params(params, calendars, user_id=None if chosen else principal.user_id)
    if low is not None:
        longest = max(c.max_event_seconds for c in calendars)
        params["low"] = to_db(low, dialect)
        params["low_floor"] = to_db(window_floor(low, longest), dialect)
    if high is not None:
        params["high"] = to_db(high, dialect)
    if page_token:
        params["after_id"] = after_id
        params["after_start"] = to_db(after_start, dialect)
        after = (utc_text(after_start), after_id)
    shape = (among, low is not None, high is not None, bool(page_token))
    rows = list_statement(*shape).all(conn, **params)
    texts = (
        None if low is None else utc_text(low),
        None if high is None else utc_text(high),
        None if after is None else after[0],
    )
    series = window_series(conn, calendars, shape=shape, params=params, texts=texts)
    if not series:
        # The last row's start and id: starts_at is the stored UTC text on every backend.
        following = (rows[size - 1][3], rows[size - 1][0]) if len(rows) > size else None
        return answer((events_public(rows[:size], calendars), following))
    page = page_with_series(
        rows,
        series,
        calendars,
        load=lambda ids: series_rows(conn, ids),
        low=low,
        high=high,
        texts=texts[:2],
        after=after,
        size=size,
        single_events=single_events,
        later=later,
    )
    return page.then(answer) if isinstance(page, Later) else answer(page)


def list_events_later(conn: Connection, **options: Any) -> dict[str, Any] | Later:
    """``list_events`` for the fronts (``operations.LIST``): a page that needs series
    expanded is a ``Later`` (``calendar_service.later``), made once the transaction is over
    and off the event loop; one read from memory is made at once."""
    return _list_events(conn, later=True, **options)
