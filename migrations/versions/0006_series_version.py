"""each calendar counts the changes of its series: the list keeps them in memory meanwhile

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 01:00:00

``calendars.series_version`` grows by one (or more) with every insert, update or delete of an
``events`` row that is a series or an exception of one (before or after the change), in the
same transaction, by triggers: whatever writes the row (the API, the CLI, an import, a
migration, a person at a SQL prompt), a list that reads the calendar with a version it has seen
may use the series it read for that version. A calendar that never had a series stays at 0.

On SQLite a later migration that rebuilds ``events`` (a batch ``alter_column``) drops these
triggers with the table: it must create them again (``create_triggers``);
``tests/core/events/test_series_version.py`` fails at head if any is missing.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_IS_SERIES = "({row}.recurrence IS NOT NULL OR {row}.recurring_event_id IS NOT NULL)"
_BUMP = "UPDATE calendars SET series_version = series_version + 1 WHERE id = {row}.calendar_id"

_SQLITE_TRIGGERS = {
    "events_series_version_insert": ("INSERT", ("NEW",)),
    "events_series_version_update": ("UPDATE", ("OLD", "NEW")),
    "events_series_version_delete": ("DELETE", ("OLD",)),
}

_POSTGRESQL_FUNCTION = f"""
CREATE OR REPLACE FUNCTION events_series_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND {_IS_SERIES.format(row="OLD")} THEN
        {_BUMP.format(row="OLD")};
    END IF;
    IF TG_OP <> 'DELETE' AND {_IS_SERIES.format(row="NEW")} THEN
        {_BUMP.format(row="NEW")};
    END IF;
    RETURN NULL;
END
$$
"""


def create_triggers() -> None:
    """The triggers that keep ``calendars.series_version`` (both backends)."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_POSTGRESQL_FUNCTION)
        op.execute("DROP TRIGGER IF EXISTS events_series_version ON events")
        op.execute(
            "CREATE TRIGGER events_series_version AFTER INSERT OR UPDATE OR DELETE ON events "
            "FOR EACH ROW EXECUTE FUNCTION events_series_version()"
        )
        return
    for name, (event, rows) in _SQLITE_TRIGGERS.items():
        when = " OR ".join(_IS_SERIES.format(row=row) for row in rows)
        # An update that moves a series to another calendar changes both.
        bumps = "; ".join(_BUMP.format(row=row) for row in rows)
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON events FOR EACH ROW "
            f"WHEN {when} BEGIN {bumps}; END"
        )


def upgrade() -> None:
    with op.batch_alter_table("calendars") as batch:
        batch.add_column(
            sa.Column("series_version", sa.BigInteger(), nullable=False, server_default="0")
        )
    # Calendars that hold series already start past 0 (0: never had one).
    op.execute(
        "UPDATE calendars SET series_version = 1 WHERE id IN "
        "(SELECT calendar_id FROM events WHERE recurrence IS NOT NULL "
        "OR recurring_event_id IS NOT NULL)"
    )
    create_triggers()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS events_series_version ON events")
        op.execute("DROP FUNCTION IF EXISTS events_series_version()")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    with op.batch_alter_table("calendars") as batch:
        batch.drop_column("series_version")
