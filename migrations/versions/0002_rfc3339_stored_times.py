"""SQLite stores date-times as RFC 3339 UTC text

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 15:40:00

SQLite kept ``UTCDateTime`` values as ``2026-03-02 08:30:00.000000``; they are now
``2026-03-02T08:30:00.000000Z`` (still fixed width, so still sorted in time order), which the
API's RFC 3339 form is one ``replace`` away from. Rows written before are rewritten in place;
PostgreSQL stores ``timestamptz`` and has nothing to change.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Every UTCDateTime column as of this revision.
COLUMNS: dict[str, tuple[str, ...]] = {
    "service_secrets": ("created_at",),
    "sign_in_failures": ("at",),
    "users": ("created_at",),
    "calendars": ("created_at",),
    "owner_sessions": ("created_at", "expires_at"),
    "webhook_endpoints": (
        "previous_secret_expires_at",
        "failing_since",
        "created_at",
        "updated_at",
    ),
    "api_keys": ("created_at", "expires_at", "revoked_at"),
    "events": ("starts_at", "ends_at", "created_at", "updated_at"),
    "webhook_deliveries": ("next_attempt_at", "lease_until", "created_at", "completed_at"),
    "calls": ("at",),
    "idempotency_keys": ("created_at", "completed_at"),
    "webhook_attempts": ("at",),
}


def _rewrite(old_separator: str, old_suffix: str, new_separator: str, new_suffix: str) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name, columns in COLUMNS.items():
        table = sa.table(name, *(sa.column(c, sa.String) for c in columns))
        for column in columns:
            col = table.c[column]
            # Only values in the old shape: its length, and its separator at position 11.
            op.execute(
                sa.update(table)
                .where(
                    col.is_not(None),
                    sa.func.length(col) == 26 + len(old_suffix),
                    sa.func.substr(col, 11, 1) == old_separator,
                )
                .values(
                    {
                        column: sa.func.substr(col, 1, 10)
                        + new_separator
                        + sa.func.substr(col, 12, 15)
                        + new_suffix
                    }
                )
            )


def upgrade() -> None:
    _rewrite(" ", "", "T", "Z")


def downgrade() -> None:
    _rewrite("T", "Z", " ", "")
