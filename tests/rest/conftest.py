from __future__ import annotations

from typing import Any, NamedTuple

import httpx

from tests.support import Factory, Owner, bearer

EVENTS = "/api/v1/calendar/events"


def event_body(**overrides: object) -> dict[str, object]:
    body: dict[str, object] = {
        "title": "Planning",
        "startsAt": "2026-03-02T09:00:00Z",
        "endsAt": "2026-03-02T10:00:00Z",
    }
    body.update(overrides)
    return body


def create_event(api: httpx.Client, secret: str, **fields: object) -> dict[str, Any]:
    """POST ``event_body(**fields)`` with the key ``secret``; it must be created (201).
    Returns the event."""
    response = api.post(EVENTS, json=event_body(**fields), headers=bearer(secret))
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


class WithWork(NamedTuple):
    owner: Owner
    work: str  # the id of the owner's second calendar, "Work" (the default one is "Личное")
    everything: str  # the secret of a write key for all the owner's calendars


def with_work(factory: Factory, *, time_zone: str = "UTC") -> WithWork:
    """A new owner with a second calendar named "Work" in ``time_zone``, and an all-calendars
    write key."""
    owner = factory.owner()
    work = factory.calendar(owner, name="Work", time_zone=time_zone)
    return WithWork(owner, work, factory.key(owner)[1])
