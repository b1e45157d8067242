"""The owner's default reminder: how long before each event their calendar apps alert.

Set on the settings page (Feeds) or with ``calendar-service reminders set``; feeds carry it on
every timed and all-day event as a ``VALARM`` (``ACTION:DISPLAY``, ``TRIGGER:-PT15M``), so a
phone subscribed to a feed rings before each meeting. One a owner, or none (the default).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Connection, ForeignKey, String, Table, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Field, SQLModel

from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.models import UTCDateTime

MINUTES_MOST = 40320  # four weeks, as Google Calendar's reminders
FIELD = "minutesBefore"


class DefaultReminder(SQLModel, table=True):
    __tablename__ = "default_reminders"

    user_id: str = Field(sa_column=Column(String(40), ForeignKey("users.id"), primary_key=True))
    minutes_before: int
    updated_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


reminders_t: Table = DefaultReminder.__table__  # type: ignore[attr-defined]


def check_minutes(value: object) -> int:
    """A reminder's minutes before the event: a whole number from 0 to ``MINUTES_MOST``."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if type(value) is not int or not 0 <= value <= MINUTES_MOST:
        raise ValidationFailed(
            [FieldError(FIELD, f"must be a whole number of minutes from 0 to {MINUTES_MOST}")]
        )
    return value


def get_reminder(conn: Connection, *, user_id: str) -> int | None:
    """The owner's default reminder in minutes before each event, or None when none is set."""
    found = conn.execute(
        select(reminders_t.c.minutes_before).where(reminders_t.c.user_id == user_id)
    ).scalar()
    return None if found is None else int(found)


def set_reminder(
    conn: Connection, *, user_id: str, minutes_before: object, now: datetime
) -> int | None:
    """Set the owner's default reminder (``None`` or ``""``: none); returns it as stored."""
    if minutes_before is None or minutes_before == "":
        conn.execute(delete(reminders_t).where(reminders_t.c.user_id == user_id))
        return None
    minutes = check_minutes(minutes_before)
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = insert(reminders_t).values(user_id=user_id, minutes_before=minutes, updated_at=now)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[reminders_t.c.user_id],
            set_={"minutes_before": minutes, "updated_at": now},
        )
    )
    return minutes
