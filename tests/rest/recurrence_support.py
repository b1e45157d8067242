"""Helpers for the recurring-event tests: a calendar in a zone with its own key, a series
made over REST, a window listed page by page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS
from tests.support import Factory, Owner, bearer
from tests.webhooks.support import set_webhook


@dataclass
class Cal:
    owner: Owner
    id: str
    headers: dict[str, str]


def calendar_in(factory: Factory, time_zone: str, owner: Owner | None = None) -> Cal:
    """A calendar in ``time_zone`` and a write key for it alone."""
    owner = owner or factory.owner()
    calendar_id = factory.calendar(owner, time_zone=time_zone)
    _, secret = factory.key(owner, calendar_id=calendar_id)
    return Cal(owner, calendar_id, bearer(secret))


def create(api: httpx.Client, cal: Cal, **body: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"title": "Series", "calendarId": cal.id}
    values.update(body)
    response = api.post(EVENTS, json=values, headers=cal.headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


def listed(api: httpx.Client, cal: Cal, **params: Any) -> list[dict[str, Any]]:
    """Every event of the window, following the page tokens."""
    events: list[dict[str, Any]] = []
    query = dict(params)
    for _ in range(10_000):
        response = api.get(EVENTS, params=query, headers=cal.headers)
        assert response.status_code == 200, response.text
        body = response.json()
        events.extend(body["events"])
        if "nextPageToken" not in body:
            return events
        query["pageToken"] = body["nextPageToken"]
    raise AssertionError("the pages never ended")


def watch(db: Database, owner: Owner) -> None:
    """Give the owner a webhook, so that changes queue deliveries (read from the outbox)."""
    set_webhook(db, owner, "http://127.0.0.1:9/hook")
