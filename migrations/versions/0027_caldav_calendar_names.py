"""caldav_calendar_names: the name a calendar app made a calendar under (MKCALENDAR)

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-17 09:00:00

RFC 4791 §5.3.1 lets a client name the calendar collection it makes with MKCALENDAR (its
last path segment under the calendar home). ``calendars.dav_name`` keeps that segment (NULL:
the calendar is served at its id, as every calendar before this revision and every one made
on the settings pages or by the CLI), unique per owner where it is set
(``uq_calendars_dav_name``, a partial unique index over the rows that have one).

Both databases. Downgrade: the index and the column go (calendars made so are then served
at their ids).

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAMED = "dav_name IS NOT NULL"


def upgrade() -> None:
    op.add_column("calendars", sa.Column("dav_name", sa.Text(), nullable=True))
    op.create_index(
        "uq_calendars_dav_name",
        "calendars",
        ["user_id", "dav_name"],
        unique=True,
        sqlite_where=sa.text(_NAMED),
        postgresql_where=sa.text(_NAMED),
    )


def downgrade() -> None:
    op.drop_index("uq_calendars_dav_name", table_name="calendars")
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("calendars", "dav_name")
