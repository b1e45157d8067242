"""fewer_index_entries_a_write: a plain event no longer writes an entry into
``ix_events_recurring``, and a change of an event none into ``ix_event_sync_changed_at``

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-14 09:00:00

Every create wrote an entry (and, in each commit, a page) into two indexes that nothing on the
write's path reads:

- ``ix_events_recurring`` (``recurring_event_id``, ``original_starts_at``) held every event,
  though only an exception of a series has a ``recurring_event_id``; every query that reads
  it asks for a series' id (``=``, ``IN``) or for ``IS NOT NULL``, which both databases prove
  implies the index's condition: it now holds the exceptions only.
- ``ix_event_sync_changed_at`` served only the hourly purge of old changes
  (``events.sync.purge_changes``), which now reads ``event_sync`` whole: a table of the changes
  of the last days, read once an hour off the request path.

Both databases. Downgrade: the two indexes as they were.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EXCEPTIONS = "recurring_event_id IS NOT NULL"


def upgrade() -> None:
    op.drop_index("ix_event_sync_changed_at", table_name="event_sync")
    op.drop_index("ix_events_recurring", table_name="events")
    op.create_index(
        "ix_events_recurring",
        "events",
        ["recurring_event_id", "original_starts_at"],
        unique=False,
        sqlite_where=sa.text(_EXCEPTIONS),
        postgresql_where=sa.text(_EXCEPTIONS),
    )


def downgrade() -> None:
    op.drop_index("ix_events_recurring", table_name="events")
    op.create_index(
        "ix_events_recurring", "events", ["recurring_event_id", "original_starts_at"], unique=False
    )
    op.create_index("ix_event_sync_changed_at", "event_sync", ["changed_at"], unique=False)
