"""events are kept within the accepted date range

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 19:30:00

The service now accepts the instants from 1900-01-01T00:00:00Z to 2201-01-01T00:00:00Z
(``timeutil.EARLIEST``/``LATEST``). Events an older version stored outside them (such as one
from year 1 to year 9999) have their bounds clamped to the range: every window a list can ask
for lies within the range, so such an event overlaps exactly the same windows as before, and
its times can now be shown in any zone and sent back as they are. A calendar's longest-event
length is cut to the longest an event can now last. Nothing to undo on downgrade.

The range is written out here rather than imported: a migration must not change with the code.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2201, 1, 1, tzinfo=UTC)
LONGEST_SECONDS = int((LATEST - EARLIEST).total_seconds()) + 1  # as events._bump_longest counts


def _stored(value: datetime) -> object:
    """As the column holds it: SQLite keeps fixed-width UTC text that sorts in time order."""
    if op.get_bind().dialect.name == "sqlite":
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def upgrade() -> None:
    events = sa.table("events", sa.column("starts_at"), sa.column("ends_at"))
    for column in (events.c.starts_at, events.c.ends_at):
        for outside, edge in (
            (column < _stored(EARLIEST), EARLIEST),
            (column > _stored(LATEST), LATEST),
        ):
            op.execute(sa.update(events).where(outside).values({column.name: _stored(edge)}))
    calendars = sa.table("calendars", sa.column("max_event_seconds"))
    op.execute(
        sa.update(calendars)
        .where(calendars.c.max_event_seconds > LONGEST_SECONDS)
        .values(max_event_seconds=LONGEST_SECONDS)
    )


def downgrade() -> None:
    pass  # the clamped bounds are as good for every window; the old ones are not kept
