"""Signing an owner in, in the core: the throttle on failed attempts (per email, per client
address, keyed hashes), an attempt counted as a failure until its password proves right, and
the sessions it opens (their lifetime, a copied token ended by signing out or a new password)."""

from __future__ import annotations

import re
from datetime import timedelta

from calendar_service.access import owner_sessions, signin
from calendar_service.access import owners as users
from calendar_service.platform.db import Database
from calendar_service.platform.models import failures_t
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory

PEPPER = "test-pepper"


def test_failures_from_one_address_lock_that_address_for_every_email(db: Database) -> None:
    now = utcnow()
    address = "198.51.100.4"
    for n in range(signin.ADDRESS_LIMIT):
        db.call(
            signin.record_failure,
            pepper=PEPPER,
            email=f"victim{n}@example.com",
            client_addr=address,
            now=now + timedelta(seconds=n),
        )
    lockout = db.call(
        signin.check, pepper=PEPPER, email="fresh@example.com", client_addr=address, now=now
    )
    assert lockout is not None and lockout.scope == "address"
    assert lockout.retry_at == now + signin.WINDOW
    other = db.call(
        signin.check, pepper=PEPPER, email="fresh@example.com", client_addr="198.51.100.5", now=now
    )
    assert other is None
    later = now + signin.WINDOW + timedelta(seconds=1)
    assert (
        db.call(signin.check, pepper=PEPPER, email="x@example.com", client_addr=address, now=later)
        is None
    )


def test_a_successful_sign_in_clears_the_emails_failures(db: Database) -> None:
    now = utcnow()
    email = "forgetful@example.com"
    for _ in range(signin.EMAIL_LIMIT - 1):
        db.call(signin.record_failure, pepper=PEPPER, email=email, client_addr=None, now=now)
    db.call(signin.clear_email, pepper=PEPPER, email=email)
    db.call(signin.record_failure, pepper=PEPPER, email=email, client_addr=None, now=now)
    assert db.call(signin.check, pepper=PEPPER, email=email, client_addr=None, now=now) is None


def test_throttle_buckets_are_keyed_hashes_never_the_typed_text(db: Database) -> None:
    typed = "hunter2-typed-into-the-email-field"
    db.call(
        signin.record_failure, pepper=PEPPER, email=typed, client_addr="192.0.2.9", now=utcnow()
    )
    with db.engine.connect() as conn:
        buckets = [row.bucket for row in conn.execute(failures_t.select())]
    assert all(re.fullmatch(r"[0-9a-f]{64}", bucket) for bucket in buckets)
    assert not any(typed in bucket or "192.0.2.9" in bucket for bucket in buckets)


def test_an_attempt_counts_as_a_failure_until_its_password_proves_right(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    now = utcnow()
    for _ in range(signin.EMAIL_LIMIT - 1):
        attempt = db.call(
            signin.begin_attempt, pepper=PEPPER, email=owner.email, client_addr=None, now=now
        )
        assert attempt.lockout is None and attempt.user_id == owner.id
        assert users.verify_password(attempt.password_hash, owner.password)
    right = db.call(
        signin.begin_attempt, pepper=PEPPER, email=owner.email, client_addr=None, now=now
    )
    session = db.call(
        signin.complete_attempt, pepper=PEPPER, email=owner.email, attempt=right, now=now
    )
    assert session is not None
    _token, expires_at = session
    assert expires_at == now + owner_sessions.SESSION_LIFETIME
    # The right password cleared the email's failures: the next wrong ones start again.
    assert (
        db.call(signin.check, pepper=PEPPER, email=owner.email, client_addr=None, now=now) is None
    )
    for _ in range(signin.EMAIL_LIMIT):
        db.call(signin.begin_attempt, pepper=PEPPER, email=owner.email, client_addr=None, now=now)
    locked = db.call(
        signin.begin_attempt, pepper=PEPPER, email=owner.email, client_addr=None, now=now
    )
    assert locked.lockout is not None and locked.lockout.scope == "email"
    assert locked.user_id is None and locked.failure_ids == []


def test_a_session_lasts_its_lifetime_and_ends_on_sign_out_or_a_new_password(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    now = utcnow()
    token, expires_at = db.call(owner_sessions.start_session, user_id=owner.id, now=now)
    assert timedelta(hours=12) == owner_sessions.SESSION_LIFETIME
    found = db.call(owner_sessions.load_session, token=token, now=now)
    assert found is not None and (found.user_id, found.email) == (owner.id, owner.email)
    assert found.expires_at == expires_at
    assert db.call(owner_sessions.load_session, token=token, now=expires_at) is None
    db.call(owner_sessions.end_session, token=token)
    assert db.call(owner_sessions.load_session, token=token, now=now) is None
    other, _ = db.call(owner_sessions.start_session, user_id=owner.id, now=now)
    db.call(users.set_password, email=owner.email, password="a brand new one 2")
    assert db.call(owner_sessions.load_session, token=other, now=now) is None


def test_without_a_configured_secret_one_is_generated_once_and_kept(db: Database) -> None:
    first = db.call(owner_sessions.session_signing_secret, now=utcnow())
    assert first == db.call(owner_sessions.session_signing_secret, now=utcnow())
    assert len(first) >= 64
