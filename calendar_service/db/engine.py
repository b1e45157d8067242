"""The engine: one per ``Database``, set up for the dialect the configuration names.

SQLite: WAL, ``synchronous`` as configured (``NORMAL`` by default), foreign keys on, a 30 s
busy timeout, and write transactions opened with ``BEGIN IMMEDIATE``. PostgreSQL: a pool
matched to the database threads (``POSTGRES_POOL_SIZE``), pinged on check-out. Either way
errors never carry the statement's parameters into logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import QueuePool

from calendar_service.config import Config

POSTGRES_POOL_SIZE = 8


def make_engine(config: Config) -> Engine:
    """The engine for ``config.database_url``, set up as the module docstring says."""
    url = config.database_url
    if config.is_sqlite:
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            poolclass=QueuePool,
            pool_size=4,
            max_overflow=4,
            hide_parameters=True,  # errors must not carry values (hashes, bodies) into logs
        )
        synchronous = config.sqlite_synchronous
        if synchronous not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            synchronous = "NORMAL"

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy, not pysqlite, decide when transactions begin.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={synchronous}")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        # SQLAlchemy begins a transaction with the dialect's ``do_begin`` (pysqlite's does
        # nothing: the driver would begin one before the first write). Ours begins it with
        # IMMEDIATE, which takes the write lock up front: a read that later writes can then
        # never fail with "database is locked" half-way through. Inside ``atomic`` the driver's
        # transaction is already open. A method of this engine's dialect rather than a "begin"
        # listener: with no listener of connection events on the engine, SQLAlchemy and
        # ``db.Statement`` skip their event dispatch on every statement.
        engine.dialect.do_begin = _begin_immediate  # type: ignore[method-assign]
        return engine
    return create_engine(
        url,
        pool_size=POSTGRES_POOL_SIZE,
        max_overflow=4,
        pool_pre_ping=True,
        hide_parameters=True,  # errors must not carry values (hashes, bodies) into logs
    )


def _begin_immediate(dbapi_connection: Any) -> None:
    if not dbapi_connection.in_transaction:
        dbapi_connection.execute("BEGIN IMMEDIATE")


def sqlite_path(config: Config) -> Path | None:
    """The SQLite database's file, or None (PostgreSQL, or SQLite in memory)."""
    if not config.is_sqlite:
        return None
    path = config.database_url.split("///", 1)[-1]
    return None if path in {"", ":memory:"} else Path(path)
