"""The engine: one per ``Database``, set up for the dialect the configuration names.

SQLite: WAL, ``synchronous`` as configured (``NORMAL`` by default), foreign keys on, a 30 s
busy timeout, and write transactions opened with ``BEGIN IMMEDIATE``. PostgreSQL: a pool
matched to the database threads (``POSTGRES_POOL_SIZE``), pinged on check-out. Either way
errors never carry the statement's parameters into logs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import QueuePool

from calendar_service.platform.config import Config

POSTGRES_POOL_SIZE = 8

# ``sqlite3`` binds exact int, float, str and bytearray values as they are; any other value,
# None and bool among them, goes through its adapter registry, and where none is registered it
# asks its protocol class for ``__adapt__``: an AttributeError formatted and dropped, some
# 2,000 instructions a value (a create binds about 17 such values). Registered, each is adapted
# by one C call to what ``sqlite3`` binds anyway: NULL, and 0 or 1.
_NOTHING: dict[None, None] = {}
sqlite3.register_adapter(type(None), _NOTHING.get)  # _NOTHING.get(None) is None
sqlite3.register_adapter(bool, int)


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
        # Every commit SQLAlchemy makes writes the search index's pending words first (the
        # driver's own commits, in ``transactions.commit``, go through the same function).
        engine.dialect.do_commit = commit_with_search_words  # type: ignore[method-assign]
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


SEARCH_WORDS_AT = 256
"""SQLite: the pending search words a commit moves into the index once this many are waiting
(``events_search_pending``'s last ``seq``; the table is emptied by each move, so its ``seq``
starts again at 1). A search moves whatever is pending first, in its own transaction
(``events.search.write_pending_words``), so it never misses a committed write."""

LAST_PENDING_WORDS = "SELECT max(seq) FROM events_search_pending"
SEARCH_PARTS_PENDING = "SELECT DISTINCT part FROM events_search_pending"


def write_search_words(execute: Callable[..., Any], *, at_least: int = 1) -> None:
    """SQLite: move the words the triggers on ``events`` left in ``events_search_pending`` into
    their parts of the search index (``events_search_<part>``), in the order written, and empty
    the table, inside the open transaction (migration 0022; the triggers' pending words are
    part of the index as much as its FTS5 tables), once at least ``at_least`` are pending:
    one FTS5 segment a part for all of them. ``execute``: the driver connection's ``execute``
    or a ``Connection``'s ``exec_driver_sql``. Before 0022 (no such table): nothing to do."""
    try:
        last = execute(LAST_PENDING_WORDS).fetchone()[0]
    except (sqlite3.OperationalError, OperationalError) as exc:
        if "no such table" in str(exc):
            return
        raise
    if last is None or last < at_least:
        return
    for (part,) in execute(SEARCH_PARTS_PENDING).fetchall():
        table = f"events_search_{int(part)}"
        execute(
            f"INSERT INTO {table}({table}, rowid, words) SELECT command, key, words "  # noqa: S608
            "FROM events_search_pending WHERE part = ? ORDER BY seq",
            (part,),
        )
    execute("DELETE FROM events_search_pending")


def commit_with_search_words(dbapi_connection: Any) -> None:
    """SQLite: commit the driver's transaction, the pending search words written first once
    ``SEARCH_WORDS_AT`` are waiting (the creates of many commits share one FTS5 segment)."""
    if dbapi_connection.in_transaction:
        write_search_words(dbapi_connection.execute, at_least=SEARCH_WORDS_AT)
    dbapi_connection.commit()


def sqlite_path(config: Config) -> Path | None:
    """The SQLite database's file, or None (PostgreSQL, or SQLite in memory)."""
    if not config.is_sqlite:
        return None
    path = config.database_url.split("///", 1)[-1]
    return None if path in {"", ":memory:"} else Path(path)
