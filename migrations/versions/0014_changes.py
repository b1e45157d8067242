"""the change log: one row per change to an event; the call history marks dry runs

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-08 10:00:00

``changes`` holds one row per change to an event, written in the change's own transaction by
every path that changes events (REST, MCP, the settings pages, the CLI, an import, an undo):
who made it (``actor_type``, ``actor_id``), through what (``transport``), the request's id,
the event as the API showed it before and after (JSON), and the rows it touched as they were
stored before and which rows it left (``rows``, JSON: what an undo puts back and checks).
``seq`` orders the rows as they were written (SQLite's rowid); ``id`` is the public ``chg_…``
id, which carries its ``at``. One secondary index, (``user_id``, ``at``): the lists read the
owner's changes newest first through it, a change is found by its id through it (its owner
and its time), and the retention purge deletes through it. Every create writes a row: each
index more would be a page more to commit.

``calls.dry_run``: the call was a dry run (``?dryRun=true``, ``dryRun: true``), which wrote
nothing; every existing row is not one.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "changes",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("recurring_event_id", sa.String(length=64), nullable=True),
        sa.Column("new_series_id", sa.String(length=64), nullable=True),
        sa.Column("calendar_id", sa.String(length=40), nullable=False),
        sa.Column("actor_type", sa.String(length=16), nullable=False),
        sa.Column("actor_id", sa.String(length=40), nullable=True),
        sa.Column("transport", sa.String(length=16), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("before", sa.Text(), nullable=True),
        sa.Column("after", sa.Text(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("rows", sa.Text(), nullable=False),
        sa.Column("undoes", sa.String(length=40), nullable=True),
        sa.Column("undone_by", sa.String(length=40), nullable=True),
        sa.PrimaryKeyConstraint("seq"),
    )
    op.create_index("ix_changes_user_at", "changes", ["user_id", "at"])
    op.add_column(
        "calls",
        sa.Column("dry_run", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # Not a batch: ALTER TABLE ... DROP COLUMN (SQLite 3.35+) keeps the table as it is.
    op.drop_column("calls", "dry_run")
    op.drop_index("ix_changes_user_at", table_name="changes")
    op.drop_table("changes")
