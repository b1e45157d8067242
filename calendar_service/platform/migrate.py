"""Bring the schema up to date with Alembic (run by ``serve`` and every CLI command)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Engine

import migrations

MIGRATIONS_DIR = Path(migrations.__file__).resolve().parent


def alembic_config(url: str) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine) -> None:
    """Upgrade to head on ``engine``, serialised across processes on PostgreSQL."""
    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Several servers starting at once must not migrate concurrently.
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7210412906)")
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
