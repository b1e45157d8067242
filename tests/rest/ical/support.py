"""Helpers for the iCalendar tests: feeds made through the core, fetched over HTTP, read by
outside parsers (``icalendar``, ``recurring-ical-events``); a calendar's occurrences as the
list gives them."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import recurring_ical_events
from icalendar import Calendar

from calendar_service.interop.ical import feeds
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.rest.recurrence_support import Cal, listed
from tests.support import Owner

IMPORT = "/api/v1/calendar/events/import"
ICS = {"Content-Type": "text/calendar"}

Occurrence = tuple[str, datetime, datetime, bool]
"""(title, start, end, all day), the times as UTC instants."""


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
    assert response.headers["content-type"] == "text/calendar; charset=utf-8"
    return Calendar.from_ical(response.content)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def listed_occurrences(
    api: httpx.Client, cal: Cal, time_min: datetime, time_max: datetime
) -> list[Occurrence]:
    """Every occurrence the list gives for ``[time_min, time_max)``, sorted."""
    events = listed(api, cal, timeMin=time_min.isoformat(), timeMax=time_max.isoformat())
    return sorted(
        (e["title"], _instant(e["startsAt"]), _instant(e["endsAt"]), e["allDay"]) for e in events
    )


def _as_instant(value: date | datetime, tz: tzinfo) -> datetime:
    if isinstance(value, datetime):
        local = value if value.tzinfo is not None else value.replace(tzinfo=tz)
        return local.astimezone(UTC)
    return datetime(value.year, value.month, value.day, tzinfo=tz).astimezone(UTC)


def expanded(
    calendar: Calendar, time_min: datetime, time_max: datetime, *, tz: tzinfo = UTC
) -> list[Occurrence]:
    """The occurrences ``recurring-ical-events`` finds in ``[time_min, time_max)``, sorted;
    dates and floating times read in ``tz``. Zero-length events at ``time_min`` count, as
    the list counts them. Occurrences cancelled by a ``STATUS:CANCELLED`` exception (which
    it lists with that status) are left out, as calendar apps leave them out."""
    found = []
    for vevent in recurring_ical_events.of(calendar).between(time_min, time_max):
        if str(vevent.get("STATUS", "")).upper() == "CANCELLED":
            continue
        start = vevent["DTSTART"].dt
        all_day = not isinstance(start, datetime)
        if "DTEND" in vevent:
            end = vevent["DTEND"].dt
        elif "DURATION" in vevent:
            end = start + vevent["DURATION"].dt
        else:
            end = start if not all_day else start + timedelta(days=1)
        if all_day and end <= start:  # a DTEND equal to DTSTART: one day (docs/ical.md)
            end = start + timedelta(days=1)
        title = str(vevent.get("SUMMARY", "")).strip() or "(no title)"
        found.append((title, _as_instant(start, tz), _as_instant(end, tz), all_day))
    return sorted(found)


def zone(name: str) -> tzinfo:
    return UTC if name == "UTC" else ZoneInfo(name)
