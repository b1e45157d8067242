from __future__ import annotations

import httpx

from tests.support import Factory, bearer


def test_a_write_key_creates_an_event_and_lists_it(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    body = {
        "title": "Dentist",
        "startsAt": "2026-03-02T09:00:00Z",
        "endsAt": "2026-03-02T10:00:00Z",
    }
    created = api.post("/api/v1/calendar/events", json=body, headers=bearer(secret))
    assert created.status_code == 201, created.text
    listed = api.get("/api/v1/calendar/events", headers=bearer(secret))
    assert [e["id"] for e in listed.json()["events"]] == [created.json()["id"]]
