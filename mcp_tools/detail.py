"""Answers sized for a model: a listed event as a summary unless the call asks for every field.

A model pays for every character of an answer it reads. ``listCalendarEvents`` and
``searchCalendarEvents`` answer each event as a summary by default: what a model acts on (its
id to get, change or delete it, its title, when, where, its calendar and its series), about 200
characters instead of about 600. ``detail: "full"`` gives every field, exactly as REST and
``getCalendarEvent`` give them. A field left out of the summary: ``description``, ``createdAt``,
``updatedAt``, ``timeZone``, ``originalStartsAt``, ``organizer``, ``attendees``, ``sequence``,
``recurrence``, ``calendar`` (its name: ``calendars`` names each once); null ones, and ``allDay``
false and ``transparency`` opaque (their defaults). REST answers are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calendar_service.platform.errors import FieldError, ValidationFailed

ARGUMENT = "detail"
SUMMARY, FULL = "summary", "full"
SCHEMA = {
    "type": "string",
    "enum": [SUMMARY, FULL],
    "description": "full: every field of each event. Default summary: id, title, times, place.",
}
_KEPT = ("id", "status", "calendarId", "title", "startsAt", "endsAt", "location")
_SERIES = "recurringEventId"
_DEFAULTS = {"allDay": False, "transparency": "opaque"}


def parse(value: Any) -> str:
    """The ``detail`` argument (absent: summary), or a refusal naming it."""
    if value is None:
        return SUMMARY
    if value in (SUMMARY, FULL):
        return str(value)
    raise ValidationFailed(
        [FieldError(ARGUMENT, f'must be "{SUMMARY}" (the default) or "{FULL}" (every field)')]
    )


def summarized(page: Any, detail: str) -> Any:
    """A list's answer with each event as ``detail`` asks."""
    if detail == FULL or not isinstance(page, Mapping) or not isinstance(page.get("events"), list):
        return page
    return {**page, "events": [summary(event) for event in page["events"]]}


def summary(event: Mapping[str, Any]) -> dict[str, Any]:
    """What a model acts on of an event (a cancelled one, in a sync, is already that)."""
    out = {key: event[key] for key in _KEPT if event.get(key) is not None}
    for key, default in _DEFAULTS.items():
        if key in event and event[key] != default:
            out[key] = event[key]
    if event.get(_SERIES):
        out[_SERIES] = event[_SERIES]
    return out
