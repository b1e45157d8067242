"""SQLite's group commit: the requests run in one turn of the event loop share one transaction.

On SQLite the requests that go through ``gateway.perform`` (``Database.run_grouped``) run inline
on the loop's kept connection. The first of a turn opens the write transaction (a
``transactions.Group``) and asks the loop to commit it once the callbacks already queued have
run; those run until then join it, and each is answered only after that one commit. A commit
per request wrote every page it touched to the WAL; grouped, the pages they share (the
history's last page, the indexes) are written once per group.

There are no savepoints. A request that fails after writing rolls the whole group back
(``atomic`` calls ``Group.abandon``); so does a failed commit. The group's other requests then
run again, each in a transaction of its own: see ``GroupCommit.run_grouped`` for what that
asks of them. A request that fails before writing leaves the group alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection

from calendar_service.platform.db.channels import OPEN_GROUP
from calendar_service.platform.db.thread_connections import bind
from calendar_service.platform.db.transactions import Group, commit

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger(__name__)


class GroupCommit:
    """``Database.run_grouped`` and the commit of its groups; a base class of ``Database``.

    It uses what ``Database`` provides: ``group_commit`` (whether calls are grouped: SQLite,
    inline), ``_kept_connection`` (the loop's connection, see ``kept``), ``run_connected`` (a
    call without grouping), ``_on_kept`` (a call on the kept connection alone, which first
    commits the group open on it) and ``_after`` (the outbox's wake-up after a commit)."""

    group_commit: bool
    _kept_connection: Callable[[], Connection]
    _long_write: asyncio.Future[None] | None

    if TYPE_CHECKING:

        async def run_connected(
            self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
        ) -> T: ...

        def _on_kept(self, fn: Callable[[Connection], T], transaction: bool) -> T: ...

        def _after(self, conn: Connection) -> None: ...

        async def _after_long_write(self) -> None: ...

    async def run_grouped(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``run_connected`` for ``gateway.perform``, with the loop's group commit on SQLite.

        ``fn(conn, ...)`` runs inline; its transactions (``atomic``) join the group open on the
        loop's connection, or open one. What it returns, or raises, is answered once the group
        has committed; an error raised before ``fn`` wrote anything is answered at once.

        The rerun contract: if the group is rolled back (another call of it failed after
        writing, or the commit failed), every call of the group that is waiting for it runs
        again: ``fn`` is called a second time, with the same arguments, on its own (no group:
        its transactions are its own), and what that run returns or raises is the answer. The
        first run's writes are undone; whatever else it did stays done. So ``fn`` must:

        - be safe to run again: do everything through ``conn``, inside its transactions, and
          nothing outside them (network, files, other connections, shared objects) unless
          repeating it is harmless;
        - open and end its transactions only with ``atomic`` on ``conn``: inside a group an
          end of its own (``commit``, ``rollback``, ``begin``) would end the other calls' work;
        - return values that do not need the transaction, which has ended when they arrive;
        - check before it writes where it can: a failure after a write rolls back the whole
          group, and the others run again.

        ``gateway.perform`` is such an ``fn`` as long as its ``op`` keeps the same contract
        (``operations.Operation``)."""
        if not self.group_commit:
            return await self.run_connected(fn, *args, **kwargs)
        if self._long_write is not None:  # a write on a thread holds the lock (run_off_loop)
            await self._after_long_write()
        work = bind(fn, *args, **kwargs)
        conn = self._kept_connection()
        raw: Any = conn.connection.dbapi_connection
        group: Group | None = conn.info.get(OPEN_GROUP)
        if group is None:
            raw.execute("BEGIN IMMEDIATE")
            loop = asyncio.get_running_loop()
            group = conn.info[OPEN_GROUP] = Group(loop)
            loop.call_soon(self._commit_group, conn, group)
        changes = raw.total_changes
        try:
            result = work(conn)
        except BaseException:
            if group.failed:  # this request rolled it back; its error was recorded alone
                raise
            if raw.total_changes == changes:  # it wrote nothing: nothing to wait for
                raise
            await group.done
            if not group.failed:
                raise
        else:
            await group.done
            if not group.failed:
                return result
        if self._long_write is not None:
            await self._after_long_write()
        return self._on_kept(work, False)  # the group was rolled back: run again, alone

    def _commit_group(self, conn: Connection, group: Group) -> None:
        """Commit ``group`` (the loop calls this once the turn's queued callbacks have run, and
        ``_on_kept`` before other work on the connection); a failed commit abandons it."""
        if group.done.done():
            return  # rolled back already
        try:
            commit(conn)
        except Exception:
            log.warning("group commit failed; its requests run again", exc_info=True)
            group.abandon(conn)
        else:
            del conn.info[OPEN_GROUP]
            group.done.set_result(None)
        self._after(conn)
