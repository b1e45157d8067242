"""caldav_object_names: the name a calendar app PUT an object under, when it is not <UID>.ics

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-16 09:00:00

RFC 4791 lets a client name the calendar object resources it creates; apps such as Outlook's
CalDAV Synchronizer name them other than ``<UID>.ics``. ``ical_uids.object_name`` keeps that
name (NULL: the object is ``<UID>.ics``, as every object before this revision), with a
partial index ``ix_ical_uids_object_name`` (``calendar_id``, ``object_name``) over the rows
that have one, which a request for an object by its name reads.

Both databases. Downgrade: the index and the column go (the objects named so are then found
at ``<UID>.ics`` again).

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAMED = "object_name IS NOT NULL"


def upgrade() -> None:
    op.add_column("ical_uids", sa.Column("object_name", sa.Text(), nullable=True))
    op.create_index(
        "ix_ical_uids_object_name",
        "ical_uids",
        ["calendar_id", "object_name"],
        unique=False,
        sqlite_where=sa.text(_NAMED),
        postgresql_where=sa.text(_NAMED),
    )


def downgrade() -> None:
    op.drop_index("ix_ical_uids_object_name", table_name="ical_uids")
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("ical_uids", "object_name")
