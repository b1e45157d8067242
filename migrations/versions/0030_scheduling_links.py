"""scheduling_links: links a key hands a person to pick a time, and their bookings

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07 19:45:00

``scheduling_links``: one row a link (``createSchedulingLink``): whose key, which calendar,
the SHA-256 of its token (never the token), what it offers (title, length, window), how many
uses are left and until when. ``link_bookings``: one row a booking made through a link: its
event, the SHA-256 of its manage token, the guest, and when it was cancelled.

Both databases. Downgrade: the two tables dropped.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduling_links",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("calendar_id", sa.String(length=40), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("duration_minutes", sa.Integer(), nullable=False),
        sa.Column("time_min", UTCDateTime(), nullable=False),
        sa.Column("time_max", UTCDateTime(), nullable=False),
        sa.Column("guest_email", sa.String(length=320), nullable=True),
        sa.Column("guest_name", sa.String(length=200), nullable=True),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("uses_left", sa.Integer(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["key_id"], ["api_keys.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index("ix_scheduling_links_user_id", "scheduling_links", ["user_id"])
    op.create_index("ix_scheduling_links_key_id", "scheduling_links", ["key_id"])
    op.create_table(
        "link_bookings",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("link_id", sa.String(length=40), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("manage_hash", sa.String(length=64), nullable=False),
        sa.Column("guest_email", sa.String(length=320), nullable=False),
        sa.Column("guest_name", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("cancelled_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["link_id"], ["scheduling_links.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("manage_hash"),
    )
    op.create_index("ix_link_bookings_link_id", "link_bookings", ["link_id"])


def downgrade() -> None:
    op.drop_index("ix_link_bookings_link_id", table_name="link_bookings")
    op.drop_table("link_bookings")
    op.drop_index("ix_scheduling_links_key_id", table_name="scheduling_links")
    op.drop_index("ix_scheduling_links_user_id", table_name="scheduling_links")
    op.drop_table("scheduling_links")
