"""``Database``: runs the core's calls for the async fronts (on SQLite inline, else on threads).

The core is written against SQLAlchemy Core ``Connection`` objects, synchronously.
``Database.run(fn, ...)`` runs ``fn(conn, ...)`` inside one transaction and commits it;
``run_connected`` leaves the transactions to ``fn``; ``run_grouped`` (``group``) is
``run_connected`` for ``gateway.perform``, with the commits shared on SQLite; ``call`` is the
synchronous form, for the CLI and the scheduler's threads.

SQLite allows one writer at a time; many threads writing fight over its lock. So on SQLite
every call from the event loop runs inline, on the loop, on the connection kept for it
(``kept``): the calls are sub-millisecond, and a hop to a database thread and back cost more
than the work (it also made the two threads fight over the GIL, which sent the p99 up); its WAL
is checkpointed by a thread of its own (``checkpoint``). PostgreSQL gets a pool of threads
matched to the connection pool, since its calls wait on the network.

Work too long for the loop (an import: seconds) goes through ``run_off_loop``, on a database
thread whatever the backend. On SQLite the loop's own calls then wait for it without stopping
the loop (they would otherwise wait for SQLite's write lock with the loop stopped), while
``ping`` (``/healthz``) still answers: it reads outside any transaction, beside the writer.
Work longer still (undoing thousands of changes) goes as a series of such writes, each short,
with ``let_waiting_through`` between two: the requests that waited run in between.
On PostgreSQL ``ping`` has a connection and a thread of its own (``Pinger``): requests that
hold every pooled connection and database thread do not delay it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine

from calendar_service.platform.config import Config
from calendar_service.platform.db.channels import OPEN_GROUP, OUTBOX_DIRTY
from calendar_service.platform.db.checkpoint import Checkpointer
from calendar_service.platform.db.engine import POSTGRES_POOL_SIZE, make_engine
from calendar_service.platform.db.group import GroupCommit
from calendar_service.platform.db.thread_connections import KeptConnections, bind
from calendar_service.platform.db.transactions import Group, atomic, roll_back

P = ParamSpec("P")
_MOST_TURNS = 1000  # of the loop that ``let_waiting_through`` waits at most
T = TypeVar("T")


class Database(GroupCommit):
    """An engine, the connections kept on it, and the executor that runs core calls off the
    event loop (on PostgreSQL); ``run_grouped`` comes from ``group.GroupCommit``."""

    def __init__(
        self,
        config: Config,
        engine: Engine | None = None,
        *,
        inline: bool | None = None,
        group_commit: bool | None = None,
    ) -> None:
        self.config = config
        self.engine = engine or make_engine(config)
        # Inline: ``run`` calls on the event loop itself (default on SQLite, see above).
        self.inline = config.is_sqlite if inline is None else inline
        # Requests through ``gateway.perform`` share commits (``run_grouped``): SQLite inline.
        if group_commit is None:
            group_commit = config.is_sqlite
        self.group_commit = group_commit and self.inline
        # SQLite's WAL checkpoints run on a thread of their own (see ``checkpoint``).
        self._checkpointer = Checkpointer(self.engine) if config.is_sqlite else None
        # The connection each calling thread keeps between calls (see ``kept``).
        self._kept = KeptConnections(
            self.engine, self._checkpointer.adopt if self._checkpointer is not None else None
        )
        self._kept_connection: Callable[[], Connection] = self._kept.connection
        workers = 1 if config.is_sqlite else POSTGRES_POOL_SIZE
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="db")
        # ``/healthz``'s own connection and thread (not SQLite's: it pings inline).
        self._pinger = None if config.is_sqlite else Pinger(self.engine)
        # SQLite: resolved when the long write running on a thread (``run_off_loop``) ends;
        # the loop's calls wait for it, and so does the next such write.
        self._long_write: asyncio.Future[None] | None = None
        # SQLite: how many of the loop's calls wait for it to end (``let_waiting_through``).
        self._waiting = 0
        # Called (from a database thread) after a transaction that queued webhook deliveries
        # commits; the app points it at the dispatcher's wake-up.
        self.on_outbox_commit: Callable[[], None] | None = None

    def call(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(conn, ...)`` in one transaction, synchronously (CLI, scheduler threads)."""
        with self.engine.connect() as conn:
            try:
                with conn.begin():
                    result = fn(conn, *args, **kwargs)
            except BaseException:
                conn.info.pop(OUTBOX_DIRTY, None)
                raise
            self._after(conn)
        return result

    def _after(self, conn: Connection) -> None:
        # Set by outbox.notify_committed (``channels.OUTBOX_DIRTY``); a rolled-back transaction
        # may leave it set too, which only costs the dispatcher a spurious look.
        if conn.info.pop(OUTBOX_DIRTY, False) and self.on_outbox_commit is not None:
            self.on_outbox_commit()

    async def run(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(conn, ...)`` in one transaction, inline or on the database thread(s)."""
        return await self._call(functools.partial(self._on_kept, bind(fn, *args, **kwargs), True))

    async def ping(self) -> None:
        """Ask the database for ``SELECT 1`` (``/healthz``). On SQLite: inline, outside any
        transaction, so it neither takes the write lock nor waits for a long write
        (``run_off_loop``): WAL lets it read beside the writer. Otherwise on a connection and
        a thread of its own (``Pinger``), outside the pool and the requests' threads, so that
        no slow query queues ahead of it; bounded by ``PING_SECONDS``."""
        if self._pinger is not None:
            await self._pinger.ping()
            return
        raw: Any = self._kept_connection().connection.dbapi_connection
        raw.execute("SELECT 1").fetchone()

    async def run_off_loop(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``run_grouped`` for work too long for the event loop (an import): ``fn(conn, ...)``
        runs on a database thread, outside any group, its transactions its own (as
        ``run_connected``). On SQLite the loop's calls (``run``, ``run_connected``,
        ``run_grouped``) wait until it has ended, without stopping the loop; such writes run
        one at a time. The write runs to its end even if the caller stops waiting for it."""
        work = functools.partial(self._on_kept, bind(fn, *args, **kwargs), False)
        loop = asyncio.get_running_loop()
        if not self.inline:
            return await loop.run_in_executor(self._executor, work)
        await self._after_long_write()  # then nothing awaits before the next line: it is ours
        ended = self._long_write = loop.create_future()

        def release(_: object) -> None:
            if self._long_write is ended:
                self._long_write = None
            ended.set_result(None)

        # Any group open on the loop's connection commits on the loop's next turn; the thread
        # waits for SQLite's lock until then.
        future = loop.run_in_executor(self._executor, work)
        future.add_done_callback(release)
        return await asyncio.shield(future)

    async def _after_long_write(self) -> None:
        """Wait (on SQLite) until no write this event loop began runs on a thread
        (``run_off_loop``). One begun from another loop (tests share a ``Database`` between a
        server's loop and their own) is not waited for here: it cannot be awaited from this
        loop, and SQLite's lock, with its busy timeout, orders the two writes anyway."""
        loop = asyncio.get_running_loop()
        self._waiting += 1
        try:
            while (pending := self._long_write) is not None and pending.get_loop() is loop:
                await asyncio.shield(pending)
        finally:
            self._waiting -= 1

    async def let_waiting_through(self) -> None:
        """Return once the loop's calls that waited for the last long write (``run_off_loop``)
        have run: work done as a series of long writes (``background.UndoJobs``' batches) calls
        it between two, so that every request waiting gets its turn before the next write
        (otherwise the next one could begin first, again and again)."""
        await asyncio.sleep(0)
        for _ in range(_MOST_TURNS):  # bounded: a count off by a thread's race cannot stall it
            if not self._waiting:
                return
            await asyncio.sleep(0)

    async def run_connected(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(conn, ...)`` outside a transaction (``fn`` owns them, as ``gateway.perform``
        does), inline or on the database thread(s)."""
        return await self._call(functools.partial(self._on_kept, bind(fn, *args, **kwargs), False))

    async def _call(self, work: Callable[[], T]) -> T:
        """``work`` inline (SQLite: on the loop, once no long write runs on a thread) or on the
        database thread(s)."""
        if self.inline:
            if self._long_write is not None:
                await self._after_long_write()
            return work()
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    def _on_kept(self, fn: Callable[[Connection], T], transaction: bool) -> T:
        """Run ``fn`` on the calling thread's kept connection (see ``kept``); a group
        commit open on it is committed first."""
        conn = self._kept_connection()
        group: Group | None = conn.info.get(OPEN_GROUP)
        if group is not None:
            self._commit_group(conn, group)
        try:
            if transaction:
                with atomic(conn):
                    return fn(conn)
            return fn(conn)
        except BaseException:
            if transaction:
                conn.info.pop(OUTBOX_DIRTY, None)
            raise
        finally:
            # Never carry a transaction over to the next call: SQLAlchemy's (also one whose
            # commit failed, which is no longer "in" a transaction but must still be rolled
            # back), or one opened on the driver (``atomic``).
            with contextlib.suppress(Exception):  # a closed connection has none
                raw: Any = conn.connection.dbapi_connection
                if conn.get_transaction() is not None or raw.in_transaction:
                    roll_back(conn)
            self._after(conn)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
        self._executor.shutdown(wait=True)
        if self._pinger is not None:
            self._pinger.close()
        self._kept.close()
        self.engine.dispose()


PING_SECONDS = 5.0
"""How long ``/healthz`` waits for the database's answer (its own connection) at most."""


class Pinger:
    """``SELECT 1`` on a DBAPI connection of its own, made by the engine's dialect outside
    its pool, on a thread of its own: what requests hold (the pool's connections, the
    executor's threads) never delays it. One ping at a time: callers meanwhile share it. The
    connection is made at the first ping and again after a failure; the server is told to
    cancel a statement after ``PING_SECONDS`` (``statement_timeout``), and the caller stops
    waiting then too."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ping")
        self._raw: Any = None
        self._running: asyncio.Future[None] | None = None

    async def ping(self) -> None:
        running = self._running
        if running is None or running.done():
            running = self._running = asyncio.wrap_future(self._executor.submit(self._select))
        await asyncio.wait_for(asyncio.shield(running), PING_SECONDS)

    def _select(self) -> None:
        try:
            if self._raw is None:
                self._raw = self._connect()
            cursor = self._raw.cursor()
            try:
                cursor.execute("SELECT 1")
                cursor.fetchone()
            finally:
                cursor.close()
        except BaseException:
            self._drop()
            raise

    def _connect(self) -> Any:
        dialect = self._engine.dialect
        cargs, cparams = dialect.create_connect_args(self._engine.url)
        cparams.setdefault("connect_timeout", int(PING_SECONDS))
        raw: Any = dialect.connect(*cargs, **cparams)
        raw.autocommit = True
        cursor = raw.cursor()
        cursor.execute(f"SET statement_timeout = {int(PING_SECONDS * 1000)}")
        cursor.close()
        return raw

    def _drop(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.close()

    def close(self) -> None:
        self._executor.submit(self._drop)
        self._executor.shutdown(wait=True)
