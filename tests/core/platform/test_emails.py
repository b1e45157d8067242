"""One email rule (``emails.check_email``): every path that takes an address (an owner, an
event's attendees, free/busy sharing, an imported file's attendees) answers the same on the
same address, hostile ones included (docs/api.md, "Email addresses")."""

from __future__ import annotations

from typing import Any

import pytest

from calendar_service.calendar import calendars, sharing
from calendar_service.calendar.attendees import check_attendees
from calendar_service.platform.db import Database
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory

# An address and what every path answers: the address as kept (an owner's and a share's in
# lower case), or None for refused.
ADDRESSES: list[tuple[str, str | None]] = [
    ("ana@example.com", "ana@example.com"),
    ("  Ana@Example.COM\t", "ana@example.com"),
    ("ana+tag@example.com", "ana+tag@example.com"),
    ("ana@пример.рф", "ana@пример.рф"),
    ("ana@xn--e1afmkfd.xn--p1ai", "ana@пример.рф"),
    ("ана@example.com", "ана@example.com"),
    ("ana@mu\u0308nchen.de", "ana@münchen.de"),
    ("a" * 64 + "@example.com", "a" * 64 + "@example.com"),
    # refused by both rules before
    ("no-at-sign", None),
    ("ana@example", None),
    ("ana@exa mple.com", None),
    ("ana\x00@example.com", None),
    ("ana@exаmple.com", None),  # a Cyrillic а: a look-alike
    ("a@b.c\r\nBcc: x@y.z", None),
    # an owner's rule took these, the attendees' refused them
    ("ana@example.com.", None),
    ("ana@[192.0.2.1]", None),
    ("ana@123.123.123.123", None),
    ('"ana"@example.com', None),
    ("ana..b@example.com", None),
    (".ana@example.com", None),
    ("ana@-example.com", None),
    ("ana@example..com", None),
    ("ana@sub_domain.com", None),
    ("ana(comment)@example.com", None),
    ("ana@example.test", None),
    ("ana@corp.local", None),
    ("ana@" + "a" * 250 + ".com", None),
    # the attendees' rule took this, an owner's refused it
    ("a" * 65 + "@example.com", None),
    ("a" * 64 + "@" + ("b" * 60 + ".") * 4 + "com", None),
]


class _Made(Exception):
    """Raised with the owner made, so that its transaction rolls back and every test may
    make the same address again."""


def _owner(db: Database, address: str) -> tuple[str | None, list[str]]:
    def make(conn: Any) -> None:
        raise _Made(calendars.create_owner(conn, email=address, password=None, now=utcnow()))

    try:
        db.call(make)
    except ValidationFailed as exc:
        return None, [e["message"] for e in exc.errors]
    except _Made as made:
        return made.args[0]["email"], []
    raise AssertionError("unreachable")


def _attendee(address: str) -> tuple[str | None, list[str]]:
    errors: list[FieldError] = []
    found = check_attendees([{"email": address}], errors)
    if found is None:
        return None, [e["message"] for e in errors]
    return found[0]["email"].lower(), []


def _share(db: Database, owner_id: str, address: str) -> tuple[str | None, list[str]]:
    try:
        return db.call(sharing.share, user_id=owner_id, email=address, now=utcnow()), []
    except ValidationFailed as exc:
        return None, [e["message"] for e in exc.errors]


@pytest.mark.parametrize(("address", "kept"), ADDRESSES)
def test_an_owner_an_attendee_and_a_share_answer_the_same_on_an_address(
    db: Database, factory: Factory, address: str, kept: str | None
) -> None:
    sharer = factory.owner()
    answers: dict[str, Any] = {
        "attendee": _attendee(address),
        "share": _share(db, sharer.id, address),
        "owner": _owner(db, address),
    }
    assert {name: found for name, (found, _) in answers.items()} == dict.fromkeys(answers, kept)
    messages = {name: tuple(said) for name, (_, said) in answers.items()}
    assert len(set(messages.values())) == 1, messages
    if kept is None:
        assert messages["owner"], "a refusal says why"


def test_a_refused_address_says_why_naming_the_field_as_sent(db: Database) -> None:
    with pytest.raises(ValidationFailed) as caught:
        db.call(calendars.create_owner, email="ana@example.com.", password=None, now=utcnow())
    assert caught.value.errors == [
        {
            "field": "email",
            "message": "is not a valid email address (An email address cannot end with a period.)",
        }
    ]
    errors: list[FieldError] = []
    check_attendees([{"email": "ana@example.com."}], errors)
    assert errors == [{"field": "attendees.0.email", "message": caught.value.errors[0]["message"]}]
