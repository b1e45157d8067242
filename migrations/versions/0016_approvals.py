"""approvals: keys and connected apps may have their writes wait for the owner (proposals)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-09 10:00:00

``api_keys.approval`` (``none``, ``destructive``, ``all``; every existing key ``none``): which
of a key's (or connected app's) writes wait for the owner. ``oauth_authorizations.approval``
carries the owner's choice on the consent page to the grant made when the code is exchanged.

``proposals`` holds one write that waits: the key that asked, its operation, the change it
would make as the API shows it (``kind``, ``before``, ``after``) and what applying it needs
(``items``, JSON: each change with the event rows before and after), its ``status``
(``pending``, ``approved``, ``rejected``, ``expired``, ``failed``) and when it expires. Two
indexes: the owner's proposals newest first (the *Pending* page, ``proposals list``), and the
pending ones by expiry (the housekeeping job).

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "api_keys",
        sa.Column("approval", sa.String(length=16), nullable=False, server_default="none"),
    )
    op.add_column(
        "oauth_authorizations", sa.Column("approval", sa.String(length=16), nullable=True)
    )
    op.create_table(
        "proposals",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("operation", sa.String(length=40), nullable=False),
        sa.Column("transport", sa.String(length=16), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("calendar_id", sa.String(length=40), nullable=False),
        sa.Column("before", sa.Text(), nullable=True),
        sa.Column("after", sa.Text(), nullable=True),
        sa.Column("items", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("decided_at", UTCDateTime(), nullable=True),
        sa.Column("decided_via", sa.String(length=16), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_proposals_user_created", "proposals", ["user_id", "created_at"])
    op.create_index("ix_proposals_status_expires", "proposals", ["status", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_proposals_status_expires", table_name="proposals")
    op.drop_index("ix_proposals_user_created", table_name="proposals")
    op.drop_table("proposals")
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("oauth_authorizations", "approval")
    op.drop_column("api_keys", "approval")
