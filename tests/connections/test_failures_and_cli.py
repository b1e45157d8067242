"""Connected calendars from the owner's side: the CLI's commands with ``--json`` (URLs masked,
passwords never printed or stored in the clear), the SSRF rules, and failing sources that keep
their last good copy, say why, and tell the owner's webhook once an outage."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from calendar_service.cli import app
from calendar_service.delivery import connections as store
from calendar_service.delivery import webhook_settings, webhook_targets
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.models.connections import connection_busy_t, connections_t
from calendar_service.platform.models.webhooks import deliveries_t
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.connections.sources import PASSWORD, USER, IcsServer, ics_server, radicale_server
from tests.connections.test_polling import calendar, day, vevent
from tests.support import Factory, Owner, fresh_database_url, migrated_database
from webhooks.connections import ConnectionPoller

runner = CliRunner()


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Config, Database]]:
    """A database of its own that no server polls: each poll here is the test's."""
    with fresh_database_url(Path(tmp_path_factory.mktemp("conn"))) as url:
        config = make_config(url, connection_poll=timedelta(seconds=1))
        with migrated_database(config) as db:
            yield config, db


def cli(config: Config, *args: str, code: int = 0, stdin: str | None = None) -> Any:
    env = {"CALENDAR_DATABASE_URL": config.database_url, "CALENDAR_WEBHOOK_ALLOW_LOCAL": "1"}
    result = runner.invoke(app, [*args, "--json"], env=env, input=stdin)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout if code == 0 else result.stderr)


def test_cli_adds_lists_syncs_and_removes_an_ics_source_with_its_secret_url_masked(
    quiet: tuple[Config, Database],
) -> None:
    config, db = quiet
    owner = Factory(db).owner()
    start = day(2).replace(hour=10)
    with ics_server(calendar(vevent("a", start, start + timedelta(hours=1))).encode()) as source:
        [added] = cli(
            config,
            "connections",
            "add-ics",
            "--user",
            owner.email,
            "--url",
            source.url,
            "--name",
            "Google",
        )["connections"]
        assert added["id"].startswith("conn_") and added["status"] == "ok"
        assert added["url"] == source.url.split("/private")[0] + "/…"
        assert added["events"] == 1 and added["visibility"] == "busy"
        assert added["countsForAvailability"] is True and added["syncedAt"] is not None
        listed = cli(config, "connections", "list", "--user", owner.email)
        assert listed == {"connections": [added]}
        sealed = db.call(lambda c: c.execute(select(connections_t.c.url_sealed)).scalars().all())
        assert sealed and all("abc123secret" not in s for s in sealed)
        synced = cli(config, "connections", "sync", added["id"])["connections"][0]
        assert synced["status"] == "ok" and "abc123secret" not in json.dumps(synced)
        assert source.seen[-1].headers["if-none-match"] == source.etag
        assert cli(config, "connections", "remove", added["id"]) == {"removed": added["id"]}
    left = db.call(
        lambda c: c.execute(
            select(connection_busy_t).where(connection_busy_t.c.connection_id == added["id"])
        ).all()
    )
    assert left == []
    assert cli(config, "connections", "list", "--user", owner.email) == {"connections": []}
    gone = cli(config, "connections", "sync", added["id"], code=1)
    assert gone["code"] == "not_found"


def test_cli_adds_a_caldav_calendar_picked_by_name_the_password_from_stdin_never_shown(
    quiet: tuple[Config, Database], tmp_path: Path
) -> None:
    config, db = quiet
    owner = Factory(db).owner()
    with radicale_server(tmp_path) as radicale:
        wrong = cli(
            config,
            "connections",
            "add-caldav",
            "--user",
            owner.email,
            "--url",
            radicale.url,
            "--username",
            USER,
            "--calendar",
            "Home",
            code=2,
            stdin=PASSWORD + "\n",
        )
        assert (
            wrong["errors"][0]["field"] == "--calendar"
            and "'Work'" in wrong["errors"][0]["message"]
        )
        refused = cli(
            config,
            "connections",
            "add-caldav",
            "--user",
            owner.email,
            "--url",
            radicale.url,
            "--username",
            USER,
            code=2,
            stdin="not-the-password\n",
        )
        assert refused["errors"][0]["field"] == "url" and "401" in refused["errors"][0]["message"]
        [added] = cli(
            config,
            "connections",
            "add-caldav",
            "--user",
            owner.email,
            "--url",
            radicale.url,
            "--username",
            USER,
            "--calendar",
            "Work",
            stdin=PASSWORD + "\n",
        )["connections"]
        assert added["kind"] == "caldav" and added["name"] == "Work" and added["status"] == "ok"
        assert added["username"] == USER and PASSWORD not in json.dumps(added)
        stored = db.call(lambda c: c.execute(select(connections_t)).all())
        assert all(PASSWORD not in str(tuple(row)) for row in stored)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/cal.ics", "https://10.1.2.3/cal.ics", "https://[::1]/cal.ics"]
)
def test_a_local_or_private_address_is_refused_unless_local_targets_are_allowed(
    quiet: tuple[Config, Database], url: str
) -> None:
    config, db = quiet
    owner = Factory(db).owner()
    env = {"CALENDAR_DATABASE_URL": config.database_url, "CALENDAR_WEBHOOK_ALLOW_LOCAL": ""}
    result = runner.invoke(
        app, ["connections", "add-ics", "--user", owner.email, "--url", url, "--json"], env=env
    )
    assert result.exit_code == 2, result.output
    refusal = json.loads(result.stderr)
    assert refusal["code"] == "validation_error" and refusal["errors"][0]["field"] == "url"
    assert cli(config, "connections", "list", "--user", owner.email) == {"connections": []}


def poll(config: Config, db: Database, connection_id: str) -> dict[str, Any]:
    async def run() -> None:
        poller = ConnectionPoller(db, config)
        assert await poller.poll_now(connection_id)

    asyncio.run(run())
    return db.call(store.get_connection, user_id=None, connection_id=connection_id)


def hooks(db: Database, owner: Owner) -> list[str]:
    return db.call(
        lambda c: (
            c.execute(
                select(deliveries_t.c.event_type)
                .where(deliveries_t.c.user_id == owner.id)
                .order_by(deliveries_t.c.created_at, deliveries_t.c.id)
            )
            .scalars()
            .all()
        )
    )


def breaks(source: IcsServer, how: str) -> str:
    """Make ``source`` fail as ``how`` says; the words the reason must hold."""
    if how in ("401", "404", "500"):
        source.status = int(how)
        return f"HTTP {how}"
    source.status = 200
    if how == "garbage":
        source.set(b"<html>not a calendar</html>")
        return "could not be read"
    if how == "huge":
        source.set(b"BEGIN:VCALENDAR\r\n" + b"X-PAD:" + b"x" * (11 * 1024 * 1024) + b"\r\n")
        return "MiB"
    if how == "hostile-rule":
        source.set(
            calendar(
                vevent("h", day(1), day(1) + timedelta(hours=1), extra="RRULE:FREQ=SECONDLY\r\n")
            ).encode()
        )
        return ""
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["401", "404", "500", "garbage", "huge"])
def test_a_failing_source_keeps_its_last_good_copy_and_tells_the_webhook_once_an_outage(
    quiet: tuple[Config, Database], how: str
) -> None:
    config, db = quiet
    owner = Factory(db).owner()
    target = webhook_targets.check_endpoint_url(
        "http://127.0.0.1:9/hook", allow_local=True, resolve=webhook_targets.system_resolve
    )
    db.call(webhook_settings.set_endpoint, user_id=owner.id, target=target, now=utcnow())
    start = day(2).replace(hour=10)
    good = calendar(vevent("a", start, start + timedelta(hours=1))).encode()
    with ics_server(good) as source:
        [added] = cli(config, "connections", "add-ics", "--user", owner.email, "--url", source.url)[
            "connections"
        ]
        copy = db.call(lambda c: c.execute(select(connection_busy_t)).all())
        words = breaks(source, how)
        for _ in range(2):  # two failing polls: one webhook
            failing = poll(config, db, added["id"])
            assert failing["status"] == "failing" and words in failing["lastError"]
            assert failing["syncedAt"] == added["syncedAt"] and failing["events"] == 1
            assert db.call(lambda c: c.execute(select(connection_busy_t)).all()) == copy
        assert "abc123secret" not in failing["lastError"]
        source.status = 200
        source.set(good + b"\r\n")
        recovered = poll(config, db, added["id"])
        assert recovered["status"] == "ok" and "lastError" not in recovered
    assert hooks(db, owner) == ["calendar.connection.failing", "calendar.connection.recovered"]


def test_an_unreachable_host_is_failing_with_a_reason_and_a_hostile_rule_is_left_out(
    quiet: tuple[Config, Database],
) -> None:
    config, db = quiet
    owner = Factory(db).owner()
    with ics_server(calendar().encode()) as source:
        [added] = cli(config, "connections", "add-ics", "--user", owner.email, "--url", source.url)[
            "connections"
        ]
        assert added["status"] == "ok" and added["events"] == 0
        breaks(source, "hostile-rule")
        kept = poll(config, db, added["id"])
        assert kept["status"] == "ok" and kept["events"] == 0  # the rule is refused, as on import
    failing = poll(config, db, added["id"])  # the server is gone
    assert (
        failing["status"] == "failing" and "could not connect to 127.0.0.1" in failing["lastError"]
    )


HOSTILE_ZONE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
    "BEGIN:VTIMEZONE\r\nTZID:Hostile\r\nBEGIN:STANDARD\r\nDTSTART:16010101T000000\r\n"
    "RRULE:FREQ=SECONDLY\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0000\r\nEND:STANDARD\r\n"
    "BEGIN:DAYLIGHT\r\nDTSTART:16010101T000001\r\nRRULE:FREQ=SECONDLY\r\n"
    "TZOFFSETFROM:+0000\r\nTZOFFSETTO:+0100\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n"
    "BEGIN:VEVENT\r\nUID:z\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Hostile:20270105T100000\r\n"
    "DTEND;TZID=Hostile:20270105T110000\r\nSUMMARY:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


def test_a_hostile_vtimezone_is_read_with_bounded_work_and_its_events_left_out(
    quiet: tuple[Config, Database],
) -> None:
    config, db = quiet
    owner = Factory(db).owner()
    with ics_server(HOSTILE_ZONE.encode()) as source:
        [added] = cli(config, "connections", "add-ics", "--user", owner.email, "--url",
                      source.url)["connections"]  # fmt: skip
    assert added["status"] == "ok" and added["events"] == 0
