"""mirror_removals: a connected calendar's mirror removed in steps, hidden at once

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-08 01:40:00

A connection switched to ``busy``, or removed, leaves its mirror calendar (up to 20,000
events) to a job (``delivery.connection_removals``) that deletes it a step at a time. The
request only detaches it: ``calendars.user_id`` becomes NULL (every reader of an owner's
calendars asks for ``user_id = …``, so no key, page, feed or CalDAV client sees it from the
next request on) and ``calendars.connection_id`` the job's id (still read-only; the
connection may get a new mirror). ``mirror_removals`` holds each job: the owner (its
tombstones are filed under them), the calendar still to delete, the connection whose busy
rows, objects and event mapping still go, and the runner holding it until ``lease_until``.

``calendars.user_id`` may be NULL: on PostgreSQL by ``ALTER COLUMN``; on SQLite by the
schema text alone (``PRAGMA writable_schema``, the procedure SQLite documents for dropping a
NOT NULL constraint, which changes nothing on disk): a rebuild of ``calendars`` would copy
every calendar and rewrite the tables that refer to it.

Both databases. Downgrade: the detached calendars go with their events, then the table, and
``user_id`` is NOT NULL again.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NOT_NULL = '"user_id" VARCHAR(40) NOT NULL'
_NULLABLE = '"user_id" VARCHAR(40)'


def upgrade() -> None:
    op.create_table(
        "mirror_removals",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("connection_id", sa.String(length=40), nullable=False),
        sa.Column("calendar_id", sa.String(length=40), nullable=True),
        sa.Column("removed", sa.Boolean(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("runner", sa.String(length=80), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_user_id(_NOT_NULL, _NULLABLE)
    else:
        op.alter_column("calendars", "user_id", existing_type=sa.String(length=40), nullable=True)


def downgrade() -> None:
    op.execute(
        "DELETE FROM events WHERE calendar_id IN (SELECT id FROM calendars WHERE user_id IS NULL)"
    )
    op.execute("DELETE FROM calendars WHERE user_id IS NULL")
    op.drop_table("mirror_removals")
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_user_id(_NULLABLE, _NOT_NULL)
    else:
        op.alter_column("calendars", "user_id", existing_type=sa.String(length=40), nullable=False)


def _sqlite_user_id(before: str, after: str) -> None:
    conn = op.get_bind()
    sql = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'calendars'"
    ).scalar_one()
    if before not in sql:  # as SQLAlchemy wrote it, quoted or not
        before, after = (
            before.replace('"user_id"', "user_id"),
            after.replace('"user_id"', "user_id"),
        )
    assert sql.count(before) == 1, "calendars.user_id is not as 0001 made it"
    version = conn.exec_driver_sql("PRAGMA schema_version").scalar_one()
    conn.exec_driver_sql("PRAGMA writable_schema = ON")
    conn.exec_driver_sql(
        "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'calendars'",
        (sql.replace(before, after),),
    )
    conn.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    conn.exec_driver_sql("PRAGMA writable_schema = OFF")
