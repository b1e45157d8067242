"""incremental sync: the last change of each event, kept by triggers on events

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 01:10:00

``event_sync`` holds one row per event changed lately: its calendar, when it changed (``seq``)
and whether it was deleted (a tombstone). Triggers on ``events`` write it in the transaction
of every insert, update and delete, whatever makes them (the API, the CLI, an import, a person
at a SQL prompt), so a sync token (``events.sync``) misses no write path. Rows older than the
retention (``CALENDAR_SYNC_RETENTION_DAYS``) are purged by the maintenance job.

``seq``: on PostgreSQL the writing transaction's id (``pg_current_xact_id()``); a token holds a
snapshot (``pg_current_snapshot()``) and the next sync returns the rows whose transaction that
snapshot did not see, so a transaction that took its id early and committed late is not
skipped. On SQLite (one writer at a time) the next value of the one-row ``sync_clock``.
docs/sync.md explains both.

On SQLite a later migration that rebuilds ``events`` (a batch ``alter_column``) drops these
triggers with the table: it must create them again (``create_triggers``);
``tests/core/events/test_sync.py`` fails at head if any is missing.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_TRIGGERS = {
    "events_sync_insert": ("INSERT", "NEW", 0),
    "events_sync_update": ("UPDATE", "NEW", 0),
    "events_sync_delete": ("DELETE", "OLD", 1),
}
# The stored UTC text of models.UTCDateTime (timeutil.utc_text): %f is seconds to the
# millisecond, the microseconds' last three digits are zeros.
_SQLITE_NOW = "strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')"
_SQLITE_CLOCK = "SELECT value FROM sync_clock WHERE id = 1"
_SQLITE_BODY = (
    "UPDATE sync_clock SET value = value + 1 WHERE id = 1; "
    "INSERT OR REPLACE INTO event_sync (event_id, calendar_id, seq, deleted, changed_at) "
    "VALUES ({values});"
)

_POSTGRESQL_UPSERT = """
        INSERT INTO event_sync (event_id, calendar_id, seq, deleted, changed_at)
        VALUES ({row}.id, {row}.calendar_id, pg_current_xact_id()::text::bigint, {deleted}, now())
        ON CONFLICT (event_id) DO UPDATE SET calendar_id = EXCLUDED.calendar_id,
            seq = EXCLUDED.seq, deleted = EXCLUDED.deleted, changed_at = EXCLUDED.changed_at;"""

_POSTGRESQL_FUNCTION = f"""
CREATE OR REPLACE FUNCTION events_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN{_POSTGRESQL_UPSERT.format(row="OLD", deleted="true")}
    ELSE{_POSTGRESQL_UPSERT.format(row="NEW", deleted="false")}
    END IF;
    RETURN NULL;
END
$$
"""


def create_triggers() -> None:
    """The triggers that keep ``event_sync`` (both backends)."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_POSTGRESQL_FUNCTION)
        op.execute("DROP TRIGGER IF EXISTS events_sync ON events")
        op.execute(
            "CREATE TRIGGER events_sync AFTER INSERT OR UPDATE OR DELETE ON events "
            "FOR EACH ROW EXECUTE FUNCTION events_sync()"
        )
        return
    for name, (event, row, deleted) in _SQLITE_TRIGGERS.items():
        values = f"{row}.id, {row}.calendar_id, ({_SQLITE_CLOCK}), {deleted}, {_SQLITE_NOW}"
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
        body = _SQLITE_BODY.format(values=values)
        op.execute(f"CREATE TRIGGER {name} AFTER {event} ON events FOR EACH ROW BEGIN {body} END")


def upgrade() -> None:
    op.create_table(
        "event_sync",
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("calendar_id", sa.String(length=40), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("changed_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("event_id"),
    )
    op.create_index("ix_event_sync_calendar_seq", "event_sync", ["calendar_id", "seq", "event_id"])
    op.create_index("ix_event_sync_changed_at", "event_sync", ["changed_at"])
    op.create_table(
        "sync_clock",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO sync_clock (id, value) VALUES (1, 0)")
    create_triggers()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS events_sync ON events")
        op.execute("DROP FUNCTION IF EXISTS events_sync()")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("sync_clock")
    op.drop_index("ix_event_sync_changed_at", table_name="event_sync")
    op.drop_index("ix_event_sync_calendar_seq", table_name="event_sync")
    op.drop_table("event_sync")
