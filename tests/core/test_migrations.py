"""Migrations that move data, checked on a database written by the revision before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic import command
from sqlalchemy import create_engine

from calendar_service.migrate import alembic_config


def test_0002_rewrites_sqlite_times_written_before_as_rfc3339_and_back(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    cfg = alembic_config(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
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
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    assert raw.execute("SELECT created_at FROM users").fetchone() == (
        "2026-03-02T08:30:00.250000Z",
    )
    assert raw.execute("SELECT created_at FROM calendars").fetchone() == (
        "2026-03-02T08:30:00.000000Z",
    )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0001")
    assert raw.execute("SELECT created_at FROM users").fetchone() == ("2026-03-02 08:30:00.250000",)
    raw.close()
    engine.dispose()


def test_0007_makes_every_existing_event_opaque_and_its_downgrade_drops_free_busy_keys(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    cfg = alembic_config(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0006")
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
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
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
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0006")
    assert raw.execute("SELECT id FROM api_keys").fetchall() == [("key_r",)]
    assert raw.execute("SELECT count(*) FROM calls").fetchone() == (0,)
    assert raw.execute("SELECT title FROM events").fetchall() == [("Old",)]
    raw.close()
    engine.dispose()
