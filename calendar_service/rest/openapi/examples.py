"""The examples the document shows: a calendar, an event, the bodies that create one, and
problem details as the API answers them."""

from __future__ import annotations

from typing import Any

from calendar_service.asgi.responses import PROBLEM_TYPE
from calendar_service.platform.models.calendars import DEFAULT_CALENDAR_NAME

CALENDAR_EXAMPLE = {
    "id": "cal_3bT0hJk2mQ9xR4vW8yZ1aC",
    "name": DEFAULT_CALENDAR_NAME,
    "timeZone": "Europe/Berlin",
    "isDefault": True,
    "color": "#1a73e8",
}
EVENT_EXAMPLE = {
    "id": "ev_7Hq2LmN4pR6tV8xZ0bD3fG",
    "calendarId": "cal_3bT0hJk2mQ9xR4vW8yZ1aC",
    "calendar": DEFAULT_CALENDAR_NAME,
    "title": "Design review",
    "startsAt": "2026-03-02T09:30:00+01:00",
    "endsAt": "2026-03-02T10:30:00+01:00",
    "allDay": False,
    "description": None,
    "location": "Room 4",
    "createdAt": "2026-02-20T14:03:11.482913Z",
    "updatedAt": "2026-02-20T14:03:11.482913Z",
    "transparency": "opaque",
}


def problem_example(
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    instance: str = "/api/v1/calendar/events",
    **extra: Any,
) -> Any:
    """A problem details body as the API sends it, answering a request to ``instance``."""
    return {
        "type": PROBLEM_TYPE.format(code=code),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "instance": instance,
        **extra,
    }


VALIDATION_PROBLEM = problem_example(
    400,
    "validation_error",
    "Invalid request",
    "The request has invalid fields: title, endsAt.",
    errors=[
        {"field": "title", "message": "must not be empty"},
        {"field": "endsAt", "message": "must not be before startsAt"},
    ],
)


def create_examples() -> list[dict[str, Any]]:
    """Bodies of ``createCalendarEvent``: a timed event and an all-day one."""
    return [
        {
            "title": "Design review",
            "startsAt": "2026-03-02T09:30:00+01:00",
            "endsAt": "2026-03-02T10:30:00+01:00",
            "location": "Room 4",
        },
        {"title": "Offsite", "startsAt": "2026-03-02", "endsAt": "2026-03-03", "allDay": True},
    ]
