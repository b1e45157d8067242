"""Signing a calendar app in over CalDAV: HTTP Basic, the owner's email and an app password
(a key created as one, ``api_keys.app_password``), behind the sign-in page's throttle.

``sign_in`` checks the throttle (``signin.check``: too many failures for the email or from
the client address lock further attempts, right password or not: 429), then the key: it must
exist, be an app password and belong to the owner the email names. A failure is counted
(``signin.admit``: the same buckets, limits and window as the sign-in page) and answered
401. A key revoked or expired is refused as everywhere (401), not counted: its secret was
right. Then the principal goes to ``gateway.perform``, which records the call in the key's
history (transport ``caldav``) and spends its rate budget, as for any key.

``signed_in`` is the way in of most requests: ``admitted`` reads what ``sign_in`` reads, in
the request's own transaction (one transaction a request, as for a REST key); only a request
it does not let in takes ``sign_in``, which refuses it and counts the failure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import Connection, bindparam, select

from calendar_service.access import owners as users
from calendar_service.access import signin
from calendar_service.access.keys import KeyRow, Principal, authorize, identify
from calendar_service.platform.db import Statement
from calendar_service.platform.db.transactions import atomic
from calendar_service.platform.errors import AuthError, SignInLocked, WrongAppPassword
from calendar_service.platform.models.keys import keys_t
from calendar_service.platform.models.owners import users_t

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BasicSignIn:
    """What an app sent to sign in (HTTP Basic: the owner's ``email``, an app password's
    ``secret``) and from where (``client_addr``); ``pepper``: the session-signing secret the
    throttle's buckets are keyed with."""

    email: str
    secret: str
    pepper: str
    client_addr: str | None

    def lockout(self, conn: Connection, now: datetime) -> signin.Lockout | None:
        """The throttle's lockout in force for the email or the address (``signin.check``)."""
        return signin.check(
            conn, pepper=self.pepper, email=self.email, client_addr=self.client_addr, now=now
        )

    def failed(self, conn: Connection, now: datetime) -> signin.Lockout | None:
        """The attempt counted as a failure (``signin.admit``); the lockout it meets, if any."""
        locked, _ = signin.admit(
            conn, pepper=self.pepper, email=self.email, client_addr=self.client_addr, now=now
        )
        return locked


def sign_in(
    conn: Connection,
    /,
    *,
    asked: BasicSignIn,
    now: datetime,
) -> Principal:
    """The principal of the app password ``asked.secret`` of the owner ``asked.email``, or
    raise (``SignInLocked``, ``WrongAppPassword``, or the key's own 401). Runs its own
    transactions (``Database.run_connected``)."""
    with atomic(conn):
        lockout = asked.lockout(conn, now)
        if lockout is None:
            row = _app_password(conn, asked)
            if row is not None:
                return authorize(row, now=now)
    if lockout is not None:
        raise SignInLocked(_seconds_until(lockout.retry_at, now))
    with atomic(conn):  # counted as the sign-in page counts it (one step per bucket)
        locked = asked.failed(conn, now)
    if locked is not None:
        raise SignInLocked(_seconds_until(locked.retry_at, now))
    raise WrongAppPassword()


# Read at every request (an app signs in with each): compiled once (``db.Statement``).
_OWNER_OF_KEY = Statement(
    select(users_t.c.email, keys_t.c.app_password)
    .select_from(keys_t.join(users_t, users_t.c.id == keys_t.c.user_id))
    .where(keys_t.c.id == bindparam("key_id"))
)


class SignInNeeded(Exception):
    """``signed_in`` did not let the request in: ``sign_in`` says why (and counts it)."""


def admitted(
    conn: Connection,
    /,
    *,
    asked: BasicSignIn,
    now: datetime,
) -> Principal | None:
    """``sign_in``'s way in, reading only: the principal when the throttle locks neither the
    email nor the address and the secret is a live app password of the email; else ``None``
    (``sign_in`` then refuses it, and counts what it counts)."""
    if asked.lockout(conn, now):
        return None
    row = _app_password(conn, asked)
    if row is None:
        return None
    try:
        return authorize(row, now=now)
    except AuthError:
        return None


def signed_in(
    conn: Connection,
    /,
    *,
    asked: BasicSignIn,
    now: datetime,
    then: Callable[[Connection, Principal], T],
) -> T:
    """``then`` for the principal ``admitted`` lets in, in the request's own transaction (a
    group commit's, under ``Database.run_grouped``: the sign-in has no transaction of its
    own); ``SignInNeeded``, before anything is written, when it lets none in."""
    with atomic(conn):
        principal = admitted(conn, asked=asked, now=now)
    if principal is None:
        raise SignInNeeded()
    return then(conn, principal)


def _app_password(conn: Connection, asked: BasicSignIn) -> KeyRow | None:
    """The key row of the secret (any state) if it is an app password of the owner the email
    names; ``None`` for a malformed or unknown secret, another kind of key or another
    owner's."""
    try:
        row = identify(conn, secret=asked.secret)
    except AuthError:
        return None
    found = _OWNER_OF_KEY.first(conn, key_id=row.id)
    if found is None or not found[1]:
        return None
    same = users.normalize_email(found[0]) == users.normalize_email(asked.email)
    return row if same else None


def _seconds_until(at: datetime, now: datetime) -> int:
    return max(1, math.ceil((at - now).total_seconds()))


__all__ = ["BasicSignIn", "SignInNeeded", "admitted", "sign_in", "signed_in"]
