"""Wake the delivery worker when any process, on any host, commits a due delivery (PostgreSQL).

A trigger on ``webhook_deliveries`` (migration 0011) calls ``pg_notify('calendar_outbox', '')``
in the writing transaction: PostgreSQL delivers it when that transaction commits. ``listen``
holds one connection of its own (psycopg's async connection, so the event loop never blocks on
it) with ``LISTEN calendar_outbox`` and calls ``wake`` for each notification.

The connection is checked every ``check_every`` seconds (TCP keepalives also catch a dead
peer); when it is lost, ``listen`` connects again after ``retry`` seconds (and so on, doubling
up to a minute), and wakes the worker once connected, for whatever committed meanwhile.
Polling (``scheduler.DEFAULT_POLL_SECONDS``) stays the fallback all along. SQLite has no such
thing: its workers poll, and a process wakes its own worker when it commits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sqlalchemy.engine import make_url

logger = logging.getLogger("webhooks")

CHANNEL = "calendar_outbox"  # migration 0011's trigger notifies it


def libpq_url(database_url: str) -> str:
    """``postgresql+psycopg://…`` (SQLAlchemy's) as libpq takes it: ``postgresql://…``."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


async def listen(
    database_url: str,
    wake: Callable[[], None],
    *,
    retry: float = 1.0,
    check_every: float = 10.0,
    connected: Callable[[], None] | None = None,
) -> None:
    """Call ``wake`` for every notification on ``CHANNEL`` until cancelled (see module doc).

    ``connected`` is called each time the LISTEN is in place (tests wait on it)."""
    import psycopg  # here: a server on SQLite never loads it (some 50 ms of its start-up)

    delay = retry
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(
                libpq_url(database_url),
                autocommit=True,
                keepalives=1,
                keepalives_idle=5,
                keepalives_interval=2,
                keepalives_count=3,
                connect_timeout=10,
            ) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                delay = retry
                if connected is not None:
                    connected()
                wake()  # anything committed while no one listened
                while True:
                    async for _ in conn.notifies(timeout=check_every):
                        wake()
                    await conn.execute("SELECT 1")  # still there? (raises when it is not)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The class name only: a connection error's text may carry the host and user.
            logger.warning(
                "webhook wake-ups (LISTEN) lost (%s); reconnecting in %g s, polling meanwhile",
                type(exc).__name__,
                delay,
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 60.0)
