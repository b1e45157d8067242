"""A connected calendar with ``visibility: details``: its events appear, read-only, in the list,
search, sync and CalDAV of keys that reach them (a calendar marked ``readOnly`` with its
``source``), every write there is 409 ``read_only_calendar`` on every front, availability counts
its busy time once, and the scope of each kind of key holds. Real app, real ``.ics`` server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from calendar_service.calendar.calendar_edits import delete_calendar_step, update_calendar
from calendar_service.calendar.rules import set_rules
from calendar_service.delivery import connections as store
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.errors import ReadOnlyCalendar
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.connections import connection_events_t
from calendar_service.platform.models.events import events_t
from calendar_service.platform.timeutil import utcnow
from tests.connections.sources import ics_server
from tests.connections.test_polling import (
    FREE_BUSY,
    add_ics,
    calendar,
    connected_busy,
    day,
    free_busy,
    synced_after,
    utc,
    vevent,
)
from tests.dav.support import app_account, dav, propfind, responses
from tests.mcp_tools.clients import connect, text_of
from tests.support import (
    Factory,
    Owner,
    RunningServer,
    bearer,
    wait_for,
)

EVENTS = "/api/v1/calendar/events"
LINKS = "/api/v1/calendar/schedulingLinks"
WEEKLY = "RRULE:FREQ=WEEKLY;COUNT=4\r\n"

pytestmark = pytest.mark.database  # its app and database: the fixtures of conftest.py


def mirror_id(db: Database, connection_id: str) -> str | None:
    return db.call(
        lambda c: c.execute(
            select(calendars_t.c.id).where(calendars_t.c.connection_id == connection_id)
        ).scalar()
    )


def listed(
    client: httpx.Client, secret: str, **params: Any
) -> tuple[dict[str, Any], httpx.Response]:
    answer = client.get(EVENTS, params=params, headers=bearer(secret))
    return (answer.json() if answer.status_code == 200 else {}), answer


def titles(found: dict[str, Any]) -> list[str]:
    return sorted(e["title"] for e in found["events"])


def source_events(start: Any, *, title: str = "Board meeting") -> bytes:
    hour = timedelta(hours=1)
    moved = (start + timedelta(days=7, hours=3)).strftime("%Y%m%dT%H%M%SZ")
    return calendar(
        vevent(
            "board", start, start + hour, title=title,
            extra="LOCATION:Room 4\r\nDESCRIPTION:Budget\r\n",
        ),
        vevent("standup", start + 3 * hour, start + 4 * hour, title="Standup", extra=WEEKLY),
        vevent(
            "standup", start + timedelta(days=7, hours=5), start + timedelta(days=7, hours=6),
            title="Standup (moved)",
            extra=f"RECURRENCE-ID:{moved}\r\n",
        ),
    ).encode()  # fmt: skip


def test_a_details_calendar_is_listed_read_only_searched_synced_and_follows_its_source(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    config, db, running = live
    owner = factory.owner()
    _, reader = factory.key(owner, permission="read")
    start = day(2).replace(hour=9)
    low, high = (day(1), day(20))
    window = {"timeMin": low.isoformat(), "timeMax": high.isoformat()}
    with (
        ics_server(source_events(start)) as source,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        connection_id = add_ics(db, config, owner, source.url, name="Work", visibility="details")
        synced_after(db, owner, connection_id, None)
        mirror = mirror_id(db, connection_id)
        assert mirror is not None
        found, _ = listed(client, reader, **window, calendarIds=mirror)
        [shown] = found["calendars"]
        assert shown["readOnly"] is True and shown["name"] == "Work"
        assert shown["source"] == {"connectionId": connection_id, "kind": "ics"}
        assert titles(found) == ["Board meeting"] + ["Standup"] * 2 + ["Standup (moved)"]
        [board] = [e for e in found["events"] if e["title"] == "Board meeting"]
        assert (board["location"], board["description"]) == ("Room 4", "Budget")
        own, _ = listed(client, reader, **window, calendarIds=owner.default_calendar_id)
        assert own["calendars"][0]["readOnly"] is False and "source" not in own["calendars"][0]
        searched, _ = listed(client, reader, **window, q="board")
        assert [e["title"] for e in searched["events"]] == ["Board meeting"]
        # Availability counts the busy time once: the connection's entry, not the mirror's.
        busy = free_busy(client, reader, start - timedelta(hours=1), start + timedelta(hours=2))
        assert mirror not in [c["id"] for c in busy["calendars"]]
        assert [utc(s) for s, _ in connected_busy(busy, connection_id)] == [start]
        # A sync token, then a change at the source: the sync names what changed, and only it.
        token = listed(client, reader, **window, calendarIds=mirror)[0]["nextSyncToken"]
        rows_before = _mapped(db, connection_id)
        source.set(source_events(start, title="Board meeting (moved room)"))
        wait_for(
            lambda: (
                "Board meeting (moved room)"
                in titles(listed(client, reader, **window, calendarIds=mirror)[0])
            ),
            what="the change to be seen",
        )
        changed, _ = listed(client, reader, calendarIds=mirror, syncToken=token)
        assert [e.get("title") for e in changed["events"] if e.get("status") != "cancelled"] == [
            "Board meeting (moved room)"
        ]
        # The poller's writes are not a change of the owner's or a key's: no change log rows.
        logged = client.get("/api/v1/calendar/changes", headers=bearer(reader))
        assert logged.status_code == 200 and logged.json()["changes"] == [], logged.text
        rows_after = _mapped(db, connection_id)
        assert rows_after["standup"] == rows_before["standup"]  # unchanged: not written again
        # details -> busy: the mirror goes (a sync of all calendars says its events are gone),
        # the busy time stays; busy -> details: it is back.
        whole = listed(client, reader, **window)[0]["nextSyncToken"]
        show(db, owner, connection_id, "busy")
        assert mirror_id(db, connection_id) is None
        wait_for(lambda: _events_of(db, mirror) == 0, what="the mirror deleted")
        gone, _ = listed(client, reader, syncToken=whole)
        assert len([e for e in gone["events"] if e["status"] == "cancelled"]) == 3
        everything, _ = listed(client, reader, **window)
        assert "Work" not in [c["name"] for c in everything["calendars"]]
        assert not any("Board" in t for t in titles(everything))
        busy = free_busy(client, reader, start - timedelta(hours=1), start + timedelta(hours=2))
        assert [utc(s) for s, _ in connected_busy(busy, connection_id)] == [start]
        show(db, owner, connection_id, "details")
        again = wait_for(lambda: mirror_id(db, connection_id), what="a mirror")
        wait_for(
            lambda: len(listed(client, reader, **window, calendarIds=again)[0]["events"]) == 4,
            what="the mirror filled again",
        )
        # Removing the connection removes its calendar and events.
        db.call(
            store.remove_connection, user_id=owner.id, connection_id=connection_id, now=utcnow()
        )
        assert mirror_id(db, connection_id) is None
        wait_for(lambda: _events_of(db, again) == 0, what="the mirror deleted")
        wait_for(lambda: _mapped(db, connection_id) == {}, what="the mapping deleted")


def show(db: Database, owner: Owner, connection_id: str, visibility: str) -> None:
    db.call(
        store.set_visibility,
        user_id=owner.id,
        connection_id=connection_id,
        visibility=visibility,
        now=utcnow(),
    )


def _mapped(db: Database, connection_id: str) -> dict[str, str]:
    c = connection_events_t.c
    rows = db.call(
        lambda conn: conn.execute(
            select(c.uid_hash, c.event_id, events_t.c.title)
            .join(events_t, events_t.c.id == c.event_id)
            .where(c.connection_id == connection_id)
        ).all()
    )
    return {("standup" if r.title == "Standup" else r.title): r.event_id for r in rows}


def _events_of(db: Database, calendar_id: str) -> int:
    return len(
        db.call(
            lambda c: c.execute(
                select(events_t.c.id).where(events_t.c.calendar_id == calendar_id)
            ).all()
        )
    )


@pytest.fixture
def details(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> Iterator[tuple[Owner, str, str, str]]:
    """An owner with a ``details`` connection, synced: (owner, connection, mirror, an event
    of the mirror)."""
    config, db, _ = live
    owner = factory.owner()
    start = day(3).replace(hour=9)
    with ics_server(source_events(start)) as source:
        connection_id = add_ics(db, config, owner, source.url, name="Work", visibility="details")
        synced_after(db, owner, connection_id, None)
        mirror = mirror_id(db, connection_id)
        assert mirror is not None
        event_id = db.call(
            lambda c: c.execute(
                select(events_t.c.id).where(
                    events_t.c.calendar_id == mirror, events_t.c.title == "Board meeting"
                )
            ).scalar_one()
        )
        yield owner, connection_id, mirror, event_id


def _event_body(mirror: str) -> dict[str, Any]:
    start = day(5).replace(hour=14)
    return {
        "title": "Agent's meeting",
        "startsAt": start.isoformat(),
        "endsAt": (start + timedelta(hours=1)).isoformat(),
        "calendarId": mirror,
    }


ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:x@test\r\n"
    "DTSTAMP:20260101T000000Z\r\nDTSTART:20270105T090000Z\r\nDTEND:20270105T100000Z\r\n"
    "SUMMARY:Imported\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)

Write = Callable[[httpx.Client, Factory, Owner, str, str], httpx.Response]


def _rest_create(c: httpx.Client, f: Factory, o: Owner, mirror: str, _: str) -> httpx.Response:
    return c.post(EVENTS, json=_event_body(mirror), headers=bearer(f.key(o)[1]))


def _rest_patch(c: httpx.Client, f: Factory, o: Owner, _: str, event: str) -> httpx.Response:
    return c.patch(f"{EVENTS}/{event}", json={"title": "Mine"}, headers=bearer(f.key(o)[1]))


def _rest_delete(c: httpx.Client, f: Factory, o: Owner, _: str, event: str) -> httpx.Response:
    return c.delete(f"{EVENTS}/{event}", headers=bearer(f.key(o)[1]))


def _rest_delete_asking_approval(
    c: httpx.Client, f: Factory, o: Owner, _: str, event: str
) -> httpx.Response:
    return c.delete(f"{EVENTS}/{event}", headers=bearer(f.key(o, approval="destructive")[1]))


def _rest_import(c: httpx.Client, f: Factory, o: Owner, mirror: str, _: str) -> httpx.Response:
    headers = {**bearer(f.key(o)[1]), "Content-Type": "text/calendar"}
    return c.post(f"{EVENTS}/import", params={"calendarId": mirror}, content=ICS, headers=headers)


def _link(c: httpx.Client, f: Factory, o: Owner, mirror: str, _: str) -> httpx.Response:
    low = day(4)
    body = {
        "title": "Chat",
        "durationMinutes": 30,
        "timeMin": low.isoformat(),
        "timeMax": (low + timedelta(days=2)).isoformat(),
        "calendarId": mirror,
    }
    return c.post(LINKS, json=body, headers=bearer(f.key(o)[1]))


def _caldav_put(c: httpx.Client, f: Factory, o: Owner, mirror: str, _: str) -> httpx.Response:
    app = app_account(f, o)
    path = f"{app.calendar(mirror)}new.ics"
    return dav(c, app, "PUT", path, ICS, Content_Type="text/calendar")


def _caldav_delete(c: httpx.Client, f: Factory, o: Owner, mirror: str, _: str) -> httpx.Response:
    app = app_account(f, o)
    found = responses(propfind(c, app, app.calendar(mirror), "<d:getetag/>", depth="1"))
    [href, *_] = [h for h in found if h.endswith(".ics")]
    return dav(c, app, "DELETE", href)


FRONTS: dict[str, Write] = {
    "REST create": _rest_create,
    "REST PATCH": _rest_patch,
    "REST DELETE": _rest_delete,
    "REST DELETE by a key that asks approval": _rest_delete_asking_approval,
    "import": _rest_import,
    "scheduling link": _link,
    "CalDAV PUT": _caldav_put,
    "CalDAV DELETE": _caldav_delete,
}


@pytest.mark.parametrize("front", list(FRONTS))
def test_a_write_to_a_read_only_calendar_is_refused_409_read_only_calendar(
    live: tuple[Config, Database, RunningServer],
    factory: Factory,
    details: tuple[Owner, str, str, str],
    front: str,
) -> None:
    _, db, running = live
    owner, connection_id, mirror, event_id = details
    before = _events_of(db, mirror)
    with httpx.Client(base_url=running.url, timeout=30) as client:
        refused = FRONTS[front](client, factory, owner, mirror, event_id)
    assert refused.status_code == 409, refused.text
    if front.startswith("CalDAV"):
        assert "read-only" in refused.text
    else:
        assert refused.json()["code"] == "read_only_calendar"
        assert connection_id in refused.json()["detail"]
    assert _events_of(db, mirror) == before


async def test_mcp_writes_to_a_read_only_calendar_are_refused(
    live: tuple[Config, Database, RunningServer],
    factory: Factory,
    details: tuple[Owner, str, str, str],
) -> None:
    running = live[2]
    owner, _, mirror, event_id = details
    _, secret = factory.key(owner)
    async with connect(running.url, secret) as client:
        made = await client.call_tool("createCalendarEvent", _event_body(mirror))
        changed = await client.call_tool(
            "updateCalendarEvent", {"eventId": event_id, "title": "Mine"}
        )
        gone = await client.call_tool("deleteCalendarEvent", {"eventId": event_id})
    for result in (made, changed, gone):
        assert result.is_error and "read_only_calendar" in text_of(result), text_of(result)


def test_scope_freebusy_key_sees_times_only_one_calendar_key_sees_nothing_of_the_connection(
    live: tuple[Config, Database, RunningServer],
    factory: Factory,
    details: tuple[Owner, str, str, str],
) -> None:
    _, _, running = live
    owner, connection_id, mirror, _ = details
    _, freebusy = factory.key(owner, permission="freebusy")
    _, one = factory.key(owner, permission="read", calendar_id=owner.default_calendar_id)
    _, everything = factory.key(owner, permission="read")
    low, high = day(1), day(20)
    window = {"timeMin": low.isoformat(), "timeMax": high.isoformat()}
    with httpx.Client(base_url=running.url, timeout=30) as client:
        # freebusy: no list at all; availability: the connection's times, no title, no mirror.
        _, refused = listed(client, freebusy, **window)
        assert refused.status_code in (401, 403), refused.text
        busy = free_busy(client, freebusy, low, high)
        assert mirror not in str(busy) and "Board" not in str(busy)
        assert connected_busy(busy, connection_id)
        # One calendar: its list has none of the connection's events; the mirror is not its.
        own, _ = listed(client, one, **window)
        assert [c["id"] for c in own["calendars"]] == [owner.default_calendar_id]
        assert own["events"] == []
        _, other = listed(client, one, **window, calendarIds=mirror)
        assert other.status_code == 401, other.text
        busy = free_busy(client, one, low, high)  # times only, as the SPEC says
        assert mirror not in str(busy) and "Board" not in str(busy)
        # All calendars, read: the mirror, read-only, with its events.
        found, _ = listed(client, everything, **window)
        [shown] = [c for c in found["calendars"] if c["id"] == mirror]
        assert shown["readOnly"] is True
        assert "Board meeting" in titles(found)
        refused_fb = client.post(
            FREE_BUSY,
            json={**window, "calendarIds": [mirror]},
            headers=bearer(everything),
        )
        assert refused_fb.status_code == 400, refused_fb.text


def test_the_owner_cannot_delete_a_mirror_calendar_but_may_rename_it(
    live: tuple[Config, Database, RunningServer],
    details: tuple[Owner, str, str, str],
) -> None:
    db = live[1]
    owner, connection_id, mirror, _ = details
    with pytest.raises(ReadOnlyCalendar, match=connection_id):
        db.call(delete_calendar_step, user_id=owner.id, calendar_id=mirror, now=utcnow())
    renamed = db.call(
        update_calendar, user_id=owner.id, calendar_id=mirror, now=utcnow(), name="Work (Google)"
    )
    assert (renamed["name"], renamed["readOnly"]) == ("Work (Google)", True)
    assert renamed["source"] == {"connectionId": connection_id, "kind": "ics"}


def test_the_rules_do_not_count_a_connected_all_day_event_as_a_meeting(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    """``maxMeetingsPerDay: 1``: a day with a connected all-day event still takes a meeting;
    a day with a connected timed meeting does not."""
    config, db, running = live
    owner = factory.owner()
    _, writer = factory.key(owner)
    holiday, busy_day = day(4), day(5)
    all_day = (
        f"BEGIN:VEVENT\r\nUID:holiday\r\nDTSTAMP:20260101T000000Z\r\n"
        f"DTSTART;VALUE=DATE:{holiday.strftime('%Y%m%d')}\r\n"
        f"DTEND;VALUE=DATE:{(holiday + timedelta(days=1)).strftime('%Y%m%d')}\r\n"
        "SUMMARY:Holiday\r\nEND:VEVENT\r\n"
    )
    meeting = busy_day.replace(hour=8)
    source = calendar(all_day, vevent("m", meeting, meeting + timedelta(hours=1)))
    db.call(set_rules, user_id=owner.id, value={"maxMeetingsPerDay": 1}, now=utcnow())
    with (
        ics_server(source.encode()) as served,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        connection_id = add_ics(db, config, owner, served.url)
        assert synced_after(db, owner, connection_id, None)["events"] == 2

        def create(on: Any) -> httpx.Response:
            start = on.replace(hour=14)
            body = {
                "title": "Agent's meeting",
                "startsAt": start.isoformat(),
                "endsAt": (start + timedelta(hours=1)).isoformat(),
            }
            return client.post(EVENTS, json=body, headers=bearer(writer))

        assert create(holiday).status_code == 201
        refused = create(busy_day)
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "rule_violation"
        assert [e["rule"] for e in refused.json()["errors"]] == ["maxMeetingsPerDay"]
        # The all-day event is busy time still: free/busy shows the whole day.
        found = free_busy(client, writer, holiday, holiday + timedelta(days=1))
        assert connected_busy(found, connection_id)


def test_caldav_shows_a_mirror_calendar_without_write_privileges(
    live: tuple[Config, Database, RunningServer],
    factory: Factory,
    details: tuple[Owner, str, str, str],
) -> None:
    running = live[2]
    owner, _, mirror, _ = details
    app = app_account(factory, owner)
    with httpx.Client(base_url=running.url, timeout=30) as client:
        asked = "<d:current-user-privilege-set/><d:displayname/>"
        home = responses(propfind(client, app, app.home, asked, depth="1"))
    privileges = {
        href: {p.tag for p in entry["found"]["{DAV:}current-user-privilege-set"].iter()}
        for href, entry in home.items()
        if "{DAV:}current-user-privilege-set" in entry["found"]
    }
    assert "{DAV:}write" not in privileges[app.calendar(mirror)]
    assert "{DAV:}write" in privileges[app.calendar()]
