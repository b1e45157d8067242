"""Free/busy sharing between owners: an owner lets another (named by email) see when they are
busy, so that the other's ``findFreeTime`` may take them among its ``attendees``
(``availability``). Only busy times are ever shared, never titles; the owner sets it on the
settings page (*Calendars*, "Share my free/busy").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, String, Table, delete, func, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Field, SQLModel

from calendar_service.access.keys import owner_principal
from calendar_service.calendar.calendars import CalendarRow, accessible_calendars
from calendar_service.platform.emails import check_email
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.models import UTCDateTime, users_t

MAX_ASKED = 20  # attendees one findFreeTime may name


class FreeBusyShare(SQLModel, table=True):
    """The owner ``user_id`` shares their free/busy with the owner of ``viewer_email``."""

    __tablename__ = "free_busy_shares"
    __table_args__ = (Index("ix_free_busy_shares_viewer", "viewer_email"),)

    user_id: str = Field(primary_key=True, max_length=40)
    viewer_email: str = Field(sa_column=Column(String(320), primary_key=True))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


def _table() -> Table:
    table: Table = FreeBusyShare.__table__  # type: ignore[attr-defined]
    return table


shares_t = _table()


def share(conn: Any, *, user_id: str, email: str, now: datetime) -> str:
    """Share the owner's free/busy with ``email`` (kept lower-case); returns it."""
    errors: list[FieldError] = []
    checked = check_email(email, "email", errors)
    if checked is None:
        raise ValidationFailed(errors)
    viewer = checked.lower()
    own = conn.execute(select(users_t.c.email).where(users_t.c.id == user_id)).scalar_one()
    if viewer == str(own).lower():
        raise ValidationFailed([FieldError("email", "is your own address")])
    insert = sqlite_insert if conn.dialect.name == "sqlite" else postgresql_insert
    conn.execute(
        insert(shares_t)
        .values(user_id=user_id, viewer_email=viewer, created_at=now)
        .on_conflict_do_nothing()
    )
    return viewer


def stop_sharing(conn: Any, *, user_id: str, email: str) -> None:
    conn.execute(
        delete(shares_t).where(
            shares_t.c.user_id == user_id, shares_t.c.viewer_email == email.strip().lower()
        )
    )


def shared_with(conn: Any, *, user_id: str) -> list[str]:
    """Whom the owner shares their free/busy with (emails, in order)."""
    found = conn.execute(
        select(shares_t.c.viewer_email)
        .where(shares_t.c.user_id == user_id)
        .order_by(shares_t.c.viewer_email)
    )
    return [str(e) for e in found.scalars()]


def sharers(
    conn: Any, *, viewer_id: str, emails: Sequence[str]
) -> tuple[list[tuple[str, str, list[CalendarRow]]], list[str]]:
    """Of the owners ``emails`` names, those who share their free/busy with the owner
    ``viewer_id``: ``(email as asked, their id, their calendars)``; and the emails whose time
    is unknown (no such owner, or not shared)."""
    viewer = str(
        conn.execute(select(users_t.c.email).where(users_t.c.id == viewer_id)).scalar_one()
    ).lower()
    known: list[tuple[str, str, list[CalendarRow]]] = []
    unknown: list[str] = []
    for email in dict.fromkeys(emails):
        found = conn.execute(
            select(users_t.c.id)
            .select_from(users_t.join(shares_t, shares_t.c.user_id == users_t.c.id))
            .where(
                func.lower(users_t.c.email) == email.strip().lower(),
                shares_t.c.viewer_email == viewer,
            )
        ).scalar()
        if found is None:
            unknown.append(email)
            continue
        calendars = [  # a connected calendar's mirror counts as its connection, once
            c
            for c in accessible_calendars(conn, principal=owner_principal(str(found)))
            if not c.connection_id
        ]
        known.append((email, str(found), calendars))
    return known, unknown
