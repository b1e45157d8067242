"""The connection each calling thread keeps between calls: the event loop's, or a database thread's.

A pool check-out per request, with PostgreSQL's pre-ping, was a round trip and a good part of a
request. So each thread keeps the connection it was given; one left idle for
``KEEP_IDLE_SECONDS`` goes back to the pool (never while a group commit is open on it), and the
next check-out is pinged, so a restarted server is noticed as before. The work run on a kept
connection is a function of the connection alone: ``bind`` makes one of a core function and
its arguments.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine

from calendar_service.platform.db.channels import OPEN_GROUP

P = ParamSpec("P")
T = TypeVar("T")

KEEP_IDLE_SECONDS = 5.0


class KeptConnections:
    """The kept connection of every thread that asks for one, all closed by ``close``.

    ``on_connect`` is called with each new kept connection, under a lock (SQLite hands its
    checkpoints to ``checkpoint.Checkpointer``)."""

    def __init__(
        self, engine: Engine, on_connect: Callable[[Connection], None] | None = None
    ) -> None:
        self._engine = engine
        self._on_connect = on_connect
        self._local = threading.local()
        self._all: list[Connection] = []
        self._lock = threading.Lock()

    def connection(self) -> Connection:
        """The calling thread's kept connection: a new one if it had none, or if the one it
        had is closed, invalidated, or was idle too long."""
        kept = self._local
        conn: Connection | None = getattr(kept, "conn", None)
        now = time.monotonic()
        if conn is not None and (
            conn.closed
            or conn.invalidated
            or (now - kept.used > KEEP_IDLE_SECONDS and OPEN_GROUP not in conn.info)
        ):
            with self._lock, contextlib.suppress(ValueError):
                self._all.remove(conn)
            conn.close()
            conn = None
        if conn is None:
            conn = kept.conn = self._engine.connect()
            with self._lock:
                self._all.append(conn)
                if self._on_connect is not None:
                    self._on_connect(conn)
        kept.used = now
        return conn

    def close(self) -> None:
        """Close every kept connection (at shutdown, once no more calls can come)."""
        with self._lock:
            kept, self._all = self._all, []
        for conn in kept:
            conn.close()


def bind(
    fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
) -> Callable[[Connection], T]:
    """``fn`` with its arguments bound after the connection: ``conn -> fn(conn, ...)``."""

    def bound(conn: Connection) -> T:
        return fn(conn, *args, **kwargs)

    return bound
