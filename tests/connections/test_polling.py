"""Connected calendars polled from real servers on 127.0.0.1 (an ``.ics`` server, Radicale,
xandikos) by the real app's worker, and counted by queryFreeBusy, findFreeTime and ifFree."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from calendar_service.delivery import connections as store
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.models.connections import connection_busy_t
from calendar_service.platform.sealed import sealing_key
from calendar_service.platform.timeutil import utcnow
from tests.connections.sources import (
    PASSWORD,
    USER,
    DavServer,
    ics_server,
    radicale_server,
    xandikos_server,
)
from tests.mcp_tools.clients import MODES, connect, structured
from tests.support import (
    Factory,
    Owner,
    RunningServer,
    bearer,
    wait_for,
)
from webhooks.connections import discover

FREE_BUSY = "/api/v1/calendar/freeBusy"
FREE_TIME = "/api/v1/calendar/freeTime"

pytestmark = pytest.mark.database  # its app and database: the fixtures of conftest.py


def day(offset: int) -> datetime:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today + timedelta(days=offset)


def stamp(value: datetime) -> str:
    return value.strftime("%Y%m%dT%H%M%SZ")


def vevent(
    uid: str, start: datetime, end: datetime, *, extra: str = "", title: str = "Secret"
) -> str:
    return (
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:{stamp(start)}\r\n"
        f"DTEND:{stamp(end)}\r\nSUMMARY:{title}\r\n{extra}END:VEVENT\r\n"
    )


def calendar(*events: str) -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
        + "".join(events)
        + "END:VCALENDAR\r\n"
    )


def add_ics(db: Database, config: Config, owner: Owner, url: str, **options: Any) -> str:
    def work(conn: Any) -> dict[str, Any]:
        key = sealing_key(conn, configured=config.connection_key, now=utcnow())
        return store.add_ics(
            conn,
            user_id=owner.id,
            url=url,
            name=options.get("name", "Google"),
            visibility=options.get("visibility", "busy"),
            key=key,
            now=utcnow(),
        )

    return str(db.call(work)["id"])


def connection(db: Database, owner: Owner, connection_id: str) -> dict[str, Any]:
    return db.call(store.get_connection, user_id=owner.id, connection_id=connection_id)


def synced_after(
    db: Database, owner: Owner, connection_id: str, after: str | None
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        found = connection(db, owner, connection_id)
        return found if found["status"] != "pending" and found["syncedAt"] != after else None

    return wait_for(check, what="a poll")


def free_busy(
    client: httpx.Client, secret: str, low: datetime, high: datetime, **body: Any
) -> dict[str, Any]:
    answer = client.post(
        FREE_BUSY,
        json={"timeMin": low.isoformat(), "timeMax": high.isoformat(), **body},
        headers=bearer(secret),
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def connected_busy(found: dict[str, Any], connection_id: str) -> list[tuple[str, str]]:
    [entry] = [c for c in found["calendars"] if c["id"] == connection_id]
    return [(b["startsAt"], b["endsAt"]) for b in entry["busy"]]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_an_ics_source_is_busy_time_and_an_unchanged_one_costs_one_304_and_no_copy_written(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    config, db, running = live
    owner = factory.owner()
    _, secret = factory.key(owner, permission="read")
    start = day(2).replace(hour=10)
    with ics_server(calendar(vevent("a", start, start + timedelta(hours=1))).encode()) as source:
        connection_id = add_ics(db, config, owner, source.url)
        first = synced_after(db, owner, connection_id, None)
        assert first["status"] == "ok" and first["events"] == 1
        with httpx.Client(base_url=running.url, timeout=30) as client:
            found = free_busy(client, secret, day(1), day(4))
            assert [(utc(s), utc(e)) for s, e in connected_busy(found, connection_id)] == [
                (start, start + timedelta(hours=1))
            ]
            assert [s["id"] for s in found["sources"]] == [connection_id]
            assert found["sources"][0]["stale"] is False
            assert "Secret" not in str(found)
            # The next poll is conditional, answered 304: the copy is not written again.
            rows_before = db.call(lambda c: c.execute(select(connection_busy_t)).all())
            gets = len(source.seen)
            wait_for(lambda: len(source.seen) > gets + 1, what="two more polls")
            conditional = source.seen[gets:]
            assert all(s.headers.get("if-none-match") == source.etag for s in conditional)
            assert db.call(lambda c: c.execute(select(connection_busy_t)).all()) == rows_before
            # A change is read at the next poll.
            moved = start + timedelta(hours=3)
            source.set(calendar(vevent("a", moved, moved + timedelta(hours=1))).encode())
            wait_for(
                lambda: (
                    [
                        utc(s)
                        for s, _ in connected_busy(
                            free_busy(client, secret, day(1), day(4)), connection_id
                        )
                    ]
                    == [moved]
                ),
                what="the move to be seen",
            )
        db.call(
            store.remove_connection, user_id=owner.id, connection_id=connection_id, now=utcnow()
        )


def add_caldav(db: Database, config: Config, owner: Owner, server: DavServer) -> list[str]:
    found = asyncio.run(discover(server.url, username=USER, password=PASSWORD, allow_local=True))
    assert [f.url for f in found] == [server.calendar_url]

    def work(conn: Any) -> list[dict[str, Any]]:
        key = sealing_key(conn, configured=config.connection_key, now=utcnow())
        return store.add_caldav(
            conn,
            user_id=owner.id,
            url=server.url,
            username=USER,
            password=PASSWORD,
            calendars=[store.Picked(f.url, f.name) for f in found],
            visibility="busy",
            key=key,
            now=utcnow(),
        )

    return [c["id"] for c in db.call(work)]


def test_a_radicale_meeting_added_moved_and_deleted_is_seen_within_a_poll_by_sync_collection(
    live: tuple[Config, Database, RunningServer], factory: Factory, tmp_path: Path
) -> None:
    config, db, running = live
    owner = factory.owner()
    _, secret = factory.key(owner, permission="freebusy")
    start = day(3).replace(hour=9)
    with (
        radicale_server(tmp_path) as radicale,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        [connection_id] = add_caldav(db, config, owner, radicale)
        first = synced_after(db, owner, connection_id, None)
        assert first["status"] == "ok", first
        assert first["name"] == "Work" and first["events"] == 0

        def busy() -> list[tuple[datetime, datetime]]:
            found = free_busy(client, secret, day(1), day(6))
            return [(utc(s), utc(e)) for s, e in connected_busy(found, connection_id)]

        radicale.put("m.ics", calendar(vevent("m", start, start + timedelta(minutes=30))))
        wait_for(lambda: busy() == [(start, start + timedelta(minutes=30))], what="the add")
        moved = start + timedelta(hours=5)
        radicale.put("m.ics", calendar(vevent("m", moved, moved + timedelta(minutes=30))))
        wait_for(lambda: busy() == [(moved, moved + timedelta(minutes=30))], what="the move")
        radicale.delete("m.ics")
        wait_for(lambda: busy() == [], what="the delete")
        # Each change was found by sync-collection from the last token, and only the changed
        # object read (calendar-multiget).
        reports = radicale.reports()
        syncs = [r for r in reports if b"sync-collection" in r]
        assert len(syncs) >= 4
        assert any(b"<d:sync-token>http" in r for r in syncs)  # from a token, not from scratch
        assert any(b"calendar-multiget" in r and b"m.ics" in r for r in reports)
        assert connection(db, owner, connection_id)["status"] == "ok"


BERLIN_SERIES = (
    "BEGIN:VEVENT\r\nUID:series\r\nDTSTAMP:20260101T000000Z\r\n"
    "DTSTART;TZID=Europe/Berlin:20270315T090000\r\nDTEND;TZID=Europe/Berlin:20270315T100000\r\n"
    "RRULE:FREQ=WEEKLY;COUNT=4\r\nEXDATE;TZID=Europe/Berlin:20270322T090000\r\n"
    "SUMMARY:Standup\r\nEND:VEVENT\r\n"
    "BEGIN:VEVENT\r\nUID:series\r\nDTSTAMP:20260101T000000Z\r\n"
    "RECURRENCE-ID;TZID=Europe/Berlin:20270329T090000\r\n"
    "DTSTART;TZID=Europe/Berlin:20270329T130000\r\nDTEND;TZID=Europe/Berlin:20270329T140000\r\n"
    "SUMMARY:Standup (moved)\r\nEND:VEVENT\r\n"
)


def test_find_free_time_never_offers_a_radicale_only_series_occurrence_across_dst(
    live: tuple[Config, Database, RunningServer], factory: Factory, tmp_path: Path
) -> None:
    config, db, running = live
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    with (
        radicale_server(tmp_path) as radicale,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        radicale.put("series.ics", calendar(BERLIN_SERIES))
        [connection_id] = add_caldav(db, config, owner, radicale)
        assert synced_after(db, owner, connection_id, None)["status"] == "ok"
        low, high = datetime(2027, 3, 14, tzinfo=UTC), datetime(2027, 4, 10, tzinfo=UTC)
        found = free_busy(client, secret, low, high)
        expected = [
            (datetime(2027, 3, 15, 8, tzinfo=UTC), datetime(2027, 3, 15, 9, tzinfo=UTC)),  # CET
            (datetime(2027, 3, 29, 11, tzinfo=UTC), datetime(2027, 3, 29, 12, tzinfo=UTC)),  # moved
            (datetime(2027, 4, 5, 7, tzinfo=UTC), datetime(2027, 4, 5, 8, tzinfo=UTC)),  # CEST
        ]
        assert [(utc(s), utc(e)) for s, e in connected_busy(found, connection_id)] == expected
        slots: list[tuple[datetime, datetime]] = []
        days = (("03-15", "+01:00"), ("03-22", "+01:00"), ("03-29", "+02:00"), ("04-05", "+02:00"))
        for day_text, offset in days:
            answer = client.post(
                FREE_TIME,
                json={
                    "timeMin": f"2027-{day_text}T07:00:00{offset}",
                    "timeMax": f"2027-{day_text}T16:00:00{offset}",
                    "durationMinutes": 60,
                    "timeZone": "Europe/Berlin",
                    "limit": 100,
                },
                headers=bearer(secret),
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["sources"][0]["id"] == connection_id
            slots += [(utc(s["startsAt"]), utc(s["endsAt"])) for s in answer.json()["slots"]]
        for start, end in slots:
            assert not any(start < b_end and b_start < end for b_start, b_end in expected)
        # The cancelled and the moved-away occurrences are free (09:00 local).
        assert (datetime(2027, 3, 22, 8, tzinfo=UTC), datetime(2027, 3, 22, 9, tzinfo=UTC)) in slots
        assert (datetime(2027, 3, 29, 7, tzinfo=UTC), datetime(2027, 3, 29, 8, tzinfo=UTC)) in slots
        # A booking with ifFree over a Radicale-only meeting is refused, titles never shown.
        clash = client.post(
            "/api/v1/calendar/events",
            json={
                "title": "new",
                "startsAt": "2027-04-05T09:30:00+02:00",
                "endsAt": "2027-04-05T10:30:00+02:00",
                "ifFree": True,
            },
            headers=bearer(secret),
        )
        assert clash.status_code == 409, clash.text
        assert clash.json()["conflicts"] == [
            {"startsAt": "2027-04-05T09:00:00+02:00", "endsAt": "2027-04-05T10:00:00+02:00"}
        ]
        assert "Standup" not in clash.text


def test_xandikos_is_discovered_and_polled(
    live: tuple[Config, Database, RunningServer], factory: Factory, tmp_path: Path
) -> None:
    config, db, running = live
    owner = factory.owner()
    _, secret = factory.key(owner, permission="read")
    start = day(2).replace(hour=15)
    with (
        xandikos_server(tmp_path) as xandikos,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        xandikos.put("x.ics", calendar(vevent("x", start, start + timedelta(hours=2))))
        [connection_id] = add_caldav(db, config, owner, xandikos)
        assert synced_after(db, owner, connection_id, None)["status"] == "ok"
        found = free_busy(client, secret, day(1), day(4))
        assert [(utc(s), utc(e)) for s, e in connected_busy(found, connection_id)] == [
            (start, start + timedelta(hours=2))
        ]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_query_free_busy_and_find_free_time_count_a_connected_calendar(
    live: tuple[Config, Database, RunningServer], factory: Factory, mode: str
) -> None:
    config, db, running = live
    owner = factory.owner()
    _, secret = factory.key(owner, permission="freebusy")
    start = day(2).replace(hour=10)
    with ics_server(calendar(vevent("a", start, start + timedelta(hours=1))).encode()) as source:
        connection_id = add_ics(db, config, owner, source.url, name="Outlook")
        await asyncio.to_thread(synced_after, db, owner, connection_id, None)
        window = {"timeMin": start.isoformat(), "timeMax": (start + timedelta(hours=2)).isoformat()}
        async with connect(running.url, secret, mode=mode) as client:
            busy = structured(await client.call_tool("queryFreeBusy", window))
            free = structured(
                await client.call_tool("findFreeTime", {**window, "durationMinutes": 60})
            )
    assert connected_busy(busy, connection_id) == [
        (
            start.isoformat().replace("+00:00", "Z"),
            (start + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
        )
    ]
    assert (
        [s["name"] for s in busy["sources"]] == ["Outlook"] == [s["name"] for s in free["sources"]]
    )
    assert [utc(s["startsAt"]) for s in free["slots"]] == [start + timedelta(hours=1)]


def test_healthz_answers_while_a_large_source_is_read(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    config, db, running = live
    owner = factory.owner()
    base = day(2).replace(hour=6)
    events = [
        vevent(f"e{i}", base + timedelta(minutes=7 * i), base + timedelta(minutes=7 * i + 5),
               extra="RRULE:FREQ=WEEKLY;COUNT=20\r\n" if i % 10 == 0 else "")
        for i in range(5000)
    ]  # fmt: skip
    started = threading.Event()
    with ics_server(calendar(*events).encode()) as source:
        source.on_get = started.set
        connection_id = add_ics(db, config, owner, source.url)
        answered_during = 0
        with httpx.Client(base_url=running.url, timeout=30) as client:
            while True:
                synced = connection(db, owner, connection_id)["status"] != "pending"
                health = client.get("/healthz")
                assert health.status_code == 200
                if synced:
                    break
                answered_during += started.is_set()
        found = connection(db, owner, connection_id)
        assert found["status"] == "ok" and found["events"] == 5000
        assert answered_during >= 1


def test_a_server_without_sync_collection_is_read_by_ctag_and_etags(
    live: tuple[Config, Database, RunningServer], factory: Factory, tmp_path: Path
) -> None:
    config, db, running = live
    owner = factory.owner()
    _, secret = factory.key(owner, permission="freebusy")
    start = day(3).replace(hour=9)
    with (
        radicale_server(tmp_path, sync_collection=False) as radicale,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        radicale.put("keep.ics", calendar(vevent("keep", start, start + timedelta(minutes=15))))
        [connection_id] = add_caldav(db, config, owner, radicale)
        assert synced_after(db, owner, connection_id, None)["status"] == "ok"

        def busy() -> list[datetime]:
            found = free_busy(client, secret, day(1), day(6))
            return [utc(s) for s, _ in connected_busy(found, connection_id)]

        assert busy() == [start]
        later = start + timedelta(hours=2)
        radicale.put("m.ics", calendar(vevent("m", later, later + timedelta(minutes=30))))
        wait_for(lambda: busy() == [start, later], what="the add")
        radicale.delete("m.ics")
        wait_for(lambda: busy() == [start], what="the delete")
        propfinds = [s for s in radicale.seen if s.method == "PROPFIND"]
        assert any(b"getctag" in s.body for s in propfinds)
        assert any(b"getetag" in s.body and s.headers.get("depth") == "1" for s in propfinds)
        # Only the changed object was read again: keep.ics once, at the first read.
        multigets = [r for r in radicale.reports() if b"calendar-multiget" in r]
        assert sum(b"keep.ics" in r for r in multigets) == 1
        assert connection(db, owner, connection_id)["events"] == 1


def test_keys_of_every_reach_count_the_owners_connected_calendars_and_no_one_elses(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    config, db, running = live
    owner, other = factory.owner(), factory.owner()
    _, one_calendar = factory.key(owner, permission="read", calendar_id=owner.default_calendar_id)
    _, all_calendars = factory.key(owner, permission="freebusy")
    start = day(2).replace(hour=10)
    hour = (start, start + timedelta(hours=1))
    with (
        ics_server(calendar(vevent("a", *hour)).encode()) as source,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        mine = add_ics(db, config, owner, source.url, name="Mine")
        theirs = add_ics(db, config, other, source.url, name="Theirs")
        synced_after(db, owner, mine, None)
        synced_after(db, other, theirs, None)
        low, high = start - timedelta(hours=1), start + timedelta(hours=3)
        for secret in (one_calendar, all_calendars):
            found = free_busy(client, secret, low, high)
            assert [c["id"] for c in found["calendars"]][-1] == mine
            assert [s["id"] for s in found["sources"]] == [mine]
            only = free_busy(client, secret, low, high, calendarIds=[mine])
            assert [c["id"] for c in only["calendars"]] == [mine]
            own = free_busy(client, secret, low, high, calendarIds=[owner.default_calendar_id])
            assert [c["id"] for c in own["calendars"]] == [owner.default_calendar_id]
            assert own["sources"] == []
            # findFreeTime counts the connected calendar whatever calendarIds says.
            answer = client.post(
                FREE_TIME,
                json={
                    "timeMin": low.isoformat(),
                    "timeMax": high.isoformat(),
                    "durationMinutes": 60,
                    "calendarIds": [owner.default_calendar_id],
                },
                headers=bearer(secret),
            )
            assert answer.status_code == 200, answer.text
            slots = [utc(s["startsAt"]) for s in answer.json()["slots"]]
            assert slots and all(
                not (s < hour[1] and hour[0] < s + timedelta(hours=1)) for s in slots
            )
        # Another owner's connected calendar is not this key's to name.
        refused = client.post(
            FREE_BUSY,
            json={"timeMin": low.isoformat(), "timeMax": high.isoformat(), "calendarIds": [theirs]},
            headers=bearer(all_calendars),
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["errors"][0]["field"] == "calendarIds"
        assert theirs not in str(free_busy(client, all_calendars, low, high))
