"""Connected calendars polled from real servers on 127.0.0.1 (an ``.ics`` server, Radicale,
xandikos) by the real app's worker, and counted by queryFreeBusy, findFreeTime and ifFree."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from calendar_service.app import create_app
from calendar_service.delivery import connections as store
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.models.connections import connection_busy_t, connections_t
from calendar_service.platform.sealed import sealing_key
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.connections.sources import (
    PASSWORD,
    USER,
    DavServer,
    IcsServer,
    ics_server,
    radicale_server,
    xandikos_server,
)
from tests.support import Factory, Owner, RunningServer, bearer, run_server, wait_for

FREE_BUSY = "/api/v1/calendar/freeBusy"
FREE_TIME = "/api/v1/calendar/freeTime"


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


@pytest.fixture(scope="module")
def live(database_url: str) -> Iterator[tuple[Config, Database, RunningServer]]:
    """The whole app (its worker polling connected calendars every second) on the test
    database."""
    config = make_config(database_url, connection_poll=timedelta(seconds=1))
    db = Database(config)
    try:
        with run_server(create_app(config, db=db)) as running:
            yield config, db, running
    finally:
        db.close()


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
        db.call(store.remove_connection, user_id=owner.id, connection_id=connection_id)
