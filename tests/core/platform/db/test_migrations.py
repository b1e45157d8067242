"""Migrations that move data, checked on a database written by the revision before."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import IntegrityError

from calendar_service.calendar.events.search import (
    KEY_MASK,
    PARTS,
    index_part,
    key_range,
    write_pending_words,
)
from calendar_service.platform.config import Config
from calendar_service.platform.db.engine import SEARCH_WORDS_AT, make_engine
from calendar_service.platform.migrate import alembic_config
from tests.support import fresh_database_url

Step = Callable[[Any, str], None]  # command.upgrade or command.downgrade
Migrate = Callable[[Step, str], None]


def _migrator(url: str, engine: Engine) -> Migrate:
    """Runs an Alembic step to a revision on ``engine`` (the database at ``url``)."""
    cfg = alembic_config(url)

    def migrate(step: Step, revision: str) -> None:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            step(cfg, revision)

    return migrate


@contextmanager
def _database_at(tmp_path: Path, revision: str) -> Iterator[tuple[Engine, Migrate]]:
    """A fresh database of the backend under test (as the service makes its engine: foreign
    keys on), migrated up to ``revision``, and what migrates it on."""
    with fresh_database_url(tmp_path) as url:
        engine = make_engine(Config(database_url=url))
        migrate = _migrator(url, engine)
        migrate(command.upgrade, revision)
        yield engine, migrate


def _owner(conn: Connection, at: str) -> None:
    """The owner ``usr_1`` (a@x.test), made at ``at``."""
    conn.execute(
        text("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@x.test', :at)"),
        {"at": at},
    )


def _calendar(conn: Connection, at: str, *, default: bool = True) -> None:
    """``cal_1``, the owner's calendar "Work" (UTC; its default one unless ``default`` is
    false), made at ``at``."""
    conn.execute(
        text(
            "INSERT INTO calendars (id, user_id, name, time_zone, is_default, "
            "max_event_seconds, created_at) "
            "VALUES ('cal_1', 'usr_1', 'Work', 'UTC', :default, 3600, :at)"
        ),
        {"at": at, "default": default},
    )


def _sqlite_at(tmp_path: Path, revision: str) -> tuple[Path, Engine, Migrate]:
    """A SQLite file migrated up to ``revision``, its engine, and what migrates it on."""
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    migrate = _migrator(url, engine)
    migrate(command.upgrade, revision)
    return path, engine, migrate


def test_0002_rewrites_sqlite_times_written_before_as_rfc3339_and_back(tmp_path: Path) -> None:
    path, engine, migrate = _sqlite_at(tmp_path, "0001")
    raw = sqlite3.connect(path)
    raw.execute(
        "INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@example.com', "
        "'2026-03-02 08:30:00.250000')"
    )
    raw.execute(
        "INSERT INTO calendars (id, user_id, name, time_zone, is_default, max_event_seconds, "
        "created_at) VALUES ('cal_1', 'usr_1', 'Work', 'UTC', 1, 3600, "
        "'2026-03-02 08:30:00.000000')"
    )
    raw.commit()
    migrate(command.upgrade, "head")
    assert raw.execute("SELECT created_at FROM users").fetchone() == (
        "2026-03-02T08:30:00.250000Z",
    )
    assert raw.execute("SELECT created_at FROM calendars").fetchone() == (
        "2026-03-02T08:30:00.000000Z",
    )
    migrate(command.downgrade, "0001")
    assert raw.execute("SELECT created_at FROM users").fetchone() == ("2026-03-02 08:30:00.250000",)
    raw.close()
    engine.dispose()


def test_0007_makes_every_existing_event_opaque_and_its_downgrade_drops_free_busy_keys(
    tmp_path: Path,
) -> None:
    path, engine, migrate = _sqlite_at(tmp_path, "0006")
    raw = sqlite3.connect(path)
    at = "2026-03-02T08:30:00.000000Z"
    raw.execute("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@x.test', ?)", (at,))
    raw.execute(
        "INSERT INTO calendars (id, user_id, name, time_zone, is_default, max_event_seconds, "
        "created_at) VALUES ('cal_1', 'usr_1', 'Work', 'UTC', 1, 3600, ?)",
        (at,),
    )
    raw.execute(
        "INSERT INTO events (id, calendar_id, title, starts_at, ends_at, all_day, created_at, "
        "updated_at, status) VALUES ('ev_1', 'cal_1', 'Old', ?, ?, 0, ?, ?, 'confirmed')",
        (at, at, at, at),
    )
    raw.commit()
    migrate(command.upgrade, "head")
    assert raw.execute("SELECT transparency FROM events").fetchall() == [("opaque",)]
    for key, permission in (("key_r", "read"), ("key_f", "freebusy")):
        raw.execute(
            "INSERT INTO api_keys (id, user_id, name, prefix, secret_hash, permission, "
            "created_at, expires_at) VALUES (?, 'usr_1', 'k', 'calsk_', ?, ?, ?, ?)",
            (key, key, permission, at, at),
        )
    raw.execute(
        "INSERT INTO calls (key_id, at, transport, operation, method, path, status, latency_ms) "
        "VALUES ('key_f', ?, 'rest', 'queryFreeBusy', 'POST', '/x', 200, 1.0)",
        (at,),
    )
    raw.commit()
    migrate(command.downgrade, "0006")
    assert raw.execute("SELECT id FROM api_keys").fetchall() == [("key_r",)]
    assert raw.execute("SELECT count(*) FROM calls").fetchone() == (0,)
    assert raw.execute("SELECT title FROM events").fetchall() == [("Old",)]
    raw.close()
    engine.dispose()


def test_0013_keeps_keys_and_feeds_of_a_deleted_calendar_with_their_history_and_back(
    tmp_path: Path,
) -> None:
    """On either backend: after 0013 a calendar that keys and feeds (with calls and fetches)
    name can be deleted and they keep its id; new columns are empty; the downgrade gives the
    keys no calendar and drops the feeds, as before 0013, and the upgrade runs again."""
    with _database_at(tmp_path, "0012") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        rows = [
            "INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@x.test', :at)",
            "INSERT INTO calendars (id, user_id, name, time_zone, is_default, max_event_seconds, "
            "created_at) VALUES ('cal_1', 'usr_1', 'Work', 'UTC', false, 0, :at)",
            "INSERT INTO api_keys (id, user_id, name, prefix, secret_hash, permission, "
            "calendar_id, created_at, expires_at, revoked_at) VALUES ('key_1', 'usr_1', 'k', "
            "'calsk_', 'h1', 'read', 'cal_1', :at, :at, :at)",
            "INSERT INTO calls (key_id, at, transport, operation, method, path, status, "
            "latency_ms) VALUES ('key_1', :at, 'rest', 'listEvents', 'GET', '/x', 200, 1.0)",
            "INSERT INTO ical_feeds (id, user_id, calendar_id, token_hash, prefix, created_at, "
            "revoked_at) VALUES ('fd_1', 'usr_1', 'cal_1', 'h2', 'p', :at, :at)",
            "INSERT INTO ical_feed_fetches (feed_id, at, status, events) "
            "VALUES ('fd_1', :at, 200, 0)",
        ]
        with engine.begin() as conn:
            for row in rows:
                conn.execute(text(row), {"at": at})
        migrate(command.upgrade, "head")
        with engine.begin() as conn:
            assert conn.execute(text("SELECT revoked_by FROM api_keys")).all() == [(None,)]
            assert conn.execute(text("SELECT color FROM calendars")).all() == [(None,)]
            conn.execute(text("DELETE FROM calendars WHERE id = 'cal_1'"))
        with engine.begin() as conn:
            assert conn.execute(text("SELECT calendar_id FROM api_keys")).all() == [("cal_1",)]
            assert conn.execute(text("SELECT calendar_id FROM ical_feeds")).all() == [("cal_1",)]
            assert conn.execute(text("SELECT count(*) FROM ical_feed_fetches")).scalar() == 1
            assert conn.execute(text("SELECT count(*) FROM calls")).scalar() == 1
            # the tables that refer to the rebuilt ones still do
            with pytest.raises(IntegrityError), conn.begin_nested():
                conn.execute(text("DELETE FROM api_keys"))
        migrate(command.downgrade, "0012")
        with engine.begin() as conn:
            assert conn.execute(text("SELECT id, calendar_id FROM api_keys")).all() == [
                ("key_1", None)
            ]
            assert conn.execute(text("SELECT count(*) FROM ical_feeds")).scalar() == 0
            assert conn.execute(text("SELECT count(*) FROM calls")).scalar() == 1
        migrate(command.upgrade, "head")
        engine.dispose()


def test_0015_keeps_the_owners_endpoint_adds_subscriptions_and_back(tmp_path: Path) -> None:
    """On either backend: the owner's endpoint (and its deliveries) stay the owner's (``key_id``
    NULL), still one an owner; a key's subscription may be added beside it; the downgrade drops
    the subscriptions with their deliveries and puts ``UNIQUE (user_id)`` back."""
    with _database_at(tmp_path, "0013") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        endpoint = (
            "INSERT INTO webhook_endpoints (id, user_id, url, secret, status, created_at, "
            "updated_at{extra}) VALUES (:id, 'usr_1', 'https://x.test/', 's', 'active', :at, "
            ":at{values})"
        )
        delivery = (
            "INSERT INTO webhook_deliveries (id, user_id, endpoint_id, event_type, payload, "
            "status, attempts, next_attempt_at, created_at) VALUES (:id, 'usr_1', :endpoint, "
            "'calendar.event.created', '{}', 'succeeded', 1, :at, :at)"
        )
        with engine.begin() as conn:
            _owner(conn, at)
            conn.execute(text(endpoint.format(extra="", values="")), {"id": "whe_1", "at": at})
            conn.execute(text(delivery), {"id": "evt_1", "endpoint": "whe_1", "at": at})
        migrate(command.upgrade, "head")
        subscription = endpoint.format(extra=", key_id", values=", 'key_1'")
        with engine.begin() as conn:
            assert conn.execute(text("SELECT id, key_id FROM webhook_endpoints")).all() == [
                ("whe_1", None)
            ]
            conn.execute(text(subscription), {"id": "sub_1", "at": at})
            conn.execute(text(delivery), {"id": "evt_2", "endpoint": "sub_1", "at": at})
            with pytest.raises(IntegrityError), conn.begin_nested():  # one owner endpoint
                conn.execute(text(endpoint.format(extra="", values="")), {"id": "whe_2", "at": at})
        migrate(command.downgrade, "0013")
        with engine.begin() as conn:
            assert conn.execute(text("SELECT id FROM webhook_endpoints")).all() == [("whe_1",)]
            assert conn.execute(text("SELECT id FROM webhook_deliveries")).all() == [("evt_1",)]
            with pytest.raises(IntegrityError), conn.begin_nested():
                conn.execute(text(endpoint.format(extra="", values="")), {"id": "whe_2", "at": at})
        migrate(command.upgrade, "head")
        engine.dispose()


def test_0017_indexes_the_events_already_there_keeps_step_and_goes_back(tmp_path: Path) -> None:
    path, engine, migrate = _sqlite_at(tmp_path, "0006")
    raw = sqlite3.connect(path)
    at = "2026-03-02T08:30:00.000000Z"
    raw.execute("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@x.test', ?)", (at,))
    raw.execute(
        "INSERT INTO calendars (id, user_id, name, time_zone, is_default, max_event_seconds, "
        "created_at) VALUES ('cal_1', 'usr_1', 'Work', 'UTC', 1, 3600, ?)",
        (at,),
    )
    for event_id, title, location in (("ev_1", "Café", "Zürich"), ("ev_2", "Dentist", None)):
        raw.execute(
            "INSERT INTO events (id, calendar_id, title, starts_at, ends_at, all_day, "
            "created_at, updated_at, status, location) "
            "VALUES (?, 'cal_1', ?, ?, ?, 0, ?, ?, 'confirmed', ?)",
            (event_id, title, at, at, at, at, location),
        )
    raw.commit()
    migrate(command.upgrade, "0020")

    def found(words: str) -> list[str]:
        return [
            row[0]
            for row in raw.execute(
                "SELECT id FROM events WHERE rowid IN "
                "(SELECT rowid FROM events_search WHERE events_search MATCH ?) ORDER BY id",
                (words,),
            )
        ]

    assert found('"cafe" "zurich"*') == ["ev_1"]
    assert found('"denti"*') == ["ev_2"]
    raw.execute("UPDATE events SET title = 'Orthodontist', location = 'Bern' WHERE id = 'ev_2'")
    raw.execute("DELETE FROM events WHERE id = 'ev_1'")
    raw.commit()
    assert found('"denti"*') == [] and found('"cafe"*') == []
    assert found('"bern" "orthodontist"*') == ["ev_2"]
    migrate(command.downgrade, "0016")
    names = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
    assert not {n for n in names if n.startswith("events_search")}, names
    raw.close()
    engine.dispose()


def test_0020_indexes_the_attendees_of_the_events_already_there_and_goes_back(
    tmp_path: Path,
) -> None:
    """On either backend: the events there before 0020 are found by their attendees' names and
    emails (nothing else of the JSON), a change of the attendees alone follows, and the
    downgrade searches title, description and location only, as 0017 did."""
    people = (
        '{"organizer": {"email": "a@x.test", "name": "a@x.test"}, "attendees": '
        '[{"email": "ana@example.com", "name": "Ana Lima", "responseStatus": "needsAction"}], '
        '"sequence": 0}'
    )
    with _database_at(tmp_path, "0019") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        with engine.begin() as conn:
            _owner(conn, at)
            _calendar(conn, at)
            for event_id, title, attendees in (
                ("ev_1", "Review", people),
                ("ev_2", "Dentist", None),
            ):
                conn.execute(
                    text(
                        "INSERT INTO events (id, calendar_id, title, starts_at, ends_at, all_day, "
                        "created_at, updated_at, status, attendees) VALUES "
                        "(:id, 'cal_1', :title, :at, :at, false, :at, :at, 'confirmed', :people)"
                    ),
                    {"id": event_id, "title": title, "at": at, "people": attendees},
                )
        migrate(command.upgrade, "0020")
        sqlite = engine.dialect.name == "sqlite"

        def found(words: str, *, head: bool = True) -> list[str]:
            if sqlite:
                quoted = " ".join(f'"{w}"' for w in words.split())
                where = "rowid IN (SELECT rowid FROM events_search WHERE events_search MATCH :q)"
            else:
                quoted = words
                columns = "title, description, location" + (", attendees" if head else "")
                where = f"calendar_search_vector({columns}) @@ calendar_search_query(:q)"
            query = f"SELECT id FROM events WHERE {where} ORDER BY id"  # noqa: S608
            with engine.connect() as conn:
                return list(conn.execute(text(query), {"q": quoted}).scalars())

        assert found("lima") == ["ev_1"] and found("example ana") == ["ev_1"]
        assert found("review") == ["ev_1"] and found("dentist") == ["ev_2"]
        assert found("needsaction") == [] and found("x") == []  # no keys, no organizer
        with engine.begin() as conn:
            conn.execute(text("UPDATE events SET attendees = :p WHERE id = 'ev_2'"), {"p": people})
            conn.execute(text("UPDATE events SET attendees = NULL WHERE id = 'ev_1'"))
        assert found("lima") == ["ev_2"] and found("review") == ["ev_1"]
        migrate(command.downgrade, "0019")
        assert found("lima", head=False) == [] and found("review", head=False) == ["ev_1"]
        with engine.begin() as conn:
            conn.execute(text("UPDATE events SET title = 'Dentistry' WHERE id = 'ev_2'"))
        assert found("dentistry", head=False) == ["ev_2"]
        migrate(command.upgrade, "0020")
        assert found("lima") == ["ev_2"]
        engine.dispose()


def test_0021_keys_the_index_by_calendar_for_the_events_already_there_and_goes_back(
    tmp_path: Path,
) -> None:
    """On either backend: the events there before 0021 are found within their calendar only
    (SQLite: by the range of its search keys; PostgreSQL: by its calendar's words), a change of
    an event's words or calendar follows, a delete removes it, and the downgrade searches as
    0020 did."""
    with _database_at(tmp_path, "0020") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        with engine.begin() as conn:
            _owner(conn, at)
            for calendar_id, name in (("cal_1", "Work"), ("cal_2", "Home")):
                conn.execute(
                    text(
                        "INSERT INTO calendars (id, user_id, name, time_zone, is_default, "
                        "max_event_seconds, created_at) "
                        "VALUES (:id, 'usr_1', :name, 'UTC', false, 3600, :at)"
                    ),
                    {"id": calendar_id, "name": name, "at": at},
                )
            for event_id, calendar_id, title in (
                ("ev_1", "cal_1", "Dentist Müller"),
                ("ev_2", "cal_2", "Dentist Ana"),
            ):
                conn.execute(
                    text(
                        "INSERT INTO events (id, calendar_id, title, starts_at, ends_at, all_day, "
                        "created_at, updated_at, status) VALUES "
                        "(:id, :cal, :title, :at, :at, false, :at, :at, 'confirmed')"
                    ),
                    {"id": event_id, "cal": calendar_id, "title": title, "at": at},
                )
        migrate(command.upgrade, "head")
        sqlite = engine.dialect.name == "sqlite"

        def found(words: str, calendar_id: str) -> list[str]:
            params: dict[str, Any] = {"c": calendar_id}
            if sqlite:
                params["q"] = " ".join(f'"{w}"' for w in words.split()) + "*"
                params["low"], params["high"] = key_range([calendar_id])
                table = f"events_search_{index_part(calendar_id)}"
                where = (
                    f"rowid IN (SELECT rowid & {KEY_MASK} FROM {table} WHERE "  # noqa: S608
                    f"{table} MATCH :q AND rowid >= :low AND rowid < :high)"
                )
            else:
                params["q"] = words
                where = (
                    "calendar_search_keyed(calendar_id, title, description, location, attendees) "
                    "@@ calendar_search_keyed_query(:q, :c)"
                )
            query = f"SELECT id FROM events WHERE calendar_id = :c AND {where} ORDER BY id"  # noqa: S608
            with engine.begin() as conn:
                write_pending_words(conn)  # as a search does
                return list(conn.execute(text(query), params).scalars())

        assert found("denti", "cal_1") == ["ev_1"] and found("dentist", "cal_2") == ["ev_2"]
        assert found("muller", "cal_1") == ["ev_1"] and found("muller", "cal_2") == []
        with engine.begin() as conn:
            conn.execute(text("UPDATE events SET calendar_id = 'cal_2' WHERE id = 'ev_1'"))
            conn.execute(text("UPDATE events SET title = 'Orthodontist' WHERE id = 'ev_2'"))
        assert found("muller", "cal_1") == [] and found("muller", "cal_2") == ["ev_1"]
        assert found("dentist", "cal_2") == ["ev_1"] and found("ortho", "cal_2") == ["ev_2"]
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM events WHERE id = 'ev_1'"))
        assert found("muller", "cal_2") == [] and found("ortho", "cal_2") == ["ev_2"]
        migrate(command.downgrade, "0020")
        if sqlite:
            where = "rowid IN (SELECT rowid FROM events_search WHERE events_search MATCH :q)"
            q = '"ortho"*'
        else:
            where = (
                "calendar_search_vector(title, description, location, attendees) "
                "@@ calendar_search_query(:q)"
            )
            q = "ortho"
        with engine.connect() as conn:
            rows = conn.execute(text(f"SELECT id FROM events WHERE {where}"), {"q": q}).scalars()  # noqa: S608
            assert list(rows) == ["ev_2"]
        engine.dispose()


@pytest.mark.sqlite
def test_0022_keeps_the_search_words_pending_until_a_search_and_goes_back(tmp_path: Path) -> None:
    """SQLite: the triggers leave an event's words pending in the write's transaction; a
    search moves them into the index first (found at once, nothing left pending), and so does
    the service's commit once ``SEARCH_WORDS_AT`` are waiting; a rolled-back write leaves
    nothing; an insert, an update and a delete in one transaction keep the index whole (FTS5's
    integrity check); a write made outside the service is found by the next search; the
    downgrade writes what is pending and brings 0021's triggers back."""
    path = tmp_path / "words.db"
    url = f"sqlite:///{path}"
    engine = make_engine(Config(database_url=url))
    migrate = _migrator(url, engine)
    migrate(command.upgrade, "head")
    at = "2026-03-02T08:30:00.000000Z"
    part = index_part("cal_1")
    table = f"events_search_{part}"
    insert = (
        "INSERT INTO events (id, calendar_id, title, starts_at, ends_at, all_day, created_at, "
        "updated_at, status) VALUES (:id, 'cal_1', :title, :at, :at, false, :at, :at, 'confirmed')"
    )

    def found(word: str) -> list[str]:
        low, high = key_range(["cal_1"])
        query = (
            f"SELECT id FROM events WHERE rowid IN (SELECT rowid & {KEY_MASK} FROM {table} "  # noqa: S608
            f"WHERE {table} MATCH :q AND rowid >= :low AND rowid < :high) ORDER BY id"
        )
        with engine.begin() as conn:
            write_pending_words(conn)  # as a search does
            rows = conn.execute(text(query), {"q": f'"{word}"*', "low": low, "high": high})
            return list(rows.scalars())

    def pending() -> int:
        with engine.connect() as conn:
            return int(
                conn.execute(text("SELECT count(*) FROM events_search_pending")).scalar_one()
            )

    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO users (id, email, created_at) VALUES ('usr_1', 'a@x.test', :at)"),
            {"at": at},
        )
        conn.execute(
            text(
                "INSERT INTO calendars (id, user_id, name, time_zone, is_default, "
                "max_event_seconds, created_at) VALUES ('cal_1', 'usr_1', 'Work', 'UTC', false, "
                "3600, :at)"
            ),
            {"at": at},
        )
        conn.execute(text(insert), {"id": "ev_1", "title": "Dentist Müller", "at": at})
    assert pending() == 1
    assert found("dentist") == ["ev_1"] and pending() == 0

    with pytest.raises(RuntimeError), engine.begin() as conn:
        conn.execute(text(insert), {"id": "ev_2", "title": "Rolled back", "at": at})
        raise RuntimeError("roll back")
    assert found("rolled") == [] and pending() == 0

    with engine.begin() as conn:
        conn.execute(text(insert), {"id": "ev_3", "title": "Barber", "at": at})
        conn.execute(text("UPDATE events SET title = 'Haircut' WHERE id = 'ev_3'"))
        conn.execute(text("UPDATE events SET title = 'Orthodontist' WHERE id = 'ev_1'"))
        conn.execute(text(insert), {"id": "ev_4", "title": "Gone", "at": at})
        conn.execute(text("DELETE FROM events WHERE id = 'ev_4'"))
    assert found("barber") == [] and found("haircut") == ["ev_3"]
    assert found("dentist") == [] and found("ortho") == ["ev_1"] and found("gone") == []
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO {table}({table}) VALUES ('integrity-check')"))  # noqa: S608

    outside = sqlite3.connect(path)
    with outside:
        outside.execute(
            "INSERT INTO events (id, calendar_id, title, starts_at, ends_at, all_day, "
            "created_at, updated_at, status) "
            "VALUES ('ev_5', 'cal_1', 'Vaccination', ?, ?, 0, ?, ?, 'confirmed')",
            (at, at, at, at),
        )
    outside.close()
    assert pending() == 1
    with engine.begin() as conn:  # a commit of the service with few words waiting
        conn.execute(text("UPDATE users SET email = 'b@x.test' WHERE id = 'usr_1'"))
    assert pending() == 1
    assert found("vacc") == ["ev_5"] and pending() == 0

    with engine.begin() as conn:  # many words waiting: the commit moves them
        for n in range(SEARCH_WORDS_AT):
            conn.execute(text(insert), {"id": f"ev_many_{n}", "title": f"Many {n}", "at": at})
    assert pending() == 0
    with engine.connect() as conn:  # in the index itself, without a search's move
        moved = conn.execute(
            text(f"SELECT count(*) FROM {table} WHERE {table} MATCH 'many'")  # noqa: S608
        ).scalar_one()
    assert moved == SEARCH_WORDS_AT

    for title in ("Trim", "Shave"):  # changes of several commits wait, in order
        with engine.begin() as conn:
            conn.execute(text("UPDATE events SET title = :t WHERE id = 'ev_3'"), {"t": title})
    assert pending() == 4  # each change: its old words out, its new words in
    assert found("haircut") == [] and found("trim") == [] and found("shave") == ["ev_3"]
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO {table}({table}) VALUES ('integrity-check')"))  # noqa: S608

    outside = sqlite3.connect(path)
    with outside:
        outside.execute("UPDATE events SET title = 'Checkup' WHERE id = 'ev_5'")
    outside.close()
    migrate(command.downgrade, "0021")
    assert found("checkup") == ["ev_5"] and found("vacc") == []
    with engine.begin() as conn:
        names = set(conn.execute(text("SELECT name FROM sqlite_master")).scalars())
        conn.execute(text("UPDATE events SET title = 'Dentist' WHERE id = 'ev_1'"))
    assert "events_search_pending" not in names and f"{table}_insert" in names
    assert found("dentist") == ["ev_1"] and found("ortho") == []
    engine.dispose()


def test_0023_keeps_only_the_exceptions_in_ix_events_recurring_and_goes_back(
    tmp_path: Path,
) -> None:
    """On either backend: after 0023 ``ix_events_recurring`` is partial (the exceptions only)
    and still chosen for a series' exceptions, ``ix_event_sync_changed_at`` is gone; the
    downgrade brings both back as they were, and the upgrade runs again."""
    with _database_at(tmp_path, "0023") as (engine, migrate):
        sqlite = engine.dialect.name == "sqlite"

        def indexes() -> dict[str, str]:
            query = (
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                if sqlite
                else "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = current_schema()"
            )
            with engine.connect() as conn:
                return {name: sql for name, sql in conn.execute(text(query)).all()}

        def plan() -> str:
            query = "SELECT id FROM events WHERE recurring_event_id = 'ev_1'"
            with engine.begin() as conn:
                if sqlite:
                    rows = conn.execute(text(f"EXPLAIN QUERY PLAN {query}")).all()
                    return " ".join(str(row[-1]) for row in rows)
                conn.execute(text("SET LOCAL enable_seqscan = off"))
                return " ".join(str(r[0]) for r in conn.execute(text(f"EXPLAIN {query}")).all())

        found = indexes()
        assert "recurring_event_id IS NOT NULL" in found["ix_events_recurring"].replace("(", "")
        assert "ix_event_sync_changed_at" not in found
        assert "ix_events_recurring" in plan()
        migrate(command.downgrade, "0022")
        found = indexes()
        assert "WHERE" not in found["ix_events_recurring"].upper()
        assert "ix_event_sync_changed_at" in found
        migrate(command.upgrade, "head")
        assert "ix_event_sync_changed_at" not in indexes()
        engine.dispose()


def test_0026_keeps_the_names_apps_give_caldav_objects_and_goes_back(tmp_path: Path) -> None:
    """On either backend: the import records there before 0026 keep their objects at
    ``<UID>.ics`` (no name), a name is kept and found by the partial index, and the downgrade
    drops both (the records stay)."""
    with _database_at(tmp_path, "0023") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        with engine.begin() as conn:
            _owner(conn, at)
            _calendar(conn, at)
            conn.execute(
                text(
                    "INSERT INTO ical_uids (calendar_id, uid_hash, uid, event_id) "
                    "VALUES ('cal_1', 'h1', 'uid-1', 'ev_1')"
                )
            )
        migrate(command.upgrade, "0026")
        sqlite = engine.dialect.name == "sqlite"

        def columns() -> set[str]:
            query = (
                "SELECT name FROM pragma_table_info('ical_uids')"
                if sqlite
                else "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'ical_uids' AND table_schema = current_schema()"
            )
            with engine.connect() as conn:
                return set(conn.execute(text(query)).scalars())

        def index() -> str | None:
            query = (
                "SELECT sql FROM sqlite_master WHERE name = 'ix_ical_uids_object_name'"
                if sqlite
                else "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_ical_uids_object_name'"
            )
            with engine.connect() as conn:
                found = conn.execute(text(query)).scalar()
            return None if found is None else str(found)

        with engine.begin() as conn:
            assert conn.execute(text("SELECT object_name FROM ical_uids")).all() == [(None,)]
            conn.execute(
                text(
                    "INSERT INTO ical_uids (calendar_id, uid_hash, uid, event_id, object_name) "
                    "VALUES ('cal_1', 'h2', 'uid-2', 'ev_2', 'Réunion du lundi')"
                )
            )
            named = conn.execute(
                text(
                    "SELECT event_id FROM ical_uids WHERE calendar_id = 'cal_1' "
                    "AND object_name = 'Réunion du lundi'"
                )
            ).scalars()
            assert list(named) == ["ev_2"]
        made = index()
        assert made is not None and "object_name IS NOT NULL" in made.replace("(", "").replace(
            ")", ""
        )
        migrate(command.downgrade, "0023")
        assert "object_name" not in columns() and index() is None
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM ical_uids")).scalar() == 2
        migrate(command.upgrade, "head")
        assert "object_name" in columns() and index() is not None
        engine.dispose()


def test_0025_indexes_a_sharp_s_and_ligatures_as_their_letters_and_goes_back(
    tmp_path: Path,
) -> None:
    """On either backend: an event written before 0025 with "Straße" and "ﬁsh" is found by
    ``strasse`` and ``fish`` after it (the index built anew: SQLite's triggers and PostgreSQL's
    ``calendar_search_fold`` fold ``ß``, ``ẞ`` and the ligatures), so are the events written
    after it, an update and a delete keep the index whole; the downgrade indexes the text as it
    is again (``straße`` found, ``strasse`` not)."""
    with _database_at(tmp_path, "0023") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        insert = (
            "INSERT INTO events (id, calendar_id, title, description, starts_at, ends_at, "
            "all_day, created_at, updated_at, status) VALUES "
            "(:id, 'cal_1', :title, :description, :at, :at, false, :at, :at, 'confirmed')"
        )
        with engine.begin() as conn:
            _owner(conn, at)
            _calendar(conn, at, default=False)
            conn.execute(
                text(insert),
                {"id": "ev_1", "title": "Straße fest", "description": "ﬁsh ﬓ", "at": at},
            )
            conn.execute(
                text(insert), {"id": "ev_2", "title": "GROẞE Party", "description": None, "at": at}
            )
        sqlite = engine.dialect.name == "sqlite"

        def found(words: str) -> list[str]:
            if sqlite:
                table = f"events_search_{index_part('cal_1')}"
                low, high = key_range(["cal_1"])
                params: dict[str, Any] = {"low": low, "high": high}
                params["q"] = " ".join(f'"{w}"' for w in words.split()) + "*"
                where = (
                    f"rowid IN (SELECT rowid & {KEY_MASK} FROM {table} WHERE "  # noqa: S608
                    f"{table} MATCH :q AND rowid >= :low AND rowid < :high)"
                )
            else:
                params = {"q": words}
                where = (
                    "calendar_search_keyed(calendar_id, title, description, location, attendees) "
                    "@@ calendar_search_keyed_query(:q, 'cal_1')"
                )
            query = f"SELECT id FROM events WHERE {where} ORDER BY id"  # noqa: S608
            with engine.begin() as conn:
                write_pending_words(conn)  # as a search does
                return list(conn.execute(text(query), params).scalars())

        def whole() -> None:
            if sqlite:
                with engine.begin() as conn:
                    write_pending_words(conn)
                    for n in range(PARTS):
                        check = f"INSERT INTO events_search_{n}(events_search_{n}) VALUES "  # noqa: S608
                        conn.execute(text(check + "('integrity-check')"))

        def fold(words: str) -> str:  # PostgreSQL
            with engine.connect() as conn:
                return str(
                    conn.execute(text("SELECT calendar_search_fold(:w)"), {"w": words}).scalar()
                )

        # Before: SQLite indexes ß as it is; PostgreSQL's unaccent (where the server has it)
        # folds ß, not the Armenian ligatures.
        assert found("straße") == ["ev_1"] and found("մն") == []
        assert found("strasse") == ([] if sqlite else ["ev_1"])
        migrate(command.upgrade, "head")
        assert found("strasse") == ["ev_1"] and found("fish") == ["ev_1"]
        assert found("մն") == ["ev_1"] and found("grosse") == ["ev_2"]
        with engine.begin() as conn:
            conn.execute(
                text(insert), {"id": "ev_3", "title": "Fußweg", "description": "ﬂat", "at": at}
            )
            conn.execute(text("UPDATE events SET title = 'Gasse' WHERE id = 'ev_1'"))
            conn.execute(text("DELETE FROM events WHERE id = 'ev_2'"))
        assert found("fussweg flat") == ["ev_3"] and found("strasse") == []
        assert found("gasse fish") == ["ev_1"] and found("grosse") == []
        whole()
        if not sqlite:
            assert fold("STRAẞE ﬆ ﬗ") == "strasse st մխ"
        migrate(command.downgrade, "0023")
        assert found("fußweg") == ["ev_3"]
        if sqlite:
            assert found("fussweg") == []
        else:
            assert fold("ﬗ") == "ﬗ"
        with engine.begin() as conn:
            conn.execute(text("UPDATE events SET title = 'Maßband' WHERE id = 'ev_3'"))
        assert found("maßband") == ["ev_3"] and found("fußweg") == []
        whole()
        engine.dispose()


@pytest.mark.postgresql
def test_0025_folds_a_sharp_s_on_a_postgresql_without_unaccent_too(tmp_path: Path) -> None:
    """PostgreSQL without ``unaccent`` (not installed, or not allowed): 0017's ``translate``
    fallback kept ``ß`` and the ligatures; after 0025 ``strasse`` finds "Straße" there too."""
    with _database_at(tmp_path, "head") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        with engine.begin() as conn:
            _owner(conn, at)
            _calendar(conn, at, default=False)
            conn.execute(
                text(
                    "INSERT INTO events (id, calendar_id, title, description, starts_at, "
                    "ends_at, all_day, created_at, updated_at, status) VALUES ('ev_1', 'cal_1', "
                    "'Straße fest', 'ﬁsh', :at, :at, false, :at, :at, 'confirmed')"
                ),
                {"at": at},
            )
            conn.execute(text("DROP EXTENSION IF EXISTS unaccent"))

        def found(words: str) -> list[str]:
            query = (
                "SELECT id FROM events WHERE calendar_search_keyed(calendar_id, title, "
                "description, location, attendees) @@ calendar_search_keyed_query(:q, 'cal_1')"
            )
            with engine.connect() as conn:
                return list(conn.execute(text(query), {"q": words}).scalars())

        migrate(command.downgrade, "0023")  # 0017's fallback: translate
        assert found("straße") == ["ev_1"] and found("strasse") == [] and found("fish") == []
        migrate(command.upgrade, "head")
        assert found("strasse") == ["ev_1"] and found("straße") == ["ev_1"]
        assert found("fish") == ["ev_1"] and found("ﬁsh") == ["ev_1"]
        engine.dispose()


def test_0027_keeps_the_names_apps_make_caldav_calendars_under_and_goes_back(
    tmp_path: Path,
) -> None:
    """On either backend: the calendars there before 0027 have no CalDAV name (served at
    their ids), a name is unique per owner where it is set (two calendars without one are
    fine), and the downgrade drops the column and its index (the calendars stay)."""
    with _database_at(tmp_path, "0026") as (engine, migrate):
        at = "2026-03-02T08:30:00.000000Z"
        insert = (
            "INSERT INTO calendars (id, user_id, name, time_zone, is_default, "
            "max_event_seconds, created_at{more}) VALUES (:id, 'usr_1', :name, 'UTC', false, 0, "
            ":at{values})"
        )
        with engine.begin() as conn:
            _owner(conn, at)
            for n in (1, 2):
                conn.execute(
                    text(insert.format(more="", values="")),
                    {"id": f"cal_{n}", "name": f"Old {n}", "at": at},
                )
        migrate(command.upgrade, "0027")
        with engine.begin() as conn:
            assert conn.execute(text("SELECT dav_name FROM calendars")).all() == [(None,), (None,)]
            conn.execute(
                text(insert.format(more=", dav_name", values=", :dav")),
                {"id": "cal_3", "name": "Work", "at": at, "dav": "work@home"},
            )
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(
                text(insert.format(more=", dav_name", values=", :dav")),
                {"id": "cal_4", "name": "Other", "at": at, "dav": "work@home"},
            )
        migrate(command.downgrade, "0026")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM calendars")).scalar() == 3
        migrate(command.upgrade, "head")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT dav_name FROM calendars")).all() == [(None,)] * 3
        engine.dispose()
