"""A connected calendar's mirror removed as a job (``delivery.connection_removals``): the switch
to ``busy`` and the removal hide it at once and leave its deletion to steps, which one runner at
a time takes, and another finishes when the first dies. The steps are made small (a runner's
``most``, the app's ``connection_removal_step``) so that a small source needs several."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from calendar_service.calendar.calendar_edits import delete_calendar_step
from calendar_service.cli.asgi_app import create_app
from calendar_service.delivery import connection_removals as removals
from calendar_service.delivery import connections as store
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.errors import NotFound, ReadOnlyCalendar
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.connections import (
    connection_busy_t,
    connection_events_t,
    mirror_removals_t,
)
from calendar_service.platform.models.events import event_sync_t, events_t
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.connections.sources import ics_server
from tests.connections.test_details import listed, mirror_id, show
from tests.connections.test_polling import add_ics, calendar, day, free_busy, vevent
from tests.support import (
    Factory,
    Owner,
    RunningServer,
    fresh_database_url,
    migrated_database,
    run_server,
    wait_for,
)

pytestmark = pytest.mark.database

EVENTS = 12
STEP = 2  # events a step: several steps for the mirror, and for its copy
RUNNER = "test-runner"
LEASE = timedelta(seconds=3)  # this runner's: the app's runner takes over after it


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Config, Database, RunningServer]]:
    with fresh_database_url(Path(tmp_path_factory.mktemp("removal"))) as url:
        config = make_config(
            url, connection_poll=timedelta(seconds=1), connection_removal_step=STEP
        )
        with migrated_database(config) as db, run_server(create_app(config, db=db)) as running:
            yield config, db, running


@pytest.fixture
def factory(live: tuple[Config, Database, RunningServer]) -> Factory:
    return Factory(live[1])


def _source() -> bytes:
    start = day(2).replace(hour=9)
    return calendar(
        *(
            vevent(f"ev{i}", start + timedelta(hours=i), start + timedelta(hours=i, minutes=30))
            for i in range(EVENTS)
        )
    ).encode()


@contextmanager
def _connected(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> Iterator[tuple[Owner, str, httpx.Client, str]]:
    """An owner, a read key of theirs, a client of the app and a ``details`` connection."""
    config, db, running = live
    owner = factory.owner()
    _, reader = factory.key(owner, permission="read")
    with (
        ics_server(_source()) as source,
        httpx.Client(base_url=running.url, timeout=30) as client,
    ):
        connection_id = add_ics(db, config, owner, source.url, name="Work", visibility="details")
        yield owner, reader, client, connection_id


def _count(db: Database, table: Any, *where: Any) -> int:
    return len(db.call(lambda c: c.execute(select(table).where(*where)).all()))


def _window() -> dict[str, str]:
    return {"timeMin": day(1).isoformat(), "timeMax": day(5).isoformat()}


def _filled(db: Database, client: httpx.Client, reader: str, connection_id: str) -> str:
    mirror = wait_for(lambda: mirror_id(db, connection_id), what="a mirror")
    wait_for(
        lambda: len(listed(client, reader, **_window(), calendarIds=mirror)[0]["events"]) == EVENTS,
        what="the mirror filled",
    )
    return str(mirror)


def _detach_and_claim(db: Database, work: Any) -> str:
    """``work`` (the owner's switch or removal) and the job claimed by this test's runner, in
    one transaction: the app's runner cannot take it first."""

    def both(conn: Any) -> str:
        work(conn)
        taken = removals.claim(conn, runner=RUNNER, now=utcnow(), lease=LEASE)
        assert taken is not None
        return taken

    return str(db.call(both))


def _switch(conn: Any, user_id: str, connection_id: str, visibility: str) -> None:
    store.set_visibility(
        conn, user_id=user_id, connection_id=connection_id, visibility=visibility, now=utcnow()
    )


def _step(db: Database, removal_id: str) -> bool | None:
    return db.call(
        removals.step,
        removal_id=removal_id,
        runner=RUNNER,
        now=utcnow(),
        most=STEP,
        lease=LEASE,
    )


def test_busy_again_hides_the_mirror_at_once_and_a_runner_deletes_it_in_steps(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    db = live[1]
    with _connected(live, factory) as (owner, reader, client, connection_id):
        mirror = _filled(db, client, reader, connection_id)
        before = listed(client, reader, **_window())[0]["nextSyncToken"]
        removal_id = _detach_and_claim(
            db,
            lambda conn: _switch(conn, owner.id, connection_id, "busy"),
        )
        # Hidden at once: no key lists or searches it, nor names it; its events are all there.
        assert mirror_id(db, connection_id) is None
        everything, _ = listed(client, reader, **_window())
        assert "Work" not in [c["name"] for c in everything["calendars"]]
        assert everything["events"] == []
        _, named = listed(client, reader, **_window(), calendarIds=mirror)
        assert named.status_code in (400, 404), named.text
        assert _count(db, events_t.c.id, events_t.c.calendar_id == mirror) == EVENTS
        # A front deleting it gets nothing to delete (it is no calendar of the owner's).
        with pytest.raises(NotFound):
            db.call(delete_calendar_step, user_id=owner.id, calendar_id=mirror, now=utcnow())
        # This runner takes two steps, then dies: its lease runs out and the app's runner
        # takes the job up where it was left.
        assert _step(db, removal_id) is True
        assert _step(db, removal_id) is True
        left = _count(db, events_t.c.id, events_t.c.calendar_id == mirror)
        assert left == EVENTS - 2 * STEP
        wait_for(
            lambda: _count(db, mirror_removals_t.c.id, mirror_removals_t.c.id == removal_id) == 0,
            what="the job done",
        )
        assert _step(db, removal_id) is None  # gone: nothing for the dead runner
        assert _count(db, calendars_t.c.id, calendars_t.c.id == mirror) == 0
        assert _count(db, events_t.c.id, events_t.c.calendar_id == mirror) == 0
        mapped = connection_events_t.c.connection_id == connection_id
        assert _count(db, connection_events_t.c.event_id, mapped) == 0
        # The tombstones are the owner's: a sync from before reports every event deleted.
        tombstones = event_sync_t.c.calendar_id == owner.id, event_sync_t.c.deleted.is_(True)
        assert _count(db, event_sync_t.c.event_id, *tombstones) == EVENTS
        gone, _ = listed(client, reader, syncToken=before)
        assert len([e for e in gone["events"] if e["status"] == "cancelled"]) == EVENTS
        # The busy time stays; details again makes a new mirror.
        assert _count(
            db, connection_busy_t.c.href, connection_busy_t.c.connection_id == connection_id
        )
        show(db, owner, connection_id, "details")
        assert _filled(db, client, reader, connection_id) != mirror


def test_removal_and_a_new_mirror_meanwhile_and_the_copy_go_in_steps(
    live: tuple[Config, Database, RunningServer], factory: Factory
) -> None:
    db = live[1]
    with _connected(live, factory) as (owner, reader, client, connection_id):
        # Busy again and, before its job runs, details again: the new mirror fills while the
        # old one is deleted (the old mapping names none of its events).
        first = _filled(db, client, reader, connection_id)
        _detach_and_claim(
            db,
            lambda conn: (
                _switch(conn, owner.id, connection_id, "busy"),
                _switch(conn, owner.id, connection_id, "details"),
            ),
        )
        second = _filled(db, client, reader, connection_id)
        assert second != first
        wait_for(lambda: db.call(removals.pending) == 0, what="the job done")
        assert _count(db, events_t.c.id, events_t.c.calendar_id == second) == EVENTS
        mapped = connection_events_t.c.connection_id == connection_id
        assert _count(db, connection_events_t.c.event_id, mapped) == EVENTS
        # A front deleting the live mirror directly: 409 read_only_calendar.
        with pytest.raises(ReadOnlyCalendar):
            db.call(delete_calendar_step, user_id=owner.id, calendar_id=second, now=utcnow())
        # Removed: the connection (and its secret) at once; the mirror hidden; then steps.
        before = listed(client, reader, **_window())[0]["nextSyncToken"]
        removal_id = _detach_and_claim(
            db,
            lambda conn: store.remove_connection(
                conn, user_id=owner.id, connection_id=connection_id, now=utcnow()
            ),
        )
        with pytest.raises(NotFound):
            db.call(store.get_connection, user_id=owner.id, connection_id=connection_id)
        assert listed(client, reader, **_window())[0]["events"] == []
        counted = free_busy(client, reader, day(1), day(5))["calendars"]
        assert connection_id not in [c["id"] for c in counted]  # its busy rows left no trace
        steps = 0
        while _step(db, removal_id):
            steps += 1
        # The mirror's events a step, then its mapping and busy rows a step.
        assert steps >= 2 * EVENTS // STEP
        assert _count(db, calendars_t.c.id, calendars_t.c.id == second) == 0
        assert _count(db, connection_events_t.c.event_id, mapped) == 0
        busy = connection_busy_t.c.connection_id == connection_id
        assert _count(db, connection_busy_t.c.href, busy) == 0
        gone, _ = listed(client, reader, syncToken=before)
        assert len([e for e in gone["events"] if e["status"] == "cancelled"]) == EVENTS


def test_two_runners_claiming_at_once_never_both_hold_one_removal(db: Database) -> None:
    """Two hosts' runners ask for a job at the same moment: one of them holds it (the claim is
    one conditional update), the other gets another job or none. The job is parked until an
    hour from now, and the two ask as of then: no other runner of the suite can take it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import update

    later = utcnow() + timedelta(hours=1)

    def parked(conn: Any) -> str:
        made = removals.detach(
            conn, connection_id="con_gone", user_id="usr_gone", removed=True, now=utcnow()
        )
        assert made is not None
        conn.execute(
            update(mirror_removals_t)
            .where(mirror_removals_t.c.id == made)
            .values(runner="parked", lease_until=later)
        )
        return made

    removal_id = db.call(parked)
    start = threading.Barrier(2)

    def take(runner: str) -> str | None:
        start.wait(10)
        return db.call(removals.claim, runner=runner, now=later + timedelta(seconds=1))

    with ThreadPoolExecutor(2) as pool:
        taken = list(pool.map(take, ["host_a", "host_b"]))
    assert taken.count(removal_id) == 1, taken
    held = db.call(
        lambda conn: conn.execute(
            select(mirror_removals_t.c.runner).where(mirror_removals_t.c.id == removal_id)
        ).scalar_one()
    )
    assert held == ["host_a", "host_b"][taken.index(removal_id)]
