"""calendars_default_by_owner: the owner's default calendar found by an index

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07 20:00:00

A create through a key of all the owner's calendars that names no calendar goes to the
default one (``calendars.resolve_target``), read by ``user_id`` and ``is_default``. Through
``ix_calendars_user_id`` alone that read visited every calendar of the owner (some 50k
instructions a create for 20 calendars); ``ix_calendars_user_default`` on
(``user_id``, ``is_default``) finds it in one step. A calendar written costs one index entry
more, a create none.

Both databases. Downgrade: the index goes.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_calendars_user_default", "calendars", ["user_id", "is_default"])


def downgrade() -> None:
    op.drop_index("ix_calendars_user_default", table_name="calendars")
