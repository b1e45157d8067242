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
