"""iCalendar: subscription feeds, their fetch history, and imported UIDs

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 01:00:00

``ical_feeds``: a calendar's subscription feed, the URL's token stored as its SHA-256 only.
``ical_feed_fetches``: each fetch of a feed (its owner reads them). ``ical_uids``: the UID an
event was imported with, per calendar (imports are idempotent by UID; the feed gives the UID
back).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ical_feeds",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("user_id", sa.String(length=40), sa.ForeignKey("users.id"), nullable=False),
        sa.Column(
            "calendar_id", sa.String(length=40), sa.ForeignKey("calendars.id"), nullable=False
        ),
        sa.Column("token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(length=40), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.Column("last_fetched_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_ical_feeds_user_id", "ical_feeds", ["user_id"])
    op.create_table(
        "ical_feed_fetches",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("feed_id", sa.String(length=40), sa.ForeignKey("ical_feeds.id"), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("client_addr", sa.String(length=64), nullable=True),
        sa.Column("user_agent", sa.String(length=512), nullable=True),
    )
    op.create_index("ix_ical_feed_fetches_feed_at", "ical_feed_fetches", ["feed_id", "at"])
    op.create_table(
        "ical_uids",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "calendar_id", sa.String(length=40), sa.ForeignKey("calendars.id"), nullable=False
        ),
        sa.Column("uid_hash", sa.String(length=64), nullable=False),
        sa.Column("uid", sa.Text(), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.UniqueConstraint("calendar_id", "uid_hash", name="uq_ical_uids_calendar"),
    )
    op.create_index("ix_ical_uids_event_id", "ical_uids", ["event_id"])


def downgrade() -> None:
    op.drop_index("ix_ical_uids_event_id", table_name="ical_uids")
    op.drop_table("ical_uids")
    op.drop_index("ix_ical_feed_fetches_feed_at", table_name="ical_feed_fetches")
    op.drop_table("ical_feed_fetches")
    op.drop_index("ix_ical_feeds_user_id", table_name="ical_feeds")
    op.drop_table("ical_feeds")
