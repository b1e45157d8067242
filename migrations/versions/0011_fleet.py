"""running as a fleet: shared rate buckets, and a NOTIFY when deliveries fall due

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 03:30:00

``rate_buckets`` holds each key's request budget as every process on the database sees it
(``calendar_service.ratelimit``): processes lease tokens from it in batches.

On PostgreSQL a trigger on ``webhook_deliveries`` calls ``pg_notify('calendar_outbox', '')``
when a row becomes due for sending (inserted as ``pending``, or moved back to ``pending`` by a
re-send), in the writing transaction: the notification is delivered when, and only if, that
transaction commits, whatever wrote the row. Delivery workers ``LISTEN`` on the channel
(``webhooks.listener``). PostgreSQL folds the identical notifications of one transaction into
one. SQLite has no such thing: its workers poll, as before.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHANNEL = "calendar_outbox"  # webhooks.listener.CHANNEL

_FUNCTION = f"""
CREATE OR REPLACE FUNCTION webhook_deliveries_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', '');
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.create_table(
        "rate_buckets",
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key_id"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_FUNCTION)
    op.execute(
        "CREATE TRIGGER webhook_deliveries_notify_insert AFTER INSERT ON webhook_deliveries "
        "FOR EACH ROW WHEN (NEW.status = 'pending') "
        "EXECUTE FUNCTION webhook_deliveries_notify()"
    )
    op.execute(
        "CREATE TRIGGER webhook_deliveries_notify_update AFTER UPDATE ON webhook_deliveries "
        "FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status <> 'pending') "
        "EXECUTE FUNCTION webhook_deliveries_notify()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS webhook_deliveries_notify_update ON webhook_deliveries")
        op.execute("DROP TRIGGER IF EXISTS webhook_deliveries_notify_insert ON webhook_deliveries")
        op.execute("DROP FUNCTION IF EXISTS webhook_deliveries_notify()")
    op.drop_table("rate_buckets")
