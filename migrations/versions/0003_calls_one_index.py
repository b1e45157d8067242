"""calls keeps one index

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 15:45:00

Every request writes a call row; ``ix_calls_at`` only served the retention purge, which now goes
key by key through ``ix_calls_key_at``.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_calls_at", table_name="calls")


def downgrade() -> None:
    op.create_index("ix_calls_at", "calls", ["at"], unique=False)
