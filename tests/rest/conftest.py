from __future__ import annotations

EVENTS = "/api/v1/calendar/events"


def event_body(**overrides: object) -> dict[str, object]:
    body: dict[str, object] = {
        "title": "Planning",
        "startsAt": "2026-03-02T09:00:00Z",
        "endsAt": "2026-03-02T10:00:00Z",
    }
    body.update(overrides)
    return body
