"""The address the service is served on, kept in the database for the commands that print links.

A server process knows its address (``CALENDAR_BASE_URL``, else the ``http(s)://HOST:PORT`` of
``serve --host --port``); a CLI command run later, in another terminal, does not. ``serve``
records it here before it listens (``record``), and a command that prints a link
(``feeds create``: the secret URL is shown once, so a wrong one costs a revoke) takes
``CALENDAR_BASE_URL`` when set, else what ``serve`` recorded, and otherwise refuses, saying
that ``CALENDAR_BASE_URL`` is needed, rather than print a link that may lead nowhere
(``link_base``).

Kept in ``service_secrets`` under a name of its own: like the secrets there, one value that
any process writes and every process on the database reads. It is not a secret.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from calendar_service.platform.errors import ConfigError
from calendar_service.platform.models.service import secrets_t

ROW_NAME = "served_base_url"
_MAX_LEN = 200  # the column's size


def record(conn: Connection, *, base_url: str, now: datetime) -> None:
    """Record ``base_url`` as the address the service is served on (the last ``serve`` to
    start wins). One too long to keep is not recorded, and forgets an earlier one."""
    base_url = base_url.rstrip("/")
    if len(base_url) > _MAX_LEN:
        conn.execute(delete(secrets_t).where(secrets_t.c.name == ROW_NAME))
        return
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    conn.execute(
        insert(secrets_t)
        .values(name=ROW_NAME, value=base_url, created_at=now)
        .on_conflict_do_update(
            index_elements=[secrets_t.c.name], set_={"value": base_url, "created_at": now}
        )
    )


def recorded(conn: Connection) -> str | None:
    """The address ``serve`` last recorded, or ``None`` when no ``serve`` has run here."""
    value = conn.execute(select(secrets_t.c.value).where(secrets_t.c.name == ROW_NAME)).scalar()
    return None if value is None else str(value)


def link_base(conn: Connection, *, configured: str | None) -> str:
    """The base of the links a command prints: ``configured`` (``CALENDAR_BASE_URL``) when
    set, else the address ``serve`` recorded; ``ConfigError`` when neither is known."""
    if configured and configured.strip():
        return configured.strip().rstrip("/")
    served = recorded(conn)
    if served is None:
        raise ConfigError(
            "The service's address is not known, so no link can be printed: no "
            "'calendar-service serve' has run on this database yet. Set CALENDAR_BASE_URL to "
            "the address the service is reached at (for example "
            "CALENDAR_BASE_URL=http://127.0.0.1:9101) and run the command again."
        )
    return served
