"""``calendar.connected``: the owner's connected calendars as availability counts them, and
when their copy is stale (its last success older than three polls, or none yet)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from calendar_service.calendar.connected import counted_sources, source_public
from calendar_service.delivery import connections as store
from calendar_service.platform.db import Database
from calendar_service.platform.models.connections import connections_t
from calendar_service.platform.sealed import seal, sealing_key, unseal
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory


def test_a_source_is_stale_until_read_and_again_three_polls_after_its_last_success(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key = db.call(lambda c: sealing_key(c, configured=None, now=utcnow()))
    added = db.call(
        store.add_ics, user_id=owner.id, url="https://example.com/a.ics", name="A",
        visibility="busy", key=key, now=utcnow(),
    )  # fmt: skip
    now = utcnow()
    [fresh] = db.call(counted_sources, user_id=owner.id)
    assert source_public(fresh, now=now) == {
        "id": added["id"], "name": "A", "syncedAt": None, "stale": True
    }  # fmt: skip
    for age, stale in ((timedelta(minutes=14), False), (timedelta(minutes=16), True)):
        db.call(
            lambda c, age=age: c.execute(
                update(connections_t)
                .where(connections_t.c.id == added["id"])
                .values(synced_at=now - age, poll_seconds=300)
            )
        )
        [row] = db.call(counted_sources, user_id=owner.id)
        assert source_public(row, now=now)["stale"] is stale


def test_a_sealed_secret_opens_only_with_its_key() -> None:
    sealed = seal(b"k" * 32, "https://calendar.google.com/private-secret/basic.ics")
    assert "private-secret" not in sealed and sealed.startswith("v1.")
    assert unseal(b"k" * 32, sealed).endswith("/basic.ics")
    with pytest.raises(ValueError, match="does not open") as refused:
        unseal(b"j" * 32, sealed)
    assert "private-secret" not in str(refused.value)
