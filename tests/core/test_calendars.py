"""Calendars in the core (``calendars``): which calendars a key reaches, which calendar a new
event goes to (docs/api.md, "Which calendar"), and what a new calendar must be."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from calendar_service import calendars, keys
from calendar_service.db import Database
from calendar_service.errors import InsufficientScope, ValidationFailed
from calendar_service.keys import Principal
from calendar_service.models import DEFAULT_CALENDAR_NAME
from calendar_service.timeutil import utcnow
from tests.support import Factory, Owner


def principal_for(
    db: Database, factory: Factory, owner: Owner, *, calendar_id: str | None = None
) -> Principal:
    """The principal a request with a new key of ``owner`` gets."""
    _, secret = factory.key(owner, calendar_id=calendar_id)
    return keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())


# ---------------------------------------------------------------------------------------------
# accessible_calendars


def test_an_all_calendars_key_reaches_every_calendar_of_its_owner_default_first(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    zulu = factory.calendar(owner, name="Zulu")
    alpha = factory.calendar(owner, name="Alpha", time_zone="Europe/Berlin")
    factory.calendar(factory.owner(), name="Not mine")
    reached = db.call(calendars.accessible_calendars, principal=principal_for(db, factory, owner))
    assert [(c.id, c.name, c.is_default) for c in reached] == [
        (owner.default_calendar_id, DEFAULT_CALENDAR_NAME, True),
        (alpha, "Alpha", False),
        (zulu, "Zulu", False),
    ]
    assert reached[1].time_zone == "Europe/Berlin"


def test_a_one_calendar_key_reaches_its_calendar_alone(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work", time_zone="America/New_York")
    principal = principal_for(db, factory, owner, calendar_id=work)
    reached = db.call(calendars.accessible_calendars, principal=principal)
    assert [(c.id, c.name, c.time_zone, c.is_default) for c in reached] == [
        (work, "Work", "America/New_York", False)
    ]


# ---------------------------------------------------------------------------------------------
# resolve_target


def target(db: Database, principal: Principal, **sent: str | None) -> str:
    row = db.call(
        calendars.resolve_target,
        principal=principal,
        calendar_id=sent.get("calendar_id"),
        calendar_name=sent.get("calendar_name"),
    )
    return str(row.id)


def refused(db: Database, principal: Principal, **sent: str | None) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as raised:
        target(db, principal, **sent)
    return raised.value


def test_an_all_calendars_key_that_names_no_calendar_writes_to_the_default(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    factory.calendar(owner, name="Work")
    assert target(db, principal_for(db, factory, owner)) == owner.default_calendar_id


def test_a_calendar_can_be_named_by_id_or_by_name(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner)
    assert target(db, principal, calendar_id=work) == work
    assert target(db, principal, calendar_name="Work") == work
    assert target(db, principal, calendar_name="  Work ") == work  # trimmed, as stored
    assert target(db, principal, calendar_id=work, calendar_name="Work") == work


def test_an_id_and_a_name_of_two_different_calendars_are_refused_naming_both(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    factory.calendar(owner, name="Home")
    error = refused(db, principal_for(db, factory, owner), calendar_id=work, calendar_name="Home")
    [field] = error.errors
    assert field["field"] == "calendar"
    assert "'Work'" in field["message"] and "'Home'" in field["message"]


def test_a_calendar_the_owner_does_not_have_is_refused_and_never_created(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = principal_for(db, factory, owner)
    error = refused(db, principal, calendar_id="cal_nope", calendar_name="Holidays")
    assert {(e["field"], e["message"]) for e in error.errors} == {
        ("calendarId", "no calendar with id 'cal_nope'"),
        ("calendar", "no calendar named 'Holidays'"),
    }
    reached = db.call(calendars.accessible_calendars, principal=principal)
    assert [c.name for c in reached] == [DEFAULT_CALENDAR_NAME]


def test_another_owners_calendar_is_as_unknown_as_one_that_does_not_exist(
    db: Database, factory: Factory
) -> None:
    owner, stranger = factory.owner(), factory.owner()
    theirs = factory.calendar(stranger, name="Secret plans")
    principal = principal_for(db, factory, owner)
    assert refused(db, principal, calendar_id=theirs).errors[0]["field"] == "calendarId"
    assert refused(db, principal, calendar_name="Secret plans").errors[0]["field"] == "calendar"


def test_a_one_calendar_key_that_names_no_calendar_writes_to_its_own(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner, calendar_id=work)
    assert target(db, principal) == work
    assert target(db, principal, calendar_id=work, calendar_name=" Work ") == work


@pytest.mark.parametrize(
    "sent",
    [
        lambda owner: {"calendar_name": DEFAULT_CALENDAR_NAME},
        lambda owner: {"calendar_id": owner.default_calendar_id},
        lambda owner: {"calendar_name": "No such calendar"},
        lambda owner: {"calendar_id": "cal_nope"},
    ],
    ids=["owners-other-by-name", "owners-other-by-id", "unknown-name", "unknown-id"],
)
def test_a_one_calendar_key_naming_any_other_calendar_is_out_of_scope_and_learns_nothing(
    db: Database, factory: Factory, sent: Callable[[Owner], dict[str, str]]
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner, calendar_id=work)
    with pytest.raises(InsufficientScope) as raised:
        target(db, principal, **sent(owner))
    message = raised.value.message
    assert "'Work'" in message and work in message  # its own calendar, to send instead
    # The same answer whether or not the owner has such a calendar: nothing else is named.
    assert DEFAULT_CALENDAR_NAME not in message and owner.default_calendar_id not in message
    assert "No such calendar" not in message and "cal_nope" not in message


# ---------------------------------------------------------------------------------------------
# create_calendar


def create(db: Database, owner: Owner, name: str, time_zone: str = "UTC") -> dict[str, object]:
    return db.call(
        calendars.create_calendar, user_id=owner.id, name=name, time_zone=time_zone, now=utcnow()
    )


def test_a_new_calendar_has_a_trimmed_name_and_its_time_zone(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    made = create(db, owner, "  Team offsites ", "Asia/Tokyo")
    assert made["name"] == "Team offsites"
    assert made["timeZone"] == "Asia/Tokyo"
    assert made["isDefault"] is False
    assert str(made["id"]).startswith("cal_")
    rows = db.call(calendars.list_owner_calendars, user_id=owner.id)
    assert [r.name for r in rows] == [DEFAULT_CALENDAR_NAME, "Team offsites"]


def test_an_owner_cannot_have_two_calendars_of_one_name_but_two_owners_can(
    db: Database, factory: Factory
) -> None:
    owner, other = factory.owner(), factory.owner()
    create(db, owner, "Work")
    with pytest.raises(ValidationFailed) as raised:
        create(db, owner, " Work")
    assert raised.value.errors == [
        {"field": "name", "message": "a calendar named 'Work' already exists"}
    ]
    assert create(db, other, "Work")["name"] == "Work"


@pytest.mark.parametrize(
    ("name", "time_zone", "fields"),
    [
        ("", "UTC", {"name"}),
        ("   ", "UTC", {"name"}),
        ("x" * (calendars.NAME_MAX + 1), "UTC", {"name"}),
        ("Work", "Mars/Olympus_Mons", {"timeZone"}),
        ("", "not a zone", {"name", "timeZone"}),
        ("nul\x00inside", "UTC", {"name"}),
    ],
    ids=["empty", "blank", "too-long", "unknown-zone", "both-bad", "nul"],
)
def test_a_calendar_with_bad_fields_is_refused_listing_every_one(
    db: Database, factory: Factory, name: str, time_zone: str, fields: set[str]
) -> None:
    owner = factory.owner()
    with pytest.raises(ValidationFailed) as raised:
        create(db, owner, name, time_zone)
    assert {e["field"] for e in raised.value.errors} == fields
    assert len(db.call(calendars.list_owner_calendars, user_id=owner.id)) == 1


def test_a_name_of_the_longest_length_is_accepted(db: Database, factory: Factory) -> None:
    name = "x" * calendars.NAME_MAX
    assert create(db, factory.owner(), name)["name"] == name
