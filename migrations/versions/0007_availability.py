"""availability: events' transparency

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 01:00:00

``events`` gains ``transparency``: ``opaque`` (busy, what every existing event is) or
``transparent`` (shown, but free time for ``queryFreeBusy``, ``findFreeTime`` and ``ifFree``).
Keys may now have the permission ``freebusy``: ``api_keys.permission`` is already text wide
enough, so that needs no change of schema.

On SQLite the column is added with ``ALTER TABLE ... ADD COLUMN`` (the batch does not rebuild
``events`` for it), so the triggers of 0006 (``series_version``) stay;
``tests/core/events/test_series_version.py`` checks them at head.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.add_column(
            sa.Column("transparency", sa.String(length=16), nullable=False, server_default="opaque")
        )


def downgrade() -> None:
    # A free/busy key has no meaning before this revision: it goes.
    op.execute(
        "DELETE FROM calls WHERE key_id IN (SELECT id FROM api_keys WHERE permission = 'freebusy')"
    )
    op.execute(
        "DELETE FROM idempotency_keys WHERE key_id IN "
        "(SELECT id FROM api_keys WHERE permission = 'freebusy')"
    )
    op.execute("DELETE FROM api_keys WHERE permission = 'freebusy'")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("transparency")
