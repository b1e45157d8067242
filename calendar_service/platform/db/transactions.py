"""``atomic``: one transaction on a connection, and the driver-level commit and rollback under it.

On SQLite every request opens and commits its transaction on the driver (``BEGIN IMMEDIATE``
and ``COMMIT``), not through SQLAlchemy's transaction objects, which cost more than the
statements; Core statements run inside join it. Inside a group commit (``group``) ``atomic``
joins the group's transaction (a ``Group``, defined here with its rollback) instead, and the
group commits it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Connection

from calendar_service.platform.db.channels import OPEN_GROUP, OUTBOX_DIRTY
from calendar_service.platform.db.engine import commit_with_search_words


class Group:
    """One SQLite write transaction shared by the requests run in one turn of the event loop.

    ``done`` resolves once it has committed or been rolled back; ``failed`` says which. Its
    requests wait for ``done`` before they answer: nothing is answered before it is durable."""

    __slots__ = ("done", "failed")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.done: asyncio.Future[None] = loop.create_future()
        self.failed = False

    def abandon(self, conn: Connection) -> None:
        """Roll the group's transaction back: its requests run again, each on its own."""
        if conn.info.get(OPEN_GROUP) is not self:
            return
        del conn.info[OPEN_GROUP]
        self.failed = True
        roll_back(conn)
        conn.info.pop(OUTBOX_DIRTY, None)
        if not self.done.done():
            self.done.set_result(None)


class atomic:  # lower case: used as a function, ``with atomic(conn):``
    """``conn.begin()``, committed at the end of the block and rolled back on error.

    On SQLite it is opened and committed on the driver (``BEGIN IMMEDIATE``/``COMMIT``): every
    request runs one, and SQLAlchemy's transaction objects and event dispatch around it cost
    more than the statements. Core calls inside the block join it (SQLAlchemy's autobegin
    finds the driver's transaction open, see ``engine.make_engine``) and the end commits both.

    Inside a group commit (``Database.run_grouped``) the block joins the group's transaction:
    the group commits it. A block that fails after writing rolls the whole group back (there
    are no savepoints), and the group's other requests run again; one that fails before
    writing leaves the group alone.

    A class rather than a ``contextlib.contextmanager`` generator: every request runs one,
    and the generator's machinery (its object, two resumptions, the ``StopIteration``) cost
    more than the rest of it."""

    __slots__ = ("_changes", "_conn", "_group", "_outer")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def __enter__(self) -> Connection:
        conn = self._conn
        raw: Any = conn.connection.dbapi_connection
        self._group: Group | None = conn.info.get(OPEN_GROUP)
        self._outer: Any = None
        if self._group is not None:
            self._changes: int = raw.total_changes
        elif conn.dialect.name != "sqlite" or conn.in_transaction() or raw.in_transaction:
            self._outer = conn.begin()
            self._outer.__enter__()
        else:
            raw.execute("BEGIN IMMEDIATE")
        return conn

    def __exit__(self, kind: type[BaseException] | None, error: Any, trace: Any) -> None:
        conn = self._conn
        if self._group is not None:
            if kind is not None:
                raw: Any = conn.connection.dbapi_connection
                if raw.total_changes != self._changes:
                    self._group.abandon(conn)
        elif self._outer is not None:
            self._outer.__exit__(kind, error, trace)
        elif kind is not None:
            roll_back(conn)
        else:
            try:
                commit(conn)
            except BaseException:
                roll_back(conn)
                raise


def commit(conn: Connection) -> None:
    """Commit the transaction open on ``conn``'s driver (through SQLAlchemy when Core
    statements joined it, so that its bookkeeping ends too)."""
    if conn.in_transaction():
        conn.commit()  # SQLite: the dialect's do_commit writes the search words first
        return
    raw: Any = conn.connection.dbapi_connection
    if conn.dialect.name == "sqlite":
        commit_with_search_words(raw)
    else:
        raw.commit()


def roll_back(conn: Connection) -> None:
    """Roll back whatever is open on ``conn``, SQLAlchemy's side and the driver's."""
    with contextlib.suppress(Exception):
        conn.rollback()
    with contextlib.suppress(Exception):
        raw: Any = conn.connection.dbapi_connection
        if raw.in_transaction:
            raw.rollback()


@contextlib.contextmanager
def rolled_back(conn: Connection) -> Iterator[Connection]:
    """Run the block inside the open transaction and undo everything it wrote when it ends,
    whether it succeeds or fails (a savepoint, rolled back): a dry run, which makes every
    check a write makes, by making the write, and keeps none of it. The webhook wake-up it
    asked for is forgotten with it (``channels.OUTBOX_DIRTY``).

    ``conn`` must be in a transaction (``atomic``, a group's, ``Database.call``'s). In a
    group commit on SQLite the savepoint nests in the group's transaction and leaves the
    other calls' work alone. Nothing read in the block after it wrote may be kept in memory
    past it: the memos key on stored versions (``calendars.series_version``) that the
    rollback puts back, and a later write numbers again."""
    dirty = conn.info.get(OUTBOX_DIRTY)
    if conn.dialect.name == "sqlite":
        raw: Any = conn.connection.dbapi_connection
        raw.execute("SAVEPOINT dry_run")
        try:
            yield conn
        finally:
            raw.execute("ROLLBACK TO SAVEPOINT dry_run")
            raw.execute("RELEASE SAVEPOINT dry_run")
            _put_back(conn, dirty)
        return
    nested = conn.begin_nested()
    try:
        yield conn
    finally:
        nested.rollback()
        _put_back(conn, dirty)


def _put_back(conn: Connection, dirty: Any) -> None:
    if dirty is None:
        conn.info.pop(OUTBOX_DIRTY, None)
    else:
        conn.info[OUTBOX_DIRTY] = dirty


class Tentative:
    """What ``tentative`` yields: ``discard()`` asks for the block's writes to be undone when
    it ends; ``discarded`` tells afterwards whether they were."""

    __slots__ = ("discarded",)

    def __init__(self) -> None:
        self.discarded = False

    def discard(self) -> None:
        self.discarded = True


@contextlib.contextmanager
def tentative(conn: Connection) -> Iterator[Tentative]:
    """Run the block inside the open transaction in a savepoint, kept unless the block calls
    ``discard()`` (or fails): a write that may have to wait for the owner's approval is made,
    looked at, and then kept or undone (``governance.proposals``). Undone, it is as after
    ``rolled_back`` (its webhook wake-up forgotten; nothing read after it wrote may be kept in
    memory)."""
    dirty = conn.info.get(OUTBOX_DIRTY)
    state = Tentative()
    end: Callable[[bool], None]
    if conn.dialect.name == "sqlite":
        raw: Any = conn.connection.dbapi_connection
        raw.execute("SAVEPOINT tentative")

        def end(discarded: bool) -> None:
            if discarded:
                raw.execute("ROLLBACK TO SAVEPOINT tentative")
            raw.execute("RELEASE SAVEPOINT tentative")

    else:
        nested = conn.begin_nested()

        def end(discarded: bool) -> None:
            (nested.rollback if discarded else nested.commit)()

    try:
        yield state
    except BaseException:
        state.discarded = True
        raise
    finally:
        end(state.discarded)
        if state.discarded:
            _put_back(conn, dirty)
