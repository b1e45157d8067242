"""API keys: issuing, verifying and revoking.

A secret looks like ``calsk_`` + 40 base62 characters (238 bits of randomness) + a 6-character
base62 CRC32 of those 40: secret scanners can recognise the prefix, and a mistyped or truncated
key is refused as malformed without a database read. Only the SHA-256 hash of the whole secret is
stored; the secret is shown once, when the key is created.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import zlib
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Final, Literal, NamedTuple

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    case,
    func,
    insert,
    null,
    or_,
    select,
    true,
    update,
)

from calendar_service.access import call_history as history
from calendar_service.platform.db import Statement, owned_row
from calendar_service.platform.errors import (
    ExpiredKey,
    FieldError,
    InsufficientScope,
    MalformedKey,
    MissingKey,
    RevokedKey,
    UnknownKey,
    ValidationFailed,
)
from calendar_service.platform.ids import ALPHABET, base62, new_id
from calendar_service.platform.inputs import check_text
from calendar_service.platform.models.calendars import ROW_COLUMNS, calendars_t
from calendar_service.platform.models.columns import from_db
from calendar_service.platform.models.keys import keys_t
from calendar_service.platform.models.rules import rules_t
from calendar_service.platform.timeutil import format_utc, parse_date_time

SECRET_PREFIX = "calsk_"  # noqa: S105 - a public prefix, not a secret
_BODY_LEN = 40
_CHECK_LEN = 6
SECRET_LEN = len(SECRET_PREFIX) + _BODY_LEN + _CHECK_LEN
_SECRET_RE = re.compile(rf"^{SECRET_PREFIX}[0-9A-Za-z]{{{_BODY_LEN + _CHECK_LEN}}}$")
WRITE_SCOPE = "calendar:write"
READ_SCOPE = "calendar:read"
FREEBUSY_SCOPE = "calendar:freebusy"
Permission = Literal["read", "write", "freebusy"]
"""What a key (or a connected app's grant) may do, and what an operation needs
(``operations.Needs``): the one spelling of each; everywhere else they are named."""
READ: Final = "read"
"""Every reading operation."""
WRITE: Final = "write"
"""Every operation."""
FREEBUSY: Final = "freebusy"
"""Only the availability operations (queryFreeBusy, findFreeTime), never an event's title or
id."""
PERMISSIONS: tuple[Permission, ...] = (READ, WRITE, FREEBUSY)
_SCOPES = {
    WRITE: (READ_SCOPE, WRITE_SCOPE),
    READ: (READ_SCOPE,),
    FREEBUSY: (FREEBUSY_SCOPE,),
}


# Which of a key's (or connected app's) writes wait for the owner (``governance.proposals``):
# none; updates and deletes (creates go through); every write.
APPROVAL_NONE = "none"
APPROVAL_DESTRUCTIVE = "destructive"
APPROVAL_ALL = "all"
APPROVALS = (APPROVAL_NONE, APPROVAL_DESTRUCTIVE, APPROVAL_ALL)

# Whether the owner's rules for agents bind a key's writes (``api_keys.rules``).
RULES_BOUND = "bound"
RULES_EXEMPT = "exempt"
RULES_CHOICES = (RULES_BOUND, RULES_EXEMPT)


# Who or what revoked a key (``api_keys.revoked_by``; ``errors.RevokedKey`` words each).
REVOKED_BY_OWNER = "owner"  # the owner: the settings page, ``keys revoke``
REVOKED_BY_APP = "app"  # a connected app revoked its own grant (RFC 7009 ``/revoke``)
REVOKED_BY_REUSE = "reuse"  # a used authorization code or refresh token came back
REVOKED_BY_CALENDAR = "calendar"  # its one calendar was deleted (``calendar_changes``)


def scopes_of(permission: str) -> tuple[str, ...]:
    """The OAuth-style scopes a permission grants (shown with keys, given to MCP)."""
    return _SCOPES.get(permission, ())


# How long a key lives (``keys create --expires-in``, the settings page's choices): a whole
# number and a unit whose length never varies. ``m`` is refused (minutes or months?), and so are
# seconds (a key that short is a mistake) and months and years (their length varies).
DEFAULT_LIFETIME = "90d"
MIN_LIFETIME = timedelta(hours=1)  # shorter keys only when asked for explicitly
MAX_LIFETIME = timedelta(days=36500)
_LIFETIME_UNITS = {
    **dict.fromkeys(("min", "mins", "minute", "minutes"), timedelta(minutes=1)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), timedelta(hours=1)),
    **dict.fromkeys(("d", "day", "days"), timedelta(days=1)),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), timedelta(weeks=1)),
}
_REFUSED_UNITS = {
    **dict.fromkeys(("m",), "is ambiguous (minutes or months?)"),
    **dict.fromkeys(
        ("ms", "s", "sec", "secs", "second", "seconds"), "is in seconds: too short for a key"
    ),
    **dict.fromkeys(
        ("mo", "mon", "month", "months", "y", "yr", "yrs", "year", "years"),
        "is in months or years: months and years vary in length",
    ),
}
_LIFETIME_RE = re.compile(r"^\s*(\d+(?:[.,]\d+)?)?\s*([A-Za-z]*)\s*$")
LIFETIME_HELP = "write a whole number and a unit: min, h, d or w (90min, 12h, 30d, 2w)"


def _bad_lifetime(text: str, reason: str) -> ValidationFailed:
    return ValidationFailed(
        [FieldError("expiresIn", f"{text.strip()!r} {reason}; {LIFETIME_HELP}")]
    )


def parse_expires_in(text: str) -> timedelta:
    """A key's lifetime: ``90min``, ``12h``, ``30d``, ``2w`` (also ``3 days``, ``1 week``)."""
    match = _LIFETIME_RE.match(text or "")
    if match is None or not match.group(1):
        raise _bad_lifetime(text or "", "is not a lifetime")
    number, unit = match.group(1), match.group(2)
    if unit.lower() in _REFUSED_UNITS:  # "M" too: "m" is ambiguous in either case
        raise _bad_lifetime(text, _REFUSED_UNITS[unit.lower()])
    if not unit:
        raise _bad_lifetime(text, "has no unit")
    if unit.lower() not in _LIFETIME_UNITS:
        raise _bad_lifetime(text, f"has an unknown unit {unit!r}")
    if not number.isdigit():
        raise _bad_lifetime(text, "is not a whole number")
    if int(number) == 0:
        raise _bad_lifetime(text, "must be more than zero")
    step = _LIFETIME_UNITS[unit.lower()]
    if int(number) > MAX_LIFETIME // step:
        raise _bad_lifetime(text, f"is too long: at most {MAX_LIFETIME.days}d")
    return int(number) * step


def parse_expires_at(text: str) -> datetime:
    """When a key expires (``keys create --expires-at``, the settings page's date): a date
    means the key works through that whole day (UTC), so it expires when the next one begins; a
    date-time is that instant (UTC when it has no offset)."""
    text = (text or "").strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text) + timedelta(days=1), time(), UTC)
        return parse_date_time(text, UTC)
    except OverflowError:
        message = "is too far in the future"
    except ValueError:
        message = (
            "must be a date such as 2027-01-01 (the key works through that day, UTC) "
            "or an RFC 3339 date-time such as 2027-01-01T09:00:00Z"
        )
    raise ValidationFailed([FieldError("expiresAt", message)])


# The settings and consent pages' choices, in the lifetime grammar (``parse_expires_in``); or
# "custom" and a date.
LIFETIME_CHOICES = (("7d", "7 days"), ("30d", "30 days"), ("90d", "90 days"), ("365d", "1 year"))
CUSTOM_EXPIRY = "custom"


def key_expiry(
    *,
    now: datetime,
    expires_in: str | None = None,
    expires_at: str | None = None,
    allow_short: bool = False,
    to_allow_short: str = "choose a later date",
) -> datetime:
    """When a new key (or a connected app's grant) expires, for every front: ``expires_in``
    (default ``DEFAULT_LIFETIME``) from ``now``, or ``expires_at`` (``parse_expires_at``); at
    least ``MIN_LIFETIME`` from now unless ``allow_short`` (the refusal ends with
    ``to_allow_short``: how this front asks for a short key). A time already past is left to
    ``grant_errors``, which refuses it with the request's other errors."""
    if expires_in and expires_at:
        raise ValidationFailed([FieldError("expiresAt", "give an expiry or a lifetime, not both")])
    if expires_at:
        field, at = "expiresAt", parse_expires_at(expires_at)
    else:
        lifetime = parse_expires_in(expires_in or DEFAULT_LIFETIME)
        field, at = "expiresIn", (now + lifetime).replace(microsecond=0)
    if now < at < now + MIN_LIFETIME and not allow_short:
        message = f"is less than an hour from now ({format_utc(at)}); {to_allow_short}"
        raise ValidationFailed([FieldError(field, message)])
    return at


def chosen_expiry(*, choice: str, on_date: str, now: datetime) -> datetime:
    """The settings and consent pages' expiry: one of ``LIFETIME_CHOICES`` from now, or
    ``CUSTOM_EXPIRY`` and a date (the key works through that day, UTC), by ``key_expiry``'s
    rules (no short key: a page cannot ask for one). Errors name ``expiresAt``."""
    if choice in dict(LIFETIME_CHOICES):
        return key_expiry(now=now, expires_in=choice)
    if choice != CUSTOM_EXPIRY:
        raise ValidationFailed([FieldError("expiresAt", "choose when the key expires")])
    try:
        parse_expires_at(on_date)
    except ValidationFailed:
        raise ValidationFailed(
            [FieldError("expiresAt", "choose a date such as 2026-12-31")]
        ) from None
    return key_expiry(now=now, expires_at=on_date)


APPROVAL_HELP = (
    "must be 'none', 'destructive' (updates and deletes wait for the owner) or 'all' (every "
    "write waits)"
)
# Every pair of base62 digits, by value: a CRC-32 (below 62**6) is three of them.
_DIGIT_PAIRS = tuple(a + b for a in ALPHABET for b in ALPHABET)
_PAIR = len(_DIGIT_PAIRS)


def _checksum(body: str) -> str:
    """The CRC-32 of ``body`` in base62, ``_CHECK_LEN`` digits (zeros in front): checked on
    every request, so in three look-ups rather than a loop of divisions."""
    high, rest = divmod(zlib.crc32(body.encode()), _PAIR * _PAIR)
    middle, low = divmod(rest, _PAIR)
    return _DIGIT_PAIRS[high] + _DIGIT_PAIRS[middle] + _DIGIT_PAIRS[low]


def generate_secret() -> str:
    body = base62(secrets.token_bytes(30)).rjust(_BODY_LEN, "0")[-_BODY_LEN:]
    return f"{SECRET_PREFIX}{body}{_checksum(body)}"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def check_format(secret: str) -> None:
    """Refuse a malformed secret without touching the database."""
    if not secret.startswith(SECRET_PREFIX):
        raise MalformedKey(f"it should start with {SECRET_PREFIX!r}")
    if not _SECRET_RE.match(secret):
        raise MalformedKey(f"it should be {SECRET_LEN} letters and digits")
    body, check = secret[len(SECRET_PREFIX) : -_CHECK_LEN], secret[-_CHECK_LEN:]
    if not hmac.compare_digest(_checksum(body), check):
        raise MalformedKey("its checksum does not match")


class Principal(NamedTuple):
    """Who is calling: the key, its owner and what it may reach. A tuple (immutable, as a
    frozen dataclass would be): made on every request, and a frozen dataclass's constructor
    sets each field through ``object.__setattr__``, three times what this costs."""

    key_id: str
    user_id: str
    permission: str
    calendar_id: str | None  # None: all of the owner's calendars
    expires_at: datetime
    # For a one-calendar key: that calendar's row (``calendars.CalendarRow`` order), read in
    # the same query as the key, so scoped requests need no second read. For a key of all
    # calendars read by ``identify``: the owner's default calendar, where its creates go when
    # they name none (``calendars.resolve_target``).
    calendar: tuple[Any, ...] | None = None
    approval: str = APPROVAL_NONE  # which of its writes wait for the owner (APPROVALS)
    may_invite: bool = False  # whether it may send email invitations (sendUpdates=all)
    # The owner's rules for agents that bind its writes (``calendar.rules``), read with the
    # key: ``None`` for a key made ``--rules exempt``, an app password (the owner's own device)
    # or the owner in person; ``""`` for a key they would bind while its owner has set none (a
    # write then reads nothing more); else the rules as stored (JSON).
    rules: str | None = None

    @property
    def rules_bound(self) -> bool:
        """Whether the owner's rules, when set, bind this principal's writes."""
        return self.rules is not None

    @property
    def scopes(self) -> tuple[str, ...]:
        return scopes_of(self.permission)

    def require_read(self) -> None:
        if self.permission not in (READ, WRITE):
            raise InsufficientScope(
                "This API key may only see when calendars are busy or free (queryFreeBusy, "
                f"findFreeTime): this operation needs the {READ_SCOPE!r} permission. Ask the "
                "owner for a read or read-and-write key.",
                required_scope=READ_SCOPE,
            )

    def require_write(self) -> None:
        if self.permission == FREEBUSY:
            raise InsufficientScope(
                "This API key may only see when calendars are busy or free (queryFreeBusy, "
                f"findFreeTime): this operation needs the {WRITE_SCOPE!r} permission. Ask the "
                "owner for a read-and-write key.",
                required_scope=WRITE_SCOPE,
            )
        if self.permission != WRITE:
            raise InsufficientScope(
                f"This API key is read-only: this operation needs the {WRITE_SCOPE!r} "
                "permission. Ask the owner for a read-and-write key.",
                required_scope=WRITE_SCOPE,
            )


def permits(permission: str, needs: str) -> bool:
    """Whether a key with ``permission`` may perform what ``needs`` that permission (the rule
    ``Principal.require_read`` and ``require_write`` enforce; every key may see availability):
    what the MCP front lists as a key's tools."""
    if needs == WRITE:
        return permission == WRITE
    if needs == READ:
        return permission in (READ, WRITE)
    return permission in PERMISSIONS


def owner_principal(user_id: str, *, calendar_id: str | None = None) -> Principal:
    """A principal for the owner acting in person (settings page, CLI): full access."""
    return Principal(
        key_id="owner",
        user_id=user_id,
        permission=WRITE,
        calendar_id=calendar_id,
        expires_at=datetime.max.replace(tzinfo=UTC),
    )


_VERIFY_COLUMNS = (
    keys_t.c.id,
    keys_t.c.user_id,
    keys_t.c.permission,
    keys_t.c.calendar_id,
    keys_t.c.expires_at,
    keys_t.c.revoked_at,
    keys_t.c.secret_hash,
    keys_t.c.revoked_by,
)


class KeyRow(NamedTuple):
    id: str
    user_id: str
    permission: str
    calendar_id: str | None
    expires_at: datetime
    revoked_at: datetime | None
    secret_hash: str
    revoked_by: str | None
    # A one-calendar key's calendar (``calendars.CalendarRow`` order), None once it no longer
    # exists; for a key of all calendars, the owner's default calendar (``identify``,
    # ``key_row_by_id``) or None (``key_row_of``).
    calendar: tuple[Any, ...] | None
    approval: str = APPROVAL_NONE
    may_invite: bool = False
    rules: str | None = None  # Principal.rules


KEY_COLUMNS = (
    *_VERIFY_COLUMNS,
    *ROW_COLUMNS,
    keys_t.c.approval,
    keys_t.c.may_invite,
    # Principal.rules: bound by the owner's rules (a key not made exempt that is not an app
    # password), and the rules the owner set, if any (an index probe in the same statement).
    case(
        (or_(keys_t.c.rules == RULES_EXEMPT, keys_t.c.app_password == true()), null()),
        else_=func.coalesce(
            select(rules_t.c.rules).where(rules_t.c.user_id == keys_t.c.user_id).scalar_subquery(),
            "",
        ),
    ),
)
"""What a key row is read from, first in a statement (``key_row_of``), with ``keys_t`` outer
joined to ``calendars_t`` on the key's calendar and owner."""

# An all-calendars key's default calendar, read with the key: its creates that name no
# calendar go there, and reading it apart cost such a create a statement (~18k instructions).
# ``coalesce`` evaluates it only for a key without a calendar of its own.
_DEFAULT = calendars_t.alias("owner_default")
_DEFAULT_ID = (
    select(_DEFAULT.c.id)
    .where(_DEFAULT.c.user_id == keys_t.c.user_id, _DEFAULT.c.is_default == true())
    .limit(1)  # one, as the statement it replaced read (PostgreSQL refuses a second)
    .correlate(keys_t)
    .scalar_subquery()
)
# Read on every request, straight from the driver (see db.Statement); never cached.
_KEY_WITH_CALENDAR = select(*KEY_COLUMNS).select_from(
    keys_t.outerjoin(
        calendars_t,
        and_(
            calendars_t.c.id == func.coalesce(keys_t.c.calendar_id, _DEFAULT_ID),
            calendars_t.c.user_id == keys_t.c.user_id,
        ),
    )
)
_IDENTIFY = Statement(_KEY_WITH_CALENDAR.where(keys_t.c.secret_hash == bindparam("digest")))


_BY_ID = Statement(_KEY_WITH_CALENDAR.where(keys_t.c.id == bindparam("key_id")))


def _key_row(found: Any) -> KeyRow:
    key_id, user_id, permission, calendar_id, expires_at, revoked_at, secret_hash = found[:7]
    return KeyRow(
        key_id,
        user_id,
        permission,
        calendar_id,
        from_db(expires_at),
        None if revoked_at is None else from_db(revoked_at),
        secret_hash,
        found[7],
        None if found[8] is None else (*found[8:11], bool(found[11]), *found[12:17]),
        found[17],
        bool(found[18]),
        found[19],
    )


def key_row_of(found: Any) -> KeyRow:
    """The key row of a result whose first columns are ``KEY_COLUMNS`` (a statement that reads
    the key with something else, such as a scheduling link)."""
    return _key_row(found)


def key_row_by_id(conn: Connection, *, key_id: str) -> KeyRow:
    """A key row (any state) by its id: for a connected app's grant, found by its token."""
    found = _BY_ID.first(conn, key_id=key_id)
    if found is None:  # pragma: no cover - tokens keep their grant (foreign key)
        raise UnknownKey()
    return _key_row(found)


def identify(conn: Connection, *, secret: str | None) -> KeyRow:
    """The key row for ``secret`` (any state), or raise missing/malformed/unknown.

    Only a secret of a key's length and prefix is looked up. Its letters and checksum
    (``check_format``) are checked only if no key has it: a secret some key has is well
    formed, since only well-formed ones are ever made (``generate_secret``), so every request
    need not pay for the check (about 12,000 instructions); one of the right length that is
    malformed costs one look-up by its digest, and is still refused as malformed."""
    if not secret:
        raise MissingKey()
    if len(secret) != SECRET_LEN or not secret.startswith(SECRET_PREFIX):
        check_format(secret)
    digest = hash_secret(secret)
    found = _IDENTIFY.first(conn, digest=digest)
    if found is None or not hmac.compare_digest(found[6], digest):
        check_format(secret)
        raise UnknownKey()
    return _key_row(found)


# A key's states (``keys list``, a subscription's ``keyState``): by ``state_of``.
ACTIVE = "active"
EXPIRED = "expired"
REVOKED = "revoked"


def state_of(*, revoked_at: datetime | None, expires_at: datetime, now: datetime) -> str:
    """Whether a key (or a connected app's grant) works at ``now``, the one rule of its
    validity that authorizing, its subscriptions' deliveries and every listing follow:
    ``REVOKED`` once revoked (whenever it expires), else ``EXPIRED`` from its expiry on,
    else ``ACTIVE``."""
    if revoked_at is not None:
        return REVOKED
    return EXPIRED if expires_at <= now else ACTIVE


def authorize(row: KeyRow, *, now: datetime, app: bool = False) -> Principal:
    """Turn an identified key row (``app``: a connected app's grant) into a principal, or
    raise revoked/expired. A one-calendar key whose calendar is gone reaches nothing: it is
    refused as revoked with it (the deletion revokes it in the same transaction; this holds
    whatever wrote the row)."""
    state = state_of(revoked_at=row.revoked_at, expires_at=row.expires_at, now=now)
    if state == REVOKED:
        raise RevokedKey(row.revoked_by, app=app)
    if row.calendar_id is not None and row.calendar is None:
        raise RevokedKey(REVOKED_BY_CALENDAR, app=app)
    if state == EXPIRED:
        raise ExpiredKey(format_utc(row.expires_at))
    return Principal(
        row.id,
        row.user_id,
        row.permission,
        row.calendar_id,
        row.expires_at,
        row.calendar,
        row.approval,
        row.may_invite,
        row.rules,
    )


def grant_errors(
    conn: Connection,
    *,
    user_id: str,
    permission: str,
    expires_at: datetime,
    calendar_id: str | None,
    now: datetime,
    approval: str = APPROVAL_NONE,
) -> list[FieldError]:
    """What is wrong with what the owner ``user_id`` grants a key or a connected app
    (``oauth.approve``): the permission, the expiry, the one calendar (theirs) or all, which
    writes wait for the owner."""
    bad_id = check_text("calendarId", calendar_id)
    errors = list(bad_id)
    if permission not in PERMISSIONS:
        errors.append(FieldError("permission", "must be 'read', 'write' or 'freebusy'"))
    if approval not in APPROVALS:
        errors.append(FieldError("approval", APPROVAL_HELP))
    if expires_at <= now:
        errors.append(FieldError("expiresAt", "must be in the future"))
    if calendar_id is not None and not bad_id:
        owned_calendar(conn, user_id=user_id, calendar_id=calendar_id, errors=errors)
    return errors


def owned_calendar(
    conn: Connection, *, user_id: str, calendar_id: str, errors: list[FieldError]
) -> Any:
    """The owner's calendar ``calendar_id`` (its ``id`` and ``name``) that a key, a grant or a
    feed about to be written names, kept from being deleted before it is (on PostgreSQL, a
    key-share lock to the transaction's end); None, with an error on ``calendarId``, when
    the owner has no such calendar."""
    query = select(calendars_t.c.id, calendars_t.c.name).where(
        calendars_t.c.user_id == user_id, calendars_t.c.id == calendar_id
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(read=True, key_share=True)
    owned = conn.execute(query).first()
    if owned is None:
        errors.append(FieldError("calendarId", f"no calendar {calendar_id!r} of this owner"))
    return owned


def create_key(
    conn: Connection,
    *,
    user_id: str,
    name: str,
    permission: str,
    expires_at: datetime,
    calendar_id: str | None,
    now: datetime,
    approval: str = APPROVAL_NONE,
    may_invite: bool = False,
    app_password: bool = False,
    rules: str = RULES_BOUND,
) -> tuple[dict[str, Any], str]:
    """Issue a key (``approval``: which of its writes wait for the owner; ``may_invite``:
    whether it may send email invitations; ``app_password``: it may sign a calendar app in over
    CalDAV, with HTTP Basic; ``rules``: ``exempt`` for a key the owner's rules for agents do not
    bind). Returns its public record and the secret (shown once, never
    stored)."""
    name = (name or "").strip()
    errors = check_text("name", name)
    if not 1 <= len(name) <= 200:
        errors.append(FieldError("name", "must be 1 to 200 characters"))
    errors += grant_errors(
        conn,
        user_id=user_id,
        permission=permission,
        expires_at=expires_at,
        calendar_id=calendar_id,
        now=now,
        approval=approval,
    )
    if rules not in RULES_CHOICES:
        errors.append(FieldError("rules", f"must be one of {', '.join(RULES_CHOICES)}"))
    if errors:
        raise ValidationFailed(errors)
    secret = generate_secret()
    values = {
        "id": new_id("key"),
        "user_id": user_id,
        "name": name,
        "prefix": secret[: len(SECRET_PREFIX) + 6],
        "secret_hash": hash_secret(secret),
        "permission": permission,
        "calendar_id": calendar_id,
        "created_at": now,
        "expires_at": expires_at,
        "revoked_at": None,
        "approval": approval,
        "may_invite": bool(may_invite),
        "app_password": bool(app_password),
        "rules": rules,
    }
    conn.execute(insert(keys_t).values(**values))
    return key_public(values, now=now), secret


def key_state(row: Any, *, now: datetime) -> str:
    """The state of the key ``row`` (a mapping), by ``state_of``."""
    return state_of(revoked_at=row["revoked_at"], expires_at=row["expires_at"], now=now)


def key_public(row: Any, *, now: datetime, last_used_at: datetime | None = None) -> dict[str, Any]:
    row = dict(row)
    return {
        "id": row["id"],
        "name": row["name"],
        "prefix": row["prefix"],
        "permission": row["permission"],
        "scopes": list(scopes_of(row["permission"])),
        "calendarId": row["calendar_id"],
        "createdAt": format_utc(row["created_at"]),
        "expiresAt": format_utc(row["expires_at"]),
        "revokedAt": format_utc(row["revoked_at"]) if row["revoked_at"] else None,
        "revokedBy": revoked_by(row),
        "lastUsedAt": format_utc(last_used_at) if last_used_at else None,
        "state": key_state(row, now=now),
        "kind": row.get("kind") or "key",  # "app": what the owner granted a connected app
        "approval": row.get("approval") or APPROVAL_NONE,
        "mayInvite": bool(row.get("may_invite")),  # it may send email invitations
        "appPassword": bool(row.get("app_password")),  # signs a calendar app in (CalDAV)
        "rules": row.get("rules") or RULES_BOUND,  # "exempt": the owner's rules do not bind it
    }


def revoked_by(row: Any) -> str | None:
    """Who revoked the key (``REVOKED_BY_*``), ``None`` while it is not revoked or for a grant
    revoked before that was kept (a key's was its owner, the only one who revoked keys)."""
    if row["revoked_at"] is None:
        return None
    by: str | None = row.get("revoked_by")
    if by is None and (row.get("kind") or "key") == "key":
        return REVOKED_BY_OWNER
    return by


def list_keys(conn: Connection, *, user_id: str, now: datetime) -> list[dict[str, Any]]:
    """The owner's keys, newest first, with when each was last used (``history.last_use``)."""
    rows = conn.execute(
        select(keys_t, history.last_use(keys_t.c.id).label("last_used_at"))
        .where(keys_t.c.user_id == user_id)
        .order_by(keys_t.c.created_at.desc(), keys_t.c.id)
    ).mappings()
    return [key_public(r, now=now, last_used_at=r["last_used_at"]) for r in rows]


def get_key(conn: Connection, *, user_id: str | None, key_id: str) -> dict[str, Any]:
    """One key of ``user_id`` (``None``: any owner, for the operator's CLI)."""
    row = owned_row(conn, keys_t, key_id, user_id=user_id, missing=f"No API key {key_id!r}.")
    return dict(row._mapping)


def revoke_key(
    conn: Connection, *, user_id: str | None, key_id: str, now: datetime
) -> dict[str, Any]:
    """Revoke a key at once. Revoking a revoked key is a no-op that keeps the first time."""
    row = get_key(conn, user_id=user_id, key_id=key_id)
    if row["revoked_at"] is None:
        conn.execute(
            update(keys_t)
            .where(keys_t.c.id == key_id)
            .values(revoked_at=now, revoked_by=REVOKED_BY_OWNER)
        )
        row.update(revoked_at=now, revoked_by=REVOKED_BY_OWNER)
    return key_public(row, now=now, last_used_at=last_used_at(conn, key_id=key_id))


def set_approval(
    conn: Connection, *, user_id: str, key_id: str, approval: str, now: datetime
) -> dict[str, Any]:
    """Change which of the key's (or connected app's) writes wait for the owner, from its
    next request on (what waits already stays pending)."""
    if approval not in APPROVALS:
        raise ValidationFailed([FieldError("approval", APPROVAL_HELP)])
    row = get_key(conn, user_id=user_id, key_id=key_id)
    conn.execute(update(keys_t).where(keys_t.c.id == key_id).values(approval=approval))
    row["approval"] = approval
    return key_public(row, now=now, last_used_at=last_used_at(conn, key_id=key_id))


def last_used_at(conn: Connection, *, key_id: str) -> datetime | None:
    """When the key was last used: its last call let through (``history.last_use``)."""
    value = conn.execute(select(history.last_use(key_id))).scalar()
    return None if value is None else from_db(value)
