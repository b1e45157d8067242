"""The public event object (``EventPublic``): one event, and the list's rows all at once.

``event_public`` formats any row with attributes: a fetched one, or what a write just stored
(a dict, through ``Row``), so that a created or changed event reads exactly as a later get or
list shows it. ``events_public`` is the list's hot loop: it formats the window query's driver
rows without an object or a call per row. Keep the two in step
(tests/core/calendar/events/test_shapes.py compares them).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from calendar_service.calendar.attendees import add_public
from calendar_service.platform.timeutil import STORED_WHOLE_SECOND, format_in, format_utc, zone


def event_public(row: Any, *, calendar_name: str, tz: tzinfo) -> dict[str, Any]:
    """The public event object (``EventPublic``), times in the calendar's zone: a series with
    its ``recurrence``, an exception (a changed occurrence) with ``recurringEventId`` and
    ``originalStartsAt``; a single event has none of the three."""
    event = event_fields(row, calendar_name=calendar_name, tz=tz)
    recurrence = getattr(row, "recurrence", None)
    if recurrence is not None:
        event["recurrence"] = orjson.loads(recurrence)
        event["timeZone"] = getattr(row, "time_zone", None) or zone_name(tz)
    series_id = getattr(row, "recurring_event_id", None)
    if series_id is not None:
        event["recurringEventId"] = series_id
        event["originalStartsAt"] = format_in(row.original_starts_at, tz)
    return event


def zone_name(tz: tzinfo) -> str:
    """The IANA name of a zone made by ``timeutil.zone``."""
    return str(getattr(tz, "key", "UTC"))


def occurrence_public(
    series: Any, *, calendar_name: str, tz: tzinfo, event_id: str, span: tuple[Any, Any]
) -> dict[str, Any]:
    """One computed occurrence of ``series`` (a row), starting and ending at ``span``
    (datetimes or stored UTC text): the series' fields, its own id and times."""
    event = event_fields(series, calendar_name=calendar_name, tz=tz)
    event["id"] = event_id
    event["startsAt"] = format_in(span[0], tz)
    event["endsAt"] = format_in(span[1], tz)
    event["recurringEventId"] = series.id
    event["originalStartsAt"] = event["startsAt"]
    return event


def event_fields(row: Any, *, calendar_name: str, tz: tzinfo) -> dict[str, Any]:
    """The fields every event object has, from ``row``."""
    fmt = format_utc if tz is UTC else functools.partial(format_in, tz=tz)
    event = {
        "id": row.id,
        "calendarId": row.calendar_id,
        "calendar": calendar_name,
        "title": row.title,
        "startsAt": fmt(row.starts_at),
        "endsAt": fmt(row.ends_at),
        "allDay": bool(row.all_day),
        "description": row.description,
        "location": row.location,
        "createdAt": format_utc(row.created_at),
        "updatedAt": format_utc(row.updated_at),
        "transparency": row.transparency,
    }
    people = getattr(row, "attendees", None)
    if people is not None:  # an event with attendees (``people``)
        add_public(event, people)
    return event


def events_public(rows: Sequence[Any], calendars: Sequence[Any]) -> list[dict[str, Any]]:
    """``event_public`` for the list's driver rows (``queries.list_statement``), without
    an object or a call per row: the list's hot loop. Stored times are RFC 3339 UTC text
    already (``timeutil.utc_text``): in UTC they only lose a zero fraction. The last change
    comes as ``None`` while it is the creation (``queries.LIST_UPDATED``); all day, the
    transparency, an exception's series and original start and the attendees come packed in
    the last column, ``None`` for an opaque timed event of its own without attendees
    (``queries.LIST_EXTRA``)."""
    zones: dict[str, tuple[str, tzinfo | None]] = {}
    for c in calendars:
        tz = zone(c.time_zone)
        zones[c.id] = (c.name, None if tz is UTC else tz)
    # A stored text is 27 characters; one that loses ``.000000Z`` (a whole second, as a start
    # and an end mostly are) gets its ``Z`` back: cheaper than ``str.replace``, which counts
    # its matches before it copies.
    whole, z, opaque = STORED_WHOLE_SECOND, "Z", "opaque"
    events = []
    for event_id, calendar_id, title, starts, ends, desc, place, created, updated, extra in rows:
        name, local = zones[calendar_id]
        if local is None:
            starts, ends = starts.removesuffix(whole), ends.removesuffix(whole)
            if len(starts) == 19:
                starts += z
            if len(ends) == 19:
                ends += z
        else:
            starts, ends = format_in(starts, local), format_in(ends, local)
        created = created.removesuffix(whole)
        if len(created) == 19:
            created += z
        event = {
            "id": event_id,
            "calendarId": calendar_id,
            "calendar": name,
            "title": title,
            "startsAt": starts,
            "endsAt": ends,
            "allDay": False,
            "description": desc,
            "location": place,
            "createdAt": created,
            "updatedAt": created if updated is None else updated.replace(whole, z),
            "transparency": opaque,
        }
        if extra is not None:  # transparent, all day, a changed occurrence (LIST_EXTRA)
            extra, _, people = extra.partition("\n")  # or with attendees
            transparency, all_day, *series = extra.split(" ", 3)
            event["transparency"] = transparency
            event["allDay"] = all_day == "1"
            if series:
                event["recurringEventId"] = series[1]
                event["originalStartsAt"] = format_in(series[0], local or UTC)
            if people:
                add_public(event, people)
        events.append(event)
    return events


class Prepared(dict[str, Any]):
    """A listed event object that comes with its JSON (``fragment``: the object as ``orjson``
    writes it), so that ``dumps`` copies the bytes instead of encoding the object again: the
    list's occurrences, kept with their expanded chunks and shared by every list that shows
    them. Shared, so read-only: a front that changes a listed event changes a copy
    (``dict(event)``); changing one in place raises ``TypeError``."""

    __slots__ = ("fragment",)

    fragment: orjson.Fragment

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(event)
        self.fragment = orjson.Fragment(orjson.dumps(event))

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a listed event is shared: change a copy of it (dict(event))")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only


_FRAGMENT = operator.attrgetter("fragment")  # called by orjson without a Python frame
_SUBCLASSES = orjson.OPT_PASSTHROUGH_SUBCLASS


def dumps(value: Any) -> bytes:
    """``orjson.dumps``, with each ``Prepared`` object written as its ``fragment``."""
    try:
        return orjson.dumps(value, default=_FRAGMENT, option=_SUBCLASSES)
    except orjson.JSONEncodeError:  # another subclass of dict, list, str or int
        return orjson.dumps(value, default=_written, option=_SUBCLASSES)


def _written(value: Any) -> Any:
    if type(value) is Prepared:
        return value.fragment
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class Row:
    """Attribute access over a dict, so a just-stored row formats like a fetched one.

    The dict is the instance's own ``__dict__`` (shared, not copied): a column is found by the
    ordinary attribute lookup. Through ``__getattr__`` every read first failed that lookup,
    which formats an AttributeError and drops it (some 2,000 instructions; 13 reads a
    create)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values

    def _asdict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    if TYPE_CHECKING:  # its columns, for the type checker

        def __getattr__(self, name: str) -> Any: ...
