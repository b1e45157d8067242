"""SQLite's WAL checkpoints, moved off the request connection onto a thread of their own.

By default the connection whose commit crosses 1,000 WAL pages copies them back into the
database and fsyncs it, inside that commit; with requests run on the event loop that stalled
every request in flight (the create p99). Here a PASSIVE checkpoint (which never blocks writers
or readers) runs every ``CHECKPOINT_SECONDS`` beside the loop, with the GIL released while
SQLite works; a request connection still checkpoints itself if the WAL grows past
``BACKSTOP_PAGES``. Durability is unchanged: a commit is as durable as ``synchronous`` makes it
either way.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy import Connection, Engine

CHECKPOINT_SECONDS = 0.05
BACKSTOP_PAGES = 10_000  # the request connection still checkpoints if the WAL grows past this

log = logging.getLogger(__name__)


class Checkpointer:
    """Checkpoints the WAL of ``engine``'s database from a thread started by the first
    ``adopt`` and ended by ``stop``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def adopt(self, conn: Connection) -> None:
        """Leave ``conn``'s checkpoints to the thread (up to ``BACKSTOP_PAGES``), starting it
        if it is not running. Callers serialize their calls (``kept`` holds its lock)."""
        conn.connection.dbapi_connection.execute(  # type: ignore[union-attr]
            f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}"
        )
        if self._thread is None:
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(self._stop,), name="sqlite-checkpoint", daemon=True
            )
            self._thread.start()

    def _run(self, stop: threading.Event) -> None:
        raw = self._engine.raw_connection()
        try:
            while not stop.wait(CHECKPOINT_SECONDS):
                try:
                    raw.dbapi_connection.execute(  # type: ignore[union-attr]
                        "PRAGMA wal_checkpoint(PASSIVE)"
                    ).fetchall()
                except Exception:  # busy or closing: the next round tries again
                    log.debug("WAL checkpoint failed", exc_info=True)
        finally:
            raw.close()

    def stop(self) -> None:
        """End the thread, if running (a later ``adopt`` starts a new one)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=10)
        self._thread = None
