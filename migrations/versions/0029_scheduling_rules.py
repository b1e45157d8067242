"""scheduling_rules: the owner's rules for agents, and the keys they do not bind

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07 19:30:00

``scheduling_rules`` keeps one row per owner who has set rules for agents (working hours,
buffers, limits, focus time...): the rules object as JSON, checked before it is stored.
``api_keys.rules`` says whether they bind a key's writes: ``bound`` (every key there before
this revision) or ``exempt``.

Both databases. Downgrade: the table and the column go (every key is then bound by no rule).

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduling_rules",
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("rules", sa.Text(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("user_id"),
    )
    op.add_column(
        "api_keys",
        sa.Column("rules", sa.String(length=8), nullable=False, server_default="bound"),
    )


def downgrade() -> None:
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("api_keys", "rules")
    op.drop_table("scheduling_rules")
