"""The webhook event types, and what an endpoint asks for: its types, calendars and offsets.

Every endpoint (the owner's own and each key's subscription, ``webhook_endpoints``) keeps its
choices as JSON text: ``events`` (``NULL``: the change types, which every owner's endpoint
made before time triggers had), ``minutes_before`` (``calendar.event.starting``'s offsets;
``NULL``: ``[0]`` when ``starting`` is asked for) and ``calendar_ids`` (``NULL``: every
calendar the key reaches). ``check_events`` and ``check_minutes_before`` read what a caller
sent, with 400s naming the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from calendar_service.journal.webhook_outbox import BOOKING_CREATED, CREATED, DELETED, UPDATED
from calendar_service.platform.errors import FieldError

STARTING = "calendar.event.starting"
ENDED = "calendar.event.ended"
CHANGE_TYPES = (CREATED, UPDATED, DELETED)
TIME_TYPES = (STARTING, ENDED)
EVENT_TYPES = (*CHANGE_TYPES, *TIME_TYPES, BOOKING_CREATED)
"""Every type an endpoint may ask for (``webhook.test`` is sent on request only;
``calendar.booking.created`` goes to the owner's endpoint and the link's key's
subscriptions only: ``calendar.booking``)."""

KIND_OF = {STARTING: "starting", ENDED: "ended"}
TYPE_OF = {kind: event_type for event_type, kind in KIND_OF.items()}

MINUTES_MOST = 10080  # a week
OFFSETS_MOST = 10
DEFAULT_OFFSETS = (0,)


def check_events(value: Any, errors: list[FieldError], *, field: str = "events") -> list[str]:
    """The event types asked for (each once, in ``EVENT_TYPES`` order); ``None``: all."""
    if value is None:
        return list(EVENT_TYPES)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        errors.append(FieldError(field, "must be a non-empty list of event types"))
        return []
    unknown = [v for v in dict.fromkeys(value) if v not in EVENT_TYPES]
    if unknown:
        names = ", ".join(repr(v[:100]) for v in unknown)
        errors.append(
            FieldError(field, f"has unknown types {names}; known: {', '.join(EVENT_TYPES)}")
        )
        return []
    if len(set(value)) != len(value):
        errors.append(FieldError(field, "names a type twice"))
        return []
    return [t for t in EVENT_TYPES if t in value]


def check_minutes_before(
    value: Any, errors: list[FieldError], *, field: str = "minutesBefore"
) -> list[int] | None:
    """``calendar.event.starting``'s offsets, ascending; ``None`` when not given."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        errors.append(FieldError(field, "must be a non-empty list of whole numbers of minutes"))
        return None
    # JSON Schema's integers: 15 or 15.0, never true or "15".
    value = [int(v) if isinstance(v, float) and v.is_integer() else v for v in value]
    if not all(type(v) is int and 0 <= v <= MINUTES_MOST for v in value):
        errors.append(FieldError(field, f"must hold whole numbers from 0 to {MINUTES_MOST}"))
        return None
    if len(set(value)) != len(value):
        errors.append(FieldError(field, "names an offset twice"))
        return None
    if len(value) > OFFSETS_MOST:
        errors.append(FieldError(field, f"may hold at most {OFFSETS_MOST} offsets"))
        return None
    return sorted(value)


def parse_offsets(text: str) -> list[Any]:
    """``15,60`` (the CLI's and the settings page's form) as a JSON-like list, for
    ``check_minutes_before``: what is not a number is left as text, to be refused there."""
    parts = [p.strip() for p in text.split(",")]
    return [int(p) if p.isdigit() else p for p in parts if p]


def dumped(value: Sequence[Any] | None) -> str | None:
    return None if value is None else orjson.dumps(list(value)).decode()


def loaded(text: str | None) -> list[Any] | None:
    return None if text is None else list(orjson.loads(text))


def events_of(row: Any) -> list[str]:
    """The types an endpoint row takes."""
    found = loaded(row.events)
    return list(CHANGE_TYPES) if found is None else found


def wanted_triggers(row: Any) -> tuple[list[int], bool]:
    """An endpoint row's time triggers: ``starting``'s offsets (empty: none) and ``ended``."""
    events = events_of(row)
    offsets: list[int] = []
    if STARTING in events:
        offsets = loaded(row.minutes_before) or list(DEFAULT_OFFSETS)
    return offsets, ENDED in events
