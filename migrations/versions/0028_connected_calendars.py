"""connected_calendars: the owner's calendars kept elsewhere, and their busy time

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-07 19:30:00

``connections`` holds one connected calendar (an ``ics`` URL or a ``caldav`` collection) with
its secrets sealed and its poll's state; ``connection_objects`` the ETags of a ``caldav``
source's objects; ``connection_busy`` the busy intervals each gives (docs/connections.md).

Both databases. Downgrade: the three tables go (the owner connects the calendars again).

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "connections",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("url_masked", sa.Text(), nullable=False),
        sa.Column("url_sealed", sa.Text(), nullable=False),
        sa.Column("username", sa.Text(), nullable=True),
        sa.Column("password_sealed", sa.Text(), nullable=True),
        sa.Column("collection_url", sa.Text(), nullable=True),
        sa.Column("visibility", sa.String(length=10), nullable=False),
        sa.Column("counts_for_availability", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("synced_at", UTCDateTime(), nullable=True),
        sa.Column("checked_at", UTCDateTime(), nullable=True),
        sa.Column("failing_notified", sa.Boolean(), nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("longest_seconds", sa.BigInteger(), nullable=False),
        sa.Column("poll_seconds", sa.BigInteger(), nullable=False),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.Column("sync_token", sa.Text(), nullable=True),
        sa.Column("ctag", sa.Text(), nullable=True),
        sa.Column("expanded_at", UTCDateTime(), nullable=True),
        sa.Column("next_poll_at", UTCDateTime(), nullable=False),
        sa.Column("lease_owner", sa.Text(), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_connections_user_id", "connections", ["user_id"], unique=False)
    op.create_index("ix_connections_next_poll_at", "connections", ["next_poll_at"], unique=False)
    op.create_table(
        "connection_objects",
        sa.Column("connection_id", sa.String(length=40), nullable=False),
        sa.Column("href", sa.Text(), nullable=False),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("connection_id", "href"),
    )
    op.create_table(
        "connection_busy",
        sa.Column("connection_id", sa.String(length=40), nullable=False),
        sa.Column("href", sa.Text(), nullable=False),
        sa.Column("starts_at", sa.Text(), nullable=False),
        sa.Column("ends_at", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "href", "starts_at", "ends_at"),
    )
    op.create_index(
        "ix_connection_busy_start", "connection_busy", ["connection_id", "starts_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_connection_busy_start", table_name="connection_busy")
    op.drop_table("connection_busy")
    op.drop_table("connection_objects")
    op.drop_index("ix_connections_next_poll_at", table_name="connections")
    op.drop_index("ix_connections_user_id", table_name="connections")
    op.drop_table("connections")
