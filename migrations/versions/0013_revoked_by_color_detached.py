"""who revoked a key, a calendar's colour, keys and feeds that outlive their calendar

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 10:00:00

- ``api_keys.revoked_by``: who or what revoked a key or a connected app's grant, written by
  every revocation from now on: ``owner``, ``app`` (the app revoked its own grant, RFC 7009),
  ``reuse`` (a used authorization code or refresh token was presented again) or ``calendar``
  (its calendar was deleted). ``NULL`` on every existing row: a key's is its owner's, a grant's
  is not known.
- ``calendars.color``: ``#rrggbb`` or ``NULL`` (none chosen, as every existing calendar).
- ``api_keys.calendar_id`` and ``ical_feeds.calendar_id`` lose their foreign keys: a revoked
  key or feed keeps the id of its deleted calendar, and a feed its fetch history. Nothing is
  moved; no index changes.

Frozen: this file imports nothing of the service. On SQLite a foreign key goes by rebuilding
its table (``_rebuild``): not with a batch, which copies the rows *before* dropping the old
table, so that the dropped rows of a table others refer to (``calls`` to ``api_keys``,
``ical_feed_fetches`` to ``ical_feeds``) count as violations that the copy never cancels, and
the commit fails (migrations run in a transaction, with ``foreign_keys`` on, where the pragma
cannot be turned off). Here the rows go back *after* the old table is dropped, with the
foreign keys deferred to the commit: each row put back cancels the violations its drop counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The two foreign keys dropped: (table, column); both refer to calendars.id.
_DETACHED = (("api_keys", "calendar_id"), ("ical_feeds", "calendar_id"))
# As SQLAlchemy wrote them into SQLite's schema (0001, 0008), and as the downgrade puts back.
_SQLITE_CLAUSE = re.compile(
    r',\s*FOREIGN KEY\s*\(\s*"?calendar_id"?\s*\)\s*REFERENCES\s*"?calendars"?\s*\(\s*"?id"?\s*\)',
    re.IGNORECASE,
)


def upgrade() -> None:
    op.add_column(
        "api_keys",
        sa.Column("revoked_by", sa.String(length=16), nullable=True),
    )
    op.add_column(
        "calendars",
        sa.Column("color", sa.String(length=7), nullable=True),
    )
    bind = op.get_bind()
    for table, column in _DETACHED:
        if bind.dialect.name == "sqlite":
            _rebuild(table, _without_reference)
        else:
            op.drop_constraint(_reference_name(table, column), table, type_="foreignkey")


def downgrade() -> None:
    # What a foreign key to calendars cannot hold: a revoked key keeps no calendar (as before
    # 0013); a feed of a deleted calendar goes, with its fetches.
    op.execute(
        "UPDATE api_keys SET calendar_id = NULL WHERE calendar_id IS NOT NULL "
        "AND calendar_id NOT IN (SELECT id FROM calendars)"
    )
    op.execute(
        "DELETE FROM ical_feed_fetches WHERE feed_id IN (SELECT id FROM ical_feeds "
        "WHERE calendar_id NOT IN (SELECT id FROM calendars))"
    )
    op.execute("DELETE FROM ical_feeds WHERE calendar_id NOT IN (SELECT id FROM calendars)")
    bind = op.get_bind()
    for table, column in _DETACHED:
        if bind.dialect.name == "sqlite":
            _rebuild(table, _with_reference)
        else:
            op.create_foreign_key(f"{table}_{column}_fkey", table, "calendars", [column], ["id"])
    # Not batches: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the tables' triggers.
    op.drop_column("calendars", "color")
    op.drop_column("api_keys", "revoked_by")


def _reference_name(table: str, column: str) -> str:
    """The name PostgreSQL gave the foreign key of ``table.column`` to calendars."""
    for found in sa.inspect(op.get_bind()).get_foreign_keys(table):
        if found["constrained_columns"] == [column] and found["referred_table"] == "calendars":
            name = found["name"]
            assert name, f"the foreign key of {table}.{column} has no name"
            return str(name)
    raise RuntimeError(f"no foreign key of {table}.{column} to calendars")


def _without_reference(sql: str) -> str:
    changed, count = _SQLITE_CLAUSE.subn("", sql)
    if count != 1:
        raise RuntimeError(f"expected one foreign key to calendars in: {sql}")
    return changed


def _with_reference(sql: str) -> str:
    end = sql.rindex(")")
    return f"{sql[:end].rstrip()}, \n\tFOREIGN KEY(calendar_id) REFERENCES calendars (id)\n)"


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
    kept = f"_0013_rows_{table}"
    conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")  # until the commit (reset by it)
    # Names from this file and SQLite's own schema only.
    conn.exec_driver_sql(f'CREATE TABLE "{kept}" AS SELECT {columns} FROM "{table}"')  # noqa: S608
    conn.exec_driver_sql(f'DROP TABLE "{table}"')
    conn.exec_driver_sql(created)
    conn.exec_driver_sql(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM "{kept}"')  # noqa: S608
    conn.exec_driver_sql(f'DROP TABLE "{kept}"')
    for statement in others:
        conn.exec_driver_sql(statement)
