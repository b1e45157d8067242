"""Signed-in browsers: server-side sessions for the settings pages, and how long they last.

The cookie holds a random 256-bit token, signed with the session secret (so a forged or
truncated cookie is refused before any database read). The database keeps only the token's
SHA-256, the owner, the CSRF synchronizer token and a fingerprint of the password hash:
signing out deletes the row (a copied cookie stops working at once), and a new password
(``calendar-service users set-password``) signs every browser out.

No web framework here: these are plain functions over a SQLAlchemy ``Connection``.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select

from calendar_service.platform.models.owners import sessions_t, users_t
from calendar_service.platform.service_secrets import SESSION_SECRET_NAME, kept_secret

SESSION_LIFETIME = timedelta(hours=12)


@dataclass(frozen=True, slots=True)
class OwnerSessionInfo:
    """The signed-in owner, as the pages see them."""

    user_id: str
    email: str
    csrf_token: str
    expires_at: datetime


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def password_fingerprint(password_hash: str | None) -> str:
    return hashlib.sha256((password_hash or "").encode()).hexdigest()


def start_session(conn: Connection, *, user_id: str, now: datetime) -> tuple[str, datetime]:
    """Open a session for an owner who just proved their password.

    Returns the token for the cookie (never stored) and when the session ends."""
    user = conn.execute(select(users_t.c.password_hash).where(users_t.c.id == user_id)).one()
    token = secrets.token_urlsafe(32)
    expires_at = now + SESSION_LIFETIME
    conn.execute(
        insert(sessions_t).values(
            id=token_digest(token),
            user_id=user_id,
            csrf_token=secrets.token_urlsafe(32),
            password_fingerprint=password_fingerprint(user.password_hash),
            created_at=now,
            expires_at=expires_at,
        )
    )
    # Housekeeping rides on sign-in: sessions that ended are deleted here, not by a job.
    conn.execute(delete(sessions_t).where(sessions_t.c.expires_at <= now))
    return token, expires_at


def load_session(conn: Connection, *, token: str, now: datetime) -> OwnerSessionInfo | None:
    """The session for ``token``, or None if unknown, ended, or the password changed since."""
    row = conn.execute(
        select(
            sessions_t.c.user_id,
            sessions_t.c.csrf_token,
            sessions_t.c.password_fingerprint,
            sessions_t.c.expires_at,
            users_t.c.email,
            users_t.c.password_hash,
        )
        .join(users_t, users_t.c.id == sessions_t.c.user_id)
        .where(sessions_t.c.id == token_digest(token))
    ).first()
    if row is None or row.expires_at <= now:
        return None
    if not secrets.compare_digest(
        row.password_fingerprint, password_fingerprint(row.password_hash)
    ):
        return None
    return OwnerSessionInfo(row.user_id, row.email, row.csrf_token, row.expires_at)


def end_session(conn: Connection, *, token: str) -> None:
    conn.execute(delete(sessions_t).where(sessions_t.c.id == token_digest(token)))


def session_signing_secret(conn: Connection, *, now: datetime) -> str:
    """The generated session-signing secret, made once and shared through the database by
    every server process (used only when ``CALENDAR_SESSION_SECRET`` is not set)."""
    return kept_secret(conn, name=SESSION_SECRET_NAME, now=now)
