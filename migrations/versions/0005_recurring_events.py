"""recurring events: series, their exceptions and cancelled occurrences

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 22:40:00

``events`` gains the series' rule (``recurrence``, JSON lines) and where it ends
(``recurrence_last_start``, ``recurrence_ends_at``), the exception's series and original start
(``recurring_event_id``, ``original_starts_at``) and ``status`` (``confirmed`` for every row
that exists). Ids grow to 64 characters: an occurrence id is its series' id and a UTC stamp.
A partial index holds the series rows only, for the list's search for series in a window.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SERIES_ROWS = sa.text("recurrence IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.alter_column("id", existing_type=sa.String(length=40), type_=sa.String(length=64))
        batch.add_column(sa.Column("recurrence", sa.Text(), nullable=True))
        batch.add_column(sa.Column("recurrence_last_start", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("recurrence_ends_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("recurring_event_id", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("original_starts_at", UTCDateTime(), nullable=True))
        batch.add_column(
            sa.Column("status", sa.String(length=16), nullable=False, server_default="confirmed")
        )
    op.create_index(
        "ix_events_series",
        "events",
        ["calendar_id", "starts_at", "recurrence_ends_at", "id", "updated_at"],
        sqlite_where=_SERIES_ROWS,
        postgresql_where=_SERIES_ROWS,
    )
    op.create_index("ix_events_recurring", "events", ["recurring_event_id", "original_starts_at"])


def downgrade() -> None:
    op.drop_index("ix_events_recurring", table_name="events")
    op.drop_index("ix_events_series", table_name="events")
    # Series and exceptions have no meaning before this revision: keep the single events.
    op.execute("DELETE FROM events WHERE recurrence IS NOT NULL OR recurring_event_id IS NOT NULL")
    with op.batch_alter_table("events") as batch:
        for name in (
            "status",
            "original_starts_at",
            "recurring_event_id",
            "recurrence_ends_at",
            "recurrence_last_start",
            "recurrence",
        ):
            batch.drop_column(name)
        batch.alter_column("id", existing_type=sa.String(length=64), type_=sa.String(length=40))
