"""The core's own entry points (those the CLI calls) refuse text with NUL in it, naming the
field, before it reaches the database: the same on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from calendar_service.calendar import calendars
from calendar_service.platform.db import Database
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.inputs import NUL_MESSAGE
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory


def test_an_owner_email_with_a_nul_character_is_refused(db: Database) -> None:
    with pytest.raises(ValidationFailed) as caught:
        db.call(calendars.create_owner, email="a\x00b@example.com", password=None, now=utcnow())
    assert caught.value.errors == [{"field": "email", "message": NUL_MESSAGE}]


def test_a_calendar_name_with_a_nul_character_is_refused(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    with pytest.raises(ValidationFailed) as caught:
        db.call(calendars.create_calendar, user_id=owner.id, name="Wo\x00rk", now=utcnow())
    assert caught.value.errors == [{"field": "name", "message": NUL_MESSAGE}]


def test_a_key_name_or_calendar_id_with_a_nul_character_is_refused(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    with pytest.raises(ValidationFailed) as caught:
        factory.key_record(owner, name="bot\x00", permission="read", calendar_id="cal_\x00")
    assert caught.value.errors == [
        {"field": "name", "message": NUL_MESSAGE},
        {"field": "calendarId", "message": NUL_MESSAGE},
    ]
