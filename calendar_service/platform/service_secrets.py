"""Secrets the service makes for itself, once, and keeps in the database (``service_secrets``)
so that every server process shares them: the settings session-signing secret (when
``CALENDAR_SESSION_SECRET`` is not set) and the key page tokens are signed with.

Plain functions over a SQLAlchemy ``Connection``; run them in a transaction of their own
(``Database.run``), not inside a request's, which may be rolled back after the secret is
made and handed out.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from calendar_service.platform.models.service import secrets_t

SESSION_SECRET_NAME = "settings_session_signing"  # noqa: S105 - a row name, not a secret
PAGE_TOKEN_SECRET_NAME = "page_token_signing"  # noqa: S105 - a row name, not a secret
REPLY_LINK_SECRET_NAME = "reply_link_signing"  # noqa: S105 - a row name, not a secret


def kept_secret(conn: Connection, *, name: str, now: datetime) -> str:
    """The secret called ``name``: made (256+ random bits) the first time it is asked for,
    then the same for every process on the database."""
    query = select(secrets_t.c.value).where(secrets_t.c.name == name)
    value = conn.execute(query).scalar()
    if value is not None:
        return str(value)
    try:
        with conn.begin_nested():
            conn.execute(
                insert(secrets_t).values(name=name, value=secrets.token_urlsafe(48), created_at=now)
            )
    except IntegrityError:
        pass  # another process made it first: use theirs
    return str(conn.execute(query).scalar_one())


def page_token_key(conn: Connection, *, now: datetime) -> bytes:
    """The HMAC key for page tokens (``events.list_events(token_key=...)``): derived from a
    secret of its own, so that it has nothing in common with the session secret."""
    secret = kept_secret(conn, name=PAGE_TOKEN_SECRET_NAME, now=now)
    return hmac.new(secret.encode(), b"calendar-service.page-token", hashlib.sha256).digest()


def reply_link_key(conn: Connection, *, now: datetime) -> bytes:
    """The HMAC key of invitations' reply links (``journal.reply_links``): derived from a secret of
    its own."""
    secret = kept_secret(conn, name=REPLY_LINK_SECRET_NAME, now=now)
    return hmac.new(secret.encode(), b"calendar-service.reply-link", hashlib.sha256).digest()
