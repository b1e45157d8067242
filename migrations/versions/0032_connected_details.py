"""connected_details: connected calendars shown in full, read-only; all-day busy time

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-07 22:40:00

A connected calendar with ``visibility: details`` is mirrored by a calendar of the owner
(``calendars.connection_id``, ``calendars.connection_kind``: read-only, written by the poller
only) whose events are ordinary event rows; ``connection_events`` maps each source object
(``href``, ``""`` for an ``ics`` file) and UID to the event it became, with a digest of what it
was, so an unchanged event is not written again. ``connection_busy.all_day`` marks busy time
of all-day events, which the owner's rules do not count as meetings (docs/connections.md).

Both databases. Downgrade: the mirror calendars and their events go (the poller makes them
again after an upgrade), then the columns and the table.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MIRROR = "connection_id IS NOT NULL"


def upgrade() -> None:
    op.add_column("calendars", sa.Column("connection_id", sa.String(length=40), nullable=True))
    op.add_column("calendars", sa.Column("connection_kind", sa.String(length=10), nullable=True))
    op.create_index(
        "uq_calendars_connection_id",
        "calendars",
        ["connection_id"],
        unique=True,
        sqlite_where=sa.text(_MIRROR),
        postgresql_where=sa.text(_MIRROR),
    )
    op.create_table(
        "connection_events",
        sa.Column("connection_id", sa.String(length=40), nullable=False),
        sa.Column("href", sa.Text(), nullable=False),
        sa.Column("uid_hash", sa.String(length=64), nullable=False),
        sa.Column("event_id", sa.String(length=80), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "href", "uid_hash"),
    )
    op.add_column(
        "connection_busy",
        sa.Column("all_day", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.execute(
        "DELETE FROM events WHERE calendar_id IN "
        "(SELECT id FROM calendars WHERE connection_id IS NOT NULL)"
    )
    op.execute("DELETE FROM calendars WHERE connection_id IS NOT NULL")
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("connection_busy", "all_day")
    op.drop_table("connection_events")
    op.drop_index("uq_calendars_connection_id", table_name="calendars")
    op.drop_column("calendars", "connection_kind")
    op.drop_column("calendars", "connection_id")
