"""a series' own time zone

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30 10:00:00

``events.time_zone``: the IANA zone whose wall clock a timed series repeats at (Google
Calendar's ``start.timeZone``), set when it is not its calendar's (a New York series imported
into a Berlin calendar). ``NULL``, as every existing row has it, means the calendar's zone, as
before. A plain nullable column: no index, no data to move.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "events",
        sa.Column("time_zone", sa.String(length=64), nullable=True),
    )


def downgrade() -> None:
    # Not a batch: rebuilding the table on SQLite would drop its triggers (0006, 0009).
    op.drop_column("events", "time_zone")
