"""One event must not break an owner's lists: not one spanning the ages (refused), not the
longest one accepted, not one an older version stored outside today's range; not after it is
deleted either. Each list is checked on every front: REST, MCP and the calendars page."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from sqlalchemy import Connection, insert, update

from calendar_service.calendar.calendars import calendars_t
from calendar_service.calendar.events import events_t
from calendar_service.platform.db import Database
from calendar_service.platform.ids import new_id
from tests.account.conftest import signed_in, text_of
from tests.mcp_tools.clients import connect, structured
from tests.rest.conftest import EVENTS, create_event, event_body
from tests.support import Factory, Owner, RunningServer, bearer

# In the future, so that the calendars page (upcoming events) shows it too.
PLANNING = event_body(
    title="Planning", startsAt="2031-03-03T09:00:00Z", endsAt="2031-03-03T10:00:00Z"
)

WINDOWS = [
    {},
    {"timeMin": "1900-01-01T00:00:00Z"},
    {"timeMin": "2031-03-01T00:00:00+01:00", "timeMax": "2031-03-08"},
    {"timeMin": "2201-01-01T00:00:00Z"},
    {"timeMax": "1900-01-01T00:00:01Z"},
]


def _setup(factory: Factory, time_zone: str) -> tuple[Owner, str, str]:
    """An owner, a calendar in ``time_zone`` and a one-calendar write key for it."""
    owner = factory.owner()
    calendar_id = factory.calendar(owner, name="Long haul", time_zone=time_zone)
    return owner, calendar_id, factory.key(owner, calendar_id=calendar_id)[1]


def _titles_everywhere(api: httpx.Client, secret: str, owner_secret: str) -> list[list[str]]:
    """The titles listed for each window, with the one-calendar key and an all-calendars key;
    each list must answer 200."""
    found = []
    for key in (secret, owner_secret):
        for params in WINDOWS:
            response = api.get(EVENTS, params=params, headers=bearer(key))
            assert response.status_code == 200, (params, response.text)
            found.append([e["title"] for e in response.json()["events"]])
    return found


async def _mcp_titles(server: RunningServer, secret: str) -> list[list[str]]:
    """The titles the MCP tool lists without a window and from 2031-03-02."""
    found = []
    async with connect(server.url, secret) as client:
        for args in ({}, {"timeMin": "2031-03-02T00:00:00Z"}):
            page = structured(await client.call_tool("listCalendarEvents", args))
            found.append([e["title"] for e in page["events"]])
    return found


def _calendars_page(server: RunningServer, owner: Owner) -> str:
    settings = signed_in(server, owner)
    try:
        page = settings.get("/calendars")
        assert page.status_code == 200, page.text
        return text_of(page.text)
    finally:
        settings.client.close()


async def _only_planning_is_left(
    api: httpx.Client, server: RunningServer, owner: Owner, secret: str, owner_secret: str
) -> None:
    """Every list on every front shows "Planning" alone (where its window holds it)."""
    assert _titles_everywhere(api, secret, owner_secret) == 2 * [
        ["Planning"],
        ["Planning"],
        ["Planning"],
        [],
        [],
    ]
    assert await _mcp_titles(server, secret) == 2 * [["Planning"]]
    assert "Planning" in _calendars_page(server, owner)


async def test_an_event_spanning_the_ages_is_refused_and_the_longest_accepted_breaks_no_list(
    api: httpx.Client, factory: Factory, server: RunningServer
) -> None:
    owner, _, secret = _setup(factory, "America/New_York")
    owner_secret = factory.key(owner)[1]
    ages = api.post(
        EVENTS,
        json=event_body(startsAt="0001-01-01T00:00:00Z", endsAt="9999-12-30T00:00:00Z"),
        headers=bearer(secret),
    )
    assert ages.status_code == 400, ages.text
    assert {e["field"] for e in ages.json()["errors"]} == {"startsAt", "endsAt"}

    longest = create_event(
        api,
        secret,
        title="Everything",
        startsAt="1900-01-01T00:00:00Z",
        endsAt="2201-01-01T00:00:00Z",
    )
    assert longest["startsAt"] == "1899-12-31T19:00:00-05:00"
    create_event(api, secret, **PLANNING)
    assert _titles_everywhere(api, secret, owner_secret) == 2 * [
        ["Everything", "Planning"],
        ["Everything", "Planning"],
        ["Everything", "Planning"],
        [],
        ["Everything"],
    ]
    assert await _mcp_titles(server, secret) == 2 * [["Everything", "Planning"]]
    assert "Everything" in _calendars_page(server, owner)

    gone = api.delete(f"{EVENTS}/{longest['id']}", headers=bearer(secret))
    assert gone.status_code == 204, gone.text
    await _only_planning_is_left(api, server, owner, secret, owner_secret)


def _store_as_an_older_version_did(conn: Connection, *, calendar_id: str) -> str:
    """An event from year 1 to 9999, and the calendar's longest-event length that came with
    it, written straight into the tables as a version without the date range accepted them."""
    event_id = new_id("ev")
    starts = datetime(1, 1, 1, tzinfo=UTC)
    ends = datetime(9999, 12, 30, tzinfo=UTC)
    now = datetime.now(UTC)
    conn.execute(
        insert(events_t).values(
            id=event_id,
            calendar_id=calendar_id,
            title="Ages",
            starts_at=starts,
            ends_at=ends,
            all_day=False,
            created_at=now,
            updated_at=now,
        )
    )
    conn.execute(
        update(calendars_t)
        .where(calendars_t.c.id == calendar_id)
        .values(max_event_seconds=int((ends - starts).total_seconds()) + 1)
    )
    return event_id


async def test_an_event_an_older_version_stored_outside_the_range_breaks_no_list(
    api: httpx.Client, factory: Factory, server: RunningServer, db: Database
) -> None:
    owner, calendar_id, secret = _setup(factory, "America/New_York")
    owner_secret = factory.key(owner)[1]
    create_event(api, secret, **PLANNING)
    ages = db.call(_store_as_an_older_version_did, calendar_id=calendar_id)

    assert _titles_everywhere(api, secret, owner_secret) == 2 * [
        ["Ages", "Planning"],
        ["Ages", "Planning"],
        ["Ages", "Planning"],
        ["Ages"],
        ["Ages"],
    ]
    page = api.get(EVENTS, headers=bearer(secret)).json()["events"]
    # The start cannot be shown in New York (it would be in year 0): in UTC, still RFC 3339.
    assert (page[0]["startsAt"], page[0]["endsAt"]) == (
        "0001-01-01T00:00:00Z",
        "9999-12-29T19:00:00-05:00",
    )
    assert await _mcp_titles(server, secret) == 2 * [["Ages", "Planning"]]
    assert "Ages" in _calendars_page(server, owner)
    assert api.get(f"{EVENTS}/{ages}", headers=bearer(secret)).status_code == 200

    renamed = api.patch(f"{EVENTS}/{ages}", json={"title": "Aeons"}, headers=bearer(secret))
    assert renamed.status_code == 200, renamed.text
    moved = api.patch(
        f"{EVENTS}/{ages}",
        json={"startsAt": "2031-03-02T09:00:00Z", "endsAt": "2031-03-02T10:00:00Z"},
        headers=bearer(secret),
    )
    assert moved.status_code == 200, moved.text
    assert api.delete(f"{EVENTS}/{ages}", headers=bearer(secret)).status_code == 204
    await _only_planning_is_left(api, server, owner, secret, owner_secret)
