"""Owners: the people whose calendars these are (``calendars.create_owner`` makes one with its
default calendar).

An owner's email is checked by the one rule for an address (``emails.check_email``) and kept
wholly in lower case (``normalize_email``), as sign-in finds it."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Connection, insert, select, update

from calendar_service.platform.emails import check_email
from calendar_service.platform.errors import FieldError, NotFound, ValidationFailed
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.owners import users_t

_hasher = PasswordHasher()  # Argon2id with the library's recommended parameters
MIN_PASSWORD = 8


def normalize_email(email: str) -> str:
    """An owner's email as kept and looked up: trimmed, in lower case."""
    return (email or "").strip().lower()


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise ValidationFailed(
            [FieldError("password", f"must be at least {MIN_PASSWORD} characters")]
        )
    return _hasher.hash(password)


def add_owner(
    conn: Connection,
    *,
    email: str,
    password: str | None,
    now: datetime,
) -> dict[str, Any]:
    """Create an owner (no calendar: ``calendars.create_owner`` makes the default one)."""
    errors: list[FieldError] = []
    checked = check_email(email, "email", errors)
    if checked is None:
        raise ValidationFailed(errors)
    email = normalize_email(checked)
    if conn.execute(select(users_t.c.id).where(users_t.c.email == email)).first():
        raise ValidationFailed([FieldError("email", f"an owner {email!r} already exists")])
    user_id = new_id("usr")
    conn.execute(
        insert(users_t).values(
            id=user_id,
            email=email,
            password_hash=hash_password(password) if password else None,
            created_at=now,
        )
    )
    return {"id": user_id, "email": email}


def get_user_by_email(conn: Connection, *, email: str) -> dict[str, Any]:
    row = (
        conn.execute(select(users_t).where(users_t.c.email == normalize_email(email)))
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound(f"No owner with email {normalize_email(email)!r}.")
    return dict(row)


def get_user(conn: Connection, *, user_id: str) -> dict[str, Any]:
    row = conn.execute(select(users_t).where(users_t.c.id == user_id)).mappings().first()
    if row is None:
        raise NotFound(f"No owner {user_id!r}.")
    return dict(row)


def set_password(conn: Connection, *, email: str, password: str) -> dict[str, Any]:
    user = get_user_by_email(conn, email=email)
    conn.execute(
        update(users_t)
        .where(users_t.c.id == user["id"])
        .values(password_hash=hash_password(password))
    )
    return {"id": user["id"], "email": user["email"]}


def verify_password(stored_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored_hash`` (Argon2id), touching no database.

    Costs a good fraction of a second of CPU by design, so a web front runs it in a worker
    thread, outside any transaction. Without a hash (no such owner, or no password set) it
    verifies against a dummy hash, so that the time taken does not tell which part failed."""
    try:
        _hasher.verify(stored_hash or _dummy_hash(), password)
    except (VerificationError, InvalidHashError):
        return False
    return stored_hash is not None


@functools.cache
def _dummy_hash() -> str:
    return _hasher.hash("not a real password, only for timing")
