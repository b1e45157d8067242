"""API keys in the core (``keys``): the secret's format and checksum, issuing, identifying,
authorizing, revoking and expiring, on the real database."""

from __future__ import annotations

import ast
import hashlib
import re
import typing
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from calendar_service.access import keys
from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.platform.db import Database
from calendar_service.platform.errors import (
    ExpiredKey,
    InsufficientScope,
    MalformedKey,
    MissingKey,
    NotFound,
    RevokedKey,
    UnknownKey,
    ValidationFailed,
)
from calendar_service.platform.ids import ALPHABET
from calendar_service.platform.models import keys_t
from calendar_service.platform.timeutil import format_utc, utcnow
from tests.support import Factory

# ---------------------------------------------------------------------------------------------
# The secret


def test_a_secret_is_the_prefix_forty_random_characters_and_a_six_character_checksum() -> None:
    secret = keys.generate_secret()
    assert re.fullmatch(r"calsk_[0-9A-Za-z]{46}", secret)
    assert len(secret) == keys.SECRET_LEN == 52
    keys.check_format(secret)  # accepted as it is


def test_secrets_are_never_repeated() -> None:
    assert len({keys.generate_secret() for _ in range(200)}) == 200


def test_a_secret_with_one_character_mistyped_fails_its_checksum() -> None:
    secret = keys.generate_secret()
    position = len(keys.SECRET_PREFIX) + 17
    other = next(c for c in ALPHABET if c != secret[position])
    typo = secret[:position] + other + secret[position + 1 :]
    with pytest.raises(MalformedKey, match="checksum does not match"):
        keys.check_format(typo)


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda s: s[:-1], "52 letters and digits"),
        (lambda s: s + "0", "52 letters and digits"),
        (lambda s: s[:20] + "-" + s[21:], "52 letters and digits"),
        (lambda s: "sk_live_" + s[6:], "should start with 'calsk_'"),
        (lambda s: s.upper(), "should start with 'calsk_'"),
    ],
    ids=["truncated", "one-too-many", "not-base62", "wrong-prefix", "upper-cased"],
)
def test_a_malformed_secret_is_refused_saying_what_is_wrong(spoil: object, reason: str) -> None:
    with pytest.raises(MalformedKey) as refused:
        keys.check_format(spoil(keys.generate_secret()))  # type: ignore[operator]
    assert reason in refused.value.message
    assert refused.value.code == "malformed_api_key"


# ---------------------------------------------------------------------------------------------
# Issuing


def test_a_new_key_is_stored_as_a_hash_and_its_secret_is_returned_once(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    now = utcnow()
    record, secret = factory.key_record(
        owner, name="  reporting bot  ", permission="read", expires_at=now + timedelta(days=30)
    )
    assert record["name"] == "reporting bot"
    assert record["permission"] == "read"
    assert record["scopes"] == ["calendar:read"]
    assert record["calendarId"] is None
    assert record["state"] == "active"
    assert record["prefix"] == secret[:12]
    assert record["revokedAt"] is None and record["lastUsedAt"] is None
    assert secret not in str(record)
    stored = db.call(keys.get_key, user_id=owner.id, key_id=record["id"])
    assert stored["secret_hash"] == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in {str(v) for v in stored.values()}


def test_a_write_key_has_both_scopes(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    factory.key(owner, permission="write")
    [record] = db.call(keys.list_keys, user_id=owner.id, now=utcnow())
    assert record["scopes"] == ["calendar:read", "calendar:write"]


def test_a_key_with_bad_fields_is_refused_listing_every_one(db: Database, factory: Factory) -> None:
    owner, stranger = factory.owner(), factory.owner()
    now = utcnow()
    with pytest.raises(ValidationFailed) as refused:
        factory.key_record(
            owner,
            name="   ",
            permission="admin",
            expires_at=now,
            calendar_id=stranger.default_calendar_id,
            now=now,
        )
    assert {e["field"] for e in refused.value.errors} == {
        "name",
        "permission",
        "expiresAt",
        "calendarId",
    }
    assert db.call(keys.list_keys, user_id=owner.id, now=now) == []


def test_a_one_calendar_key_names_a_calendar_of_its_owner(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    key_id, secret = factory.key(owner, calendar_id=work)
    principal = keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())
    assert principal.key_id == key_id
    assert principal.calendar_id == work


def test_a_key_is_read_with_its_calendar_or_for_all_calendars_the_default(
    db: Database, factory: Factory
) -> None:
    """Where a create that names no calendar goes, read with the key (``resolve_target``)."""
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, one = factory.key(owner, calendar_id=work)
    _, every = factory.key(owner)
    assert db.call(keys.identify, secret=one).calendar[:2] == (work, "Work")
    default = db.call(keys.identify, secret=every).calendar
    assert default is not None and default[0] == owner.default_calendar_id and default[3] is True


# ---------------------------------------------------------------------------------------------
# Identifying and authorizing


@pytest.mark.parametrize("secret", [None, ""], ids=["none", "empty"])
def test_no_secret_is_a_missing_key(db: Database, secret: str | None) -> None:
    with pytest.raises(MissingKey):
        db.call(keys.identify, secret=secret)


def test_a_malformed_secret_is_refused_before_the_database_is_asked(db: Database) -> None:
    with pytest.raises(MalformedKey):
        db.call(keys.identify, secret="calsk_short")


def test_a_well_formed_secret_nobody_was_given_is_an_unknown_key(db: Database) -> None:
    with pytest.raises(UnknownKey):
        db.call(keys.identify, secret=keys.generate_secret())


def test_an_active_key_becomes_a_principal_with_its_owner_and_permission(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner, permission="read")
    row = db.call(keys.identify, secret=secret)
    principal = keys.authorize(row, now=utcnow())
    assert (principal.key_id, principal.user_id) == (key_id, owner.id)
    assert principal.permission == "read"
    assert principal.scopes == ("calendar:read",)
    assert principal.calendar_id is None


def test_a_read_key_is_refused_write_naming_the_scope_it_lacks(
    db: Database, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    principal = keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())
    with pytest.raises(InsufficientScope) as refused:
        principal.require_write()
    assert refused.value.required_scope == "calendar:write"
    assert "read-only" in refused.value.message


def test_a_key_expires_at_the_instant_it_was_given(db: Database, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    row = db.call(keys.identify, secret=secret)
    keys.authorize(row, now=row.expires_at - timedelta(microseconds=1))
    with pytest.raises(ExpiredKey) as refused:
        keys.authorize(row, now=row.expires_at)
    assert refused.value.code == "expired_api_key"


def test_an_expired_key_is_still_identified_so_its_refusal_can_be_recorded(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    then = utcnow() - timedelta(days=2)
    record, secret = factory.key_record(owner, name="old", now=then)  # expired a day ago
    row = db.call(keys.identify, secret=secret)
    assert row.id == record["id"]
    with pytest.raises(ExpiredKey):
        keys.authorize(row, now=utcnow())
    [listed] = db.call(keys.list_keys, user_id=owner.id, now=utcnow())
    assert listed["state"] == "expired"


# ---------------------------------------------------------------------------------------------
# Revoking


def test_a_revoked_key_is_refused_at_once(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    record = db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    assert record["state"] == "revoked" and record["revokedAt"] is not None
    with pytest.raises(RevokedKey):
        keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())


def test_a_revoked_key_says_who_revoked_it_and_one_revoked_before_that_was_kept_its_owner(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    record = db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    assert record["revokedBy"] == "owner"
    assert db.call(keys.get_key, user_id=owner.id, key_id=key_id)["revoked_by"] == "owner"
    with pytest.raises(RevokedKey, match=r"^The API key has been revoked by its owner\.$"):
        keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())
    # Revoked before 0013, as every key then was: by its owner. A connected app's grant
    # revoked then is not known: it gets the message that names every possibility.
    old_key, old_secret = factory.key(owner)
    db.call(keys.revoke_key, user_id=owner.id, key_id=old_key, now=utcnow())
    db.call(
        lambda conn: conn.execute(
            update(keys_t).where(keys_t.c.id == old_key).values(revoked_by=None)
        )
    )
    [listed] = [
        k for k in db.call(keys.list_keys, user_id=owner.id, now=utcnow()) if k["id"] == old_key
    ]
    assert listed["revokedBy"] == "owner"
    with pytest.raises(RevokedKey, match=r"^The API key has been revoked by its owner\.$"):
        keys.authorize(db.call(keys.identify, secret=old_secret), now=utcnow())
    generic = str(RevokedKey(None, app=True))
    assert "its owner, or by the service" in generic


def test_revoking_a_revoked_key_keeps_the_first_time(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    first = db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    again = db.call(
        keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow() + timedelta(hours=1)
    )
    assert again["revokedAt"] == first["revokedAt"]


def test_an_owner_cannot_revoke_another_owners_key(db: Database, factory: Factory) -> None:
    owner, stranger = factory.owner(), factory.owner()
    key_id, secret = factory.key(owner)
    with pytest.raises(NotFound):
        db.call(keys.revoke_key, user_id=stranger.id, key_id=key_id, now=utcnow())
    keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())  # still active


def test_the_owners_keys_are_listed_newest_first_with_their_states(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    now = utcnow()
    made = []
    for minutes, name in ((3, "oldest"), (2, "middle"), (1, "newest")):
        record, _ = factory.key_record(
            owner,
            name=name,
            expires_at=now + timedelta(days=1),
            now=now - timedelta(minutes=minutes),
        )
        made.append(record["id"])
    db.call(keys.revoke_key, user_id=owner.id, key_id=made[1], now=now)
    listed = db.call(keys.list_keys, user_id=owner.id, now=now)
    assert [(k["name"], k["state"]) for k in listed] == [
        ("newest", "active"),
        ("middle", "revoked"),
        ("oldest", "active"),
    ]
    assert db.call(keys.list_keys, user_id=factory.owner().id, now=now) == []


# ---------------------------------------------------------------------------------------------
# Last use: the last call the key was let through for, never a refusal of the key


def _call(db: Database, key_id: str, *, at: datetime, status: int) -> None:
    record = CallRecord(
        key_id=key_id, at=at, transport="rest", operation="listEvents", method="GET",
        path="/api/v1/calendar/events", status=status, latency_ms=1.0, client_addr=None,
        user_agent=None, request_id=None,
    )  # fmt: skip
    db.call(record_call, record)


def test_a_keys_last_use_is_its_last_call_let_through_never_a_refusal(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    now = utcnow().replace(microsecond=0)
    for minutes, status in ((50, 401), (40, 200), (30, 404), (20, 403), (10, 429), (5, 401)):
        _call(db, key_id, at=now - timedelta(minutes=minutes), status=status)
    # the 404 at -30 min: the key was let through, there was nothing there; after it, refusals
    used = format_utc(now - timedelta(minutes=30))
    [listed] = db.call(keys.list_keys, user_id=owner.id, now=now)
    assert listed["lastUsedAt"] == used

    revoked = db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=now)
    assert revoked["state"] == "revoked" and revoked["lastUsedAt"] == used
    _call(db, key_id, at=now + timedelta(minutes=1), status=401)  # refused: it is revoked
    [listed] = db.call(keys.list_keys, user_id=owner.id, now=now)
    assert listed["lastUsedAt"] == used


def test_a_key_only_ever_refused_was_never_used(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    now = utcnow()
    for status in (401, 403, 429):
        _call(db, key_id, at=now, status=status)
    [listed] = db.call(keys.list_keys, user_id=owner.id, now=now)
    assert listed["lastUsedAt"] is None
    assert db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=now)["lastUsedAt"] is None


def test_a_secrets_checksum_is_its_bodys_crc32_in_six_base62_digits() -> None:
    import random
    import zlib

    from calendar_service.access.keys import _checksum
    from calendar_service.platform.ids import base62

    draw = random.Random(31)
    for _ in range(2000):
        body = "".join(draw.choice(ALPHABET) for _ in range(40))
        crc = zlib.crc32(body.encode())
        assert _checksum(body) == base62(crc.to_bytes(4, "big")).rjust(6, "0")


# Where the words of a permission may still be written out: their one definition; the OpenAPI
# document, where ``"read"`` names a link's source, not a permission; ``keys create``'s default
# (``--permission read``: the command line imports the core only when a command runs); and the
# CalDAV resources, where ``"read"`` and ``"write"`` also name WebDAV privileges (RFC 3744).
_SPELLED_ELSEWHERE = frozenset(
    {
        "calendar_service/access/keys.py",
        "calendar_service/rest/openapi/events.py",
        "calendar_service/cli/owners.py",
        "calendar_service/interop/caldav/resources.py",
    }
)


def test_a_permission_is_spelled_once_in_the_core_and_named_everywhere_else() -> None:
    assert typing.get_args(keys.Permission) == keys.PERMISSIONS
    assert keys.PERMISSIONS == (keys.READ, keys.WRITE, keys.FREEBUSY)
    root = Path(__file__).resolve().parents[3]
    spelled = []
    for package in ("calendar_service", "mcp_tools", "webhooks"):
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name in _SPELLED_ELSEWHERE:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in keys.PERMISSIONS:
                    spelled.append(f"{name}:{node.lineno}: {node.value!r}")
    assert not spelled, "a permission spelled as a string, not keys' name:\n" + "\n".join(spelled)


@pytest.mark.parametrize(
    ("revoked", "expires_in", "state"),
    [
        (None, timedelta(seconds=1), keys.ACTIVE),
        (None, timedelta(0), keys.EXPIRED),
        (None, -timedelta(days=1), keys.EXPIRED),
        (-timedelta(days=1), timedelta(days=1), keys.REVOKED),
        (-timedelta(days=1), -timedelta(days=2), keys.REVOKED),
    ],
)
def test_a_keys_state_is_one_rule_that_authorizing_follows(
    revoked: timedelta | None, expires_in: timedelta, state: str
) -> None:
    now = utcnow()
    revoked_at = None if revoked is None else now + revoked
    expires_at = now + expires_in
    assert keys.state_of(revoked_at=revoked_at, expires_at=expires_at, now=now) == state
    assert keys.key_state({"revoked_at": revoked_at, "expires_at": expires_at}, now=now) == state
    row = keys.KeyRow("key_1", "usr_1", keys.READ, None, expires_at, revoked_at, "h", None, None)
    refusal = {keys.ACTIVE: None, keys.EXPIRED: ExpiredKey, keys.REVOKED: RevokedKey}[state]
    if refusal is None:
        assert keys.authorize(row, now=now).key_id == "key_1"
    else:
        with pytest.raises(refusal):
            keys.authorize(row, now=now)
