"""Helpers for the iCalendar tests: feeds made through the core, fetched over HTTP, read by
the ``icalendar`` package; a calendar's occurrences as the list gives them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
from icalendar import Calendar

from calendar_service.config import Config
from calendar_service.db import Database
from calendar_service.ical import feeds
from calendar_service.timeutil import utcnow
from tests.rest.recurrence_support import Cal, listed
from tests.support import Owner


def make_feed(db: Database, config: Config, owner: Owner, calendar_id: str) -> dict[str, Any]:
    """A feed of the calendar, as ``feeds create`` makes it: its record with ``url``."""
    return db.call(
        feeds.create_feed,
        user_id=owner.id,
        calendar_id=calendar_id,
        base_url=config.base_url,
        now=utcnow(),
    )


def fetch(url: str, **headers: str) -> httpx.Response:
    with httpx.Client(timeout=30) as client:
        return client.get(url, headers=headers)


def parsed(response: httpx.Response) -> Calendar:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/calendar")
    return Calendar.from_ical(response.content)


def occurrences(
    api: httpx.Client, cal: Cal, time_min: str, time_max: str
) -> list[tuple[str, str, str, bool]]:
    """(title, start, end, allDay) of every occurrence the list gives for the window, the
    times as UTC instants (ISO), sorted."""
    events = listed(api, cal, timeMin=time_min, timeMax=time_max)
    return sorted((e["title"], _utc(e["startsAt"]), _utc(e["endsAt"]), e["allDay"]) for e in events)


def _utc(text: str) -> str:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone().isoformat()
