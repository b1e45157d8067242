"""attendees: events have people in them; invitations go out from a mail outbox

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-10 10:00:00

``events.attendees`` (JSON text, NULL for an event without attendees, as nearly all are): the
organizer, the attendees with their responses, and the iCalendar ``SEQUENCE`` that grows with
each change of time, place or attendees. One column, so that the list reads nothing more for an
event without people.

``api_keys.may_invite`` (every existing key false): whether a key (or connected app) may send
invitations (``sendUpdates=all``); ``oauth_authorizations.may_invite`` carries the owner's
choice on the consent page to the grant made when the code is exchanged.

``mail_outbox`` holds one message to one recipient for one change of one event (unique on the
three, so never queued twice): its iMIP method, what the message is made of (JSON), its status
(``pending``, ``retrying``, ``sent``, ``failed``), attempts, the next attempt's time and the
lease of the worker holding it. Indexes: the owner's mail newest first, what is due, and the
key's recipients of the last day (``CALENDAR_INVITES_PER_DAY``).

``free_busy_shares``: an owner shares their free/busy with another owner (by email), whose
``findFreeTime`` may then take them among its ``attendees``.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("events", sa.Column("attendees", sa.Text(), nullable=True))
    op.add_column(
        "api_keys",
        sa.Column("may_invite", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("oauth_authorizations", sa.Column("may_invite", sa.Boolean(), nullable=True))
    op.create_table(
        "mail_outbox",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=True),
        sa.Column("change_id", sa.String(length=40), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=False),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("sent_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "change_id", "event_id", "recipient", name="uq_mail_outbox_change_recipient"
        ),
    )
    op.create_index("ix_mail_outbox_user_created", "mail_outbox", ["user_id", "created_at"])
    op.create_index("ix_mail_outbox_due", "mail_outbox", ["status", "next_attempt_at"])
    op.create_index("ix_mail_outbox_key_created", "mail_outbox", ["key_id", "created_at"])
    op.create_table(
        "free_busy_shares",
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("viewer_email", sa.String(length=320), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "viewer_email"),
    )
    op.create_index("ix_free_busy_shares_viewer", "free_busy_shares", ["viewer_email"])


def downgrade() -> None:
    op.drop_index("ix_free_busy_shares_viewer", table_name="free_busy_shares")
    op.drop_table("free_busy_shares")
    op.drop_index("ix_mail_outbox_key_created", table_name="mail_outbox")
    op.drop_index("ix_mail_outbox_due", table_name="mail_outbox")
    op.drop_index("ix_mail_outbox_user_created", table_name="mail_outbox")
    op.drop_table("mail_outbox")
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("oauth_authorizations", "may_invite")
    op.drop_column("api_keys", "may_invite")
    op.drop_column("events", "attendees")
