"""undo_jobs: undoing a key's work as a job, kept in the database and done a batch at a time

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-15 09:00:00

``undo_jobs``: one row a job (the owner's *Undo work*, ``changes undo --key``): whose key, since
when, who undoes (the owner, through what), its state and progress (``total``, ``position``,
``undone``, ``refused``), and the runner holding it until ``lease_until``.
``undo_job_items``: the changes a job undoes, in its order (``position``), each with its
outcome once done.

Both databases. Downgrade: the two tables dropped.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "undo_jobs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("since", UTCDateTime(), nullable=True),
        sa.Column("actor_type", sa.String(length=16), nullable=False),
        sa.Column("actor_id", sa.String(length=40), nullable=True),
        sa.Column("transport", sa.String(length=16), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("undone", sa.Integer(), nullable=False),
        sa.Column("refused", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("runner", sa.String(length=40), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_undo_jobs_state", "undo_jobs", ["state"], unique=False)
    op.create_table(
        "undo_job_items",
        sa.Column("job_id", sa.String(length=40), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("change_seq", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("code", sa.String(length=40), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("job_id", "position"),
    )


def downgrade() -> None:
    op.drop_table("undo_job_items")
    op.drop_index("ix_undo_jobs_state", table_name="undo_jobs")
    op.drop_table("undo_jobs")
