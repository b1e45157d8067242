"""caldav: a key may be an app password (HTTP Basic sign-in of calendar apps over CalDAV)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-10 10:00:00

``api_keys.app_password`` (every existing key ``false``): the key signs a calendar app in
over CalDAV with HTTP Basic, the owner's email as the user name and the key's secret as the
password. Keys without it are refused there (401), as before.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "api_keys",
        sa.Column("app_password", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("api_keys", "app_password")
