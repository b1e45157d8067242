"""keys' webhook subscriptions, time triggers, the owner's default reminder

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-08 10:00:00

- ``webhook_endpoints`` holds a key's subscriptions beside the owner's endpoint: ``key_id``
  (``NULL``: the owner's own endpoint, at most one an owner, now a partial unique index instead
  of ``UNIQUE (user_id)``), ``events`` (JSON list of the types it takes; ``NULL``: the change
  types, as every existing endpoint), ``calendar_ids`` (JSON list; ``NULL``: every calendar its
  key reaches) and ``minutes_before`` (JSON list of ``calendar.event.starting`` offsets).
  Every existing row is the owner's endpoint (``key_id`` ``NULL``): nothing moves.
- ``trigger_plan``: the time triggers planned a horizon ahead, one row per occurrence, kind and
  offset, found by due time; ``trigger_state``: the planner's place in the change feed and how
  far ahead it has planned; ``trigger_users``: the offsets each owner's plan was made for.
- ``default_reminders``: the owner's default reminder, which feeds carry as ``VALARM``.

Frozen: this file imports nothing of the service. On SQLite ``UNIQUE (user_id)`` goes by
rebuilding the table, rows put back after the old table is dropped with the foreign keys
deferred to the commit (as migration 0013 does, for the same reason: ``webhook_deliveries``
refers to the table).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OWNER_ONLY = sa.text("key_id IS NULL")
_UNIQUE_CLAUSE = re.compile(r',\s*UNIQUE\s*\(\s*"?user_id"?\s*\)', re.IGNORECASE)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _rebuild("webhook_endpoints", _without_unique)
    else:
        op.drop_constraint(_unique_name(), "webhook_endpoints", type_="unique")
    op.add_column("webhook_endpoints", sa.Column("key_id", sa.String(length=40), nullable=True))
    op.add_column("webhook_endpoints", sa.Column("events", sa.Text(), nullable=True))
    op.add_column("webhook_endpoints", sa.Column("calendar_ids", sa.Text(), nullable=True))
    op.add_column("webhook_endpoints", sa.Column("minutes_before", sa.Text(), nullable=True))
    op.create_index(
        "ux_webhook_endpoints_owner",
        "webhook_endpoints",
        ["user_id"],
        unique=True,
        sqlite_where=_OWNER_ONLY,
        postgresql_where=_OWNER_ONLY,
    )
    op.create_index(
        "ix_webhook_endpoints_user_key", "webhook_endpoints", ["user_id", "key_id"], unique=False
    )

    op.create_table(
        "trigger_plan",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("calendar_id", sa.String(length=40), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("series_id", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("minutes_before", sa.Integer(), nullable=False),
        sa.Column("due_at", UTCDateTime(), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("event", sa.Text(), nullable=False),
        sa.Column("fired_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "event_id", "kind", "minutes_before", name="uq_trigger_plan_occurrence"
        ),
    )
    op.create_index("ix_trigger_plan_due", "trigger_plan", ["status", "due_at"], unique=False)
    op.create_index("ix_trigger_plan_series", "trigger_plan", ["series_id"], unique=False)
    op.create_index("ix_trigger_plan_user", "trigger_plan", ["user_id", "due_at"], unique=False)
    op.create_table(
        "trigger_state",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("position", sa.Text(), nullable=False),
        sa.Column("planned_until", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "trigger_users",
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("offsets", sa.Text(), nullable=False),
        sa.Column("ended", sa.Boolean(), nullable=False),
        sa.Column("planned_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )
    op.create_table(
        "default_reminders",
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("minutes_before", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("user_id"),
    )


def downgrade() -> None:
    op.drop_table("default_reminders")
    op.drop_table("trigger_users")
    op.drop_table("trigger_state")
    op.drop_index("ix_trigger_plan_user", table_name="trigger_plan")
    op.drop_index("ix_trigger_plan_series", table_name="trigger_plan")
    op.drop_index("ix_trigger_plan_due", table_name="trigger_plan")
    op.drop_table("trigger_plan")
    # What one endpoint an owner cannot hold: the keys' subscriptions, with their deliveries.
    subscriptions = "SELECT id FROM webhook_endpoints WHERE key_id IS NOT NULL"
    deliveries = f"SELECT id FROM webhook_deliveries WHERE endpoint_id IN ({subscriptions})"  # noqa: S608
    op.execute(f"DELETE FROM webhook_attempts WHERE delivery_id IN ({deliveries})")  # noqa: S608
    op.execute(f"DELETE FROM webhook_deliveries WHERE endpoint_id IN ({subscriptions})")  # noqa: S608
    op.execute("DELETE FROM webhook_endpoints WHERE key_id IS NOT NULL")
    op.drop_index("ix_webhook_endpoints_user_key", table_name="webhook_endpoints")
    op.drop_index("ux_webhook_endpoints_owner", table_name="webhook_endpoints")
    # Not batches: ALTER TABLE ... DROP COLUMN (SQLite 3.35+).
    for column in ("minutes_before", "calendar_ids", "events", "key_id"):
        op.drop_column("webhook_endpoints", column)
    if op.get_bind().dialect.name == "sqlite":
        _rebuild("webhook_endpoints", _with_unique)
    else:
        op.create_unique_constraint(
            "webhook_endpoints_user_id_key", "webhook_endpoints", ["user_id"]
        )


def _unique_name() -> str:
    """The name PostgreSQL gave ``UNIQUE (user_id)`` of ``webhook_endpoints``."""
    for found in sa.inspect(op.get_bind()).get_unique_constraints("webhook_endpoints"):
        if found["column_names"] == ["user_id"]:
            name = found["name"]
            assert name, "the unique constraint of webhook_endpoints.user_id has no name"
            return str(name)
    raise RuntimeError("no unique constraint on webhook_endpoints.user_id")


def _without_unique(sql: str) -> str:
    changed, count = _UNIQUE_CLAUSE.subn("", sql)
    if count != 1:
        raise RuntimeError(f"expected one UNIQUE (user_id) in: {sql}")
    return changed


def _with_unique(sql: str) -> str:
    end = sql.rindex(")")
    return f"{sql[:end].rstrip()}, \n\tUNIQUE (user_id)\n)"


def _rebuild(table: str, change: Callable[[str], str]) -> None:
    """SQLite: rebuild ``table`` with its ``CREATE TABLE`` statement changed by ``change``,
    keeping its rows, indexes and triggers (see the module's docstring for the order)."""
    conn = op.get_bind()
    found = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).scalar_one()
    created = change(str(found))
    # Indexes and triggers go with the table; those SQLite made itself (UNIQUE) have no sql.
    others = [
        str(row[0])
        for row in conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
            "AND sql IS NOT NULL",
            (table,),
        )
    ]
    columns = ", ".join(
        f'"{row[1]}"' for row in conn.exec_driver_sql(f'PRAGMA table_info("{table}")')
    )
    kept = f"_0015_rows_{table}"
    conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")  # until the commit (reset by it)
    # Names from this file and SQLite's own schema only.
    conn.exec_driver_sql(f'CREATE TABLE "{kept}" AS SELECT {columns} FROM "{table}"')  # noqa: S608
    conn.exec_driver_sql(f'DROP TABLE "{table}"')
    conn.exec_driver_sql(created)
    conn.exec_driver_sql(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM "{kept}"')  # noqa: S608
    conn.exec_driver_sql(f'DROP TABLE "{kept}"')
    for statement in others:
        conn.exec_driver_sql(statement)
