"""Events in the core (``events``), called as the fronts call them but without HTTP: listing
(window, order, pages), create (target calendar, time zones, all-day), update (PATCH
semantics), delete, scope, idempotency and the read-only refusal, on the real database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from calendar_service.access import keys
from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.operations import catalog as operations
from calendar_service.operations import gateway
from calendar_service.platform.db import Database
from calendar_service.platform.errors import (
    IdempotencyMismatch,
    InsufficientScope,
    NotFound,
    ValidationFailed,
)
from calendar_service.platform.models import (
    DEFAULT_CALENDAR_NAME,
    TITLE_MAX,
    EventCreate,
    EventUpdate,
)
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, Owner, call_context

TOKEN_KEY = b"test page-token key"


def principal_for(
    db: Database,
    factory: Factory,
    owner: Owner,
    *,
    permission: str = "write",
    calendar_id: str | None = None,
) -> Principal:
    """The principal a request with a new key of ``owner`` gets."""
    _, secret = factory.key(owner, permission=permission, calendar_id=calendar_id)
    return keys.authorize(db.call(keys.identify, secret=secret), now=utcnow())


def create(db: Database, principal: Principal, **fields: Any) -> dict[str, Any]:
    values = {
        "title": "Planning",
        "starts_at": "2026-03-02T09:00:00Z",
        "ends_at": "2026-03-02T10:00:00Z",
        **fields,
    }
    return db.call(
        events.create_event, principal=principal, data=EventCreate(**values), now=utcnow()
    )


def listed(db: Database, principal: Principal, **params: Any) -> dict[str, Any]:
    return db.call(events.list_events, principal=principal, token_key=TOKEN_KEY, **params)


def titles(db: Database, principal: Principal, **params: Any) -> list[str]:
    return [e["title"] for e in listed(db, principal, **params)["events"]]


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def fields_of(error: ValidationFailed) -> set[str]:
    return {e["field"] for e in error.errors}


# ---------------------------------------------------------------------------------------------
# Listing: the window


@pytest.fixture
def owner(factory: Factory) -> Owner:
    return factory.owner()


@pytest.fixture
def writer(db: Database, factory: Factory, owner: Owner) -> Principal:
    return principal_for(db, factory, owner)


def test_an_event_is_listed_when_it_overlaps_the_window_and_not_when_it_only_touches_it(
    db: Database, writer: Principal
) -> None:
    for title, starts, ends in [
        ("ends at timeMin", "09:00", "10:00"),
        ("inside", "10:15", "10:45"),
        ("across timeMax", "10:30", "11:30"),
        ("starts at timeMax", "11:00", "12:00"),
    ]:
        create(
            db,
            writer,
            title=title,
            starts_at=f"2026-03-02T{starts}Z",
            ends_at=f"2026-03-02T{ends}Z",
        )
    window = {"time_min": "2026-03-02T10:00:00Z", "time_max": "2026-03-02T11:00:00Z"}
    assert titles(db, writer, **window) == ["inside", "across timeMax"]


def test_a_zero_length_event_at_time_min_is_listed_and_one_at_time_max_is_not(
    db: Database, writer: Principal
) -> None:
    for title, at in [("at timeMin", "10:00"), ("at timeMax", "11:00")]:
        create(db, writer, title=title, starts_at=f"2026-03-02T{at}Z", ends_at=f"2026-03-02T{at}Z")
    window = {"time_min": "2026-03-02T10:00:00Z", "time_max": "2026-03-02T11:00:00Z"}
    assert titles(db, writer, **window) == ["at timeMin"]


def test_an_event_that_began_long_before_the_window_and_runs_through_it_is_listed(
    db: Database, writer: Principal
) -> None:
    create(
        db,
        writer,
        title="sabbatical",
        starts_at="2025-01-01T00:00:00Z",
        ends_at="2027-01-01T00:00:00Z",
    )
    create(
        db,
        writer,
        title="short, earlier",
        starts_at="2026-02-01T09:00:00Z",
        ends_at="2026-02-01T10:00:00Z",
    )
    window = {"time_min": "2026-03-02T00:00:00Z", "time_max": "2026-03-03T00:00:00Z"}
    assert titles(db, writer, **window) == ["sabbatical"]


def test_an_omitted_bound_leaves_that_side_of_the_window_open(
    db: Database, writer: Principal
) -> None:
    for title, day in [("early", "2020-01-01"), ("middle", "2026-03-02"), ("late", "2030-12-31")]:
        create(db, writer, title=title, starts_at=f"{day}T09:00:00Z", ends_at=f"{day}T10:00:00Z")
    assert titles(db, writer) == ["early", "middle", "late"]
    assert titles(db, writer, time_min="2026-03-02T00:00:00Z") == ["middle", "late"]
    assert titles(db, writer, time_max="2026-03-03T00:00:00Z") == ["early", "middle"]
    assert titles(db, writer, time_min="", time_max="") == ["early", "middle", "late"]


def test_bounds_without_an_offset_and_bare_dates_are_read_in_the_default_calendars_zone(
    db: Database, factory: Factory
) -> None:
    berlin_owner = factory.owner(time_zone="Europe/Berlin")
    principal = principal_for(db, factory, berlin_owner)
    # 00:15 to 00:45 on 2 March in Berlin: still 1 March in UTC.
    create(
        db,
        principal,
        title="after midnight",
        starts_at="2026-03-01T23:15:00Z",
        ends_at="2026-03-01T23:45:00Z",
    )
    assert titles(db, principal, time_min="2026-03-02") == ["after midnight"]
    assert titles(db, principal, time_min="2026-03-02T00:00:00") == ["after midnight"]
    assert titles(db, principal, time_min="2026-03-02T00:00:00Z") == []


def test_the_list_names_the_calendars_the_key_reaches(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    work = factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    result = listed(db, writer)
    assert result["calendars"] == [
        {
            "id": owner.default_calendar_id,
            "name": DEFAULT_CALENDAR_NAME,
            "timeZone": "UTC",
            "isDefault": True,
            "color": None,
            "readOnly": False,
        },
        {
            "id": work,
            "name": "Work",
            "timeZone": "Europe/Berlin",
            "isDefault": False,
            "color": None,
            "readOnly": False,
        },
    ]
    assert result["events"] == []
    assert "nextPageToken" not in result


# ---------------------------------------------------------------------------------------------
# Listing: order and pages


def test_events_come_in_start_order_then_id_and_page_through_without_gaps_or_repeats(
    db: Database, writer: Principal
) -> None:
    made = [
        create(
            db,
            writer,
            title=f"e{i}",
            starts_at=f"2026-03-02T{9 + i // 2:02d}:00:00Z",
            ends_at="2026-03-02T18:00:00Z",
        )
        for i in range(7)
    ]  # pairs share a start: the id breaks the tie
    expected = sorted(made, key=lambda e: (e["startsAt"], e["id"]))
    assert listed(db, writer)["events"] == expected
    pages: list[list[dict[str, Any]]] = []
    token = None
    while True:
        page = listed(db, writer, limit="3", page_token=token)
        pages.append(page["events"])
        token = page.get("nextPageToken")
        if token is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [e for p in pages for e in p] == expected


def test_a_page_token_is_good_only_for_the_query_and_key_it_came_from(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    for hour in (9, 10, 11):
        create(
            db,
            writer,
            starts_at=f"2026-03-02T{hour:02d}:00:00Z",
            ends_at=f"2026-03-02T{hour:02d}:30:00Z",
        )
    window = {"time_min": "2026-03-02T00:00:00Z"}
    token = listed(db, writer, limit=1, **window)["nextPageToken"]
    assert len(listed(db, writer, limit=1, page_token=token, **window)["events"]) == 1
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    other_key = principal_for(db, factory, owner)
    for principal, params, sent in [
        (writer, {"time_min": "2026-03-01T00:00:00Z"}, token),  # another window
        (writer, {}, token),  # no window
        (other_key, window, token),  # the same owner's other key
        (writer, window, tampered),
        (writer, window, "not a token at all"),
    ]:
        with pytest.raises(ValidationFailed) as refused:
            listed(db, principal, limit=1, page_token=sent, **params)
        assert fields_of(refused.value) == {"pageToken"}


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        ({"time_min": "2026-03-02T10:00:00Z", "time_max": "2026-03-02T09:00:00Z"}, {"timeMax"}),
        ({"time_min": "yesterday"}, {"timeMin"}),
        ({"time_min": "2026-02-30", "time_max": "soon"}, {"timeMin", "timeMax"}),
        ({"limit": 0}, {"limit"}),
        ({"limit": events.MAX_LIMIT + 1}, {"limit"}),
        ({"limit": "ten"}, {"limit"}),
        ({"limit": "-5"}, {"limit"}),
    ],
    ids=["max-before-min", "bad-min", "both-bad", "zero", "too-many", "words", "negative"],
)
def test_bad_list_parameters_are_refused_naming_each_one(
    db: Database, writer: Principal, params: dict[str, Any], fields: set[str]
) -> None:
    with pytest.raises(ValidationFailed) as refused:
        listed(db, writer, **params)
    assert fields_of(refused.value) == fields


def test_the_largest_limit_is_accepted(db: Database, writer: Principal) -> None:
    create(db, writer)
    assert len(listed(db, writer, limit=str(events.MAX_LIMIT))["events"]) == 1


# ---------------------------------------------------------------------------------------------
# Create


def test_an_event_sent_without_a_calendar_goes_to_the_default_one(
    db: Database, owner: Owner, writer: Principal
) -> None:
    event = create(db, writer, title="  Planning  ", description="agenda", location="Room 1")
    assert event["calendarId"] == owner.default_calendar_id
    assert event["calendar"] == DEFAULT_CALENDAR_NAME
    assert event["title"] == "Planning"
    assert (event["startsAt"], event["endsAt"]) == ("2026-03-02T09:00:00Z", "2026-03-02T10:00:00Z")
    assert (event["description"], event["location"], event["allDay"]) == ("agenda", "Room 1", False)
    assert event["id"].startswith("ev_")
    assert event["createdAt"] == event["updatedAt"]
    fetched = db.call(events.get_event, principal=writer, event_id=event["id"])
    assert fetched == event


def test_an_event_goes_to_the_calendar_named_and_its_times_are_read_in_that_zone(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    berlin = factory.calendar(owner, name="Berlin office", time_zone="Europe/Berlin")
    by_name = create(
        db,
        writer,
        calendar="Berlin office",
        starts_at="2026-07-01T09:30:00",
        ends_at="2026-07-01T10:00:00-04:00",
    )
    assert by_name["calendarId"] == berlin
    assert by_name["startsAt"] == "2026-07-01T09:30:00+02:00"  # read in Berlin, shown in Berlin
    assert by_name["endsAt"] == "2026-07-01T16:00:00+02:00"  # an offset sent is honoured
    by_id = create(db, writer, calendar_id=berlin)
    assert (by_id["calendar"], by_id["startsAt"]) == ("Berlin office", "2026-03-02T10:00:00+01:00")


def test_a_one_calendar_key_creates_in_its_calendar_and_nowhere_else(
    db: Database, factory: Factory, owner: Owner
) -> None:
    work = factory.calendar(owner, name="Work")
    scoped = principal_for(db, factory, owner, calendar_id=work)
    assert create(db, scoped)["calendarId"] == work
    with pytest.raises(InsufficientScope):
        create(db, scoped, calendar_id=owner.default_calendar_id)
    everything = principal_for(db, factory, owner)
    assert [e["calendarId"] for e in listed(db, everything)["events"]] == [work]


def test_every_bad_field_of_a_new_event_is_reported_at_once_and_nothing_is_written(
    db: Database, writer: Principal
) -> None:
    with pytest.raises(ValidationFailed) as refused:
        create(db, writer, title="   ", starts_at="tomorrow at nine", calendar="Holidays")
    assert fields_of(refused.value) == {"title", "startsAt", "calendar"}
    assert listed(db, writer)["events"] == []


@pytest.mark.parametrize(
    ("fields", "bad"),
    [
        ({"title": "x" * (TITLE_MAX + 1)}, "title"),
        ({"ends_at": "2026-03-02T08:59:59Z"}, "endsAt"),
        ({"starts_at": "2026-03-02"}, "startsAt"),  # a date needs allDay
        ({"ends_at": "2026-03-02T25:00:00Z"}, "endsAt"),
    ],
    ids=["title-too-long", "ends-before-start", "date-without-all-day", "hour-25"],
)
def test_a_new_event_with_a_bad_value_is_refused_naming_the_field(
    db: Database, writer: Principal, fields: dict[str, str], bad: str
) -> None:
    with pytest.raises(ValidationFailed) as refused:
        create(db, writer, **fields)
    assert fields_of(refused.value) == {bad}


def test_a_title_of_the_longest_length_is_accepted(db: Database, writer: Principal) -> None:
    assert create(db, writer, title="x" * TITLE_MAX)["title"] == "x" * TITLE_MAX


def test_untrusted_input_reports_type_and_value_errors_together(
    db: Database, writer: Principal
) -> None:
    body = {"title": 5, "startsAt": "nonsense", "allDay": "yes", "colour": "red"}
    with pytest.raises(ValidationFailed) as refused:
        db.call(events.create_event_from_input, principal=writer, body=body, now=utcnow())
    assert fields_of(refused.value) == {"title", "startsAt", "endsAt", "allDay", "colour"}
    with pytest.raises(ValidationFailed) as not_object:
        db.call(events.create_event_from_input, principal=writer, body=["a list"], now=utcnow())
    assert fields_of(not_object.value) == {"body"}
    assert listed(db, writer)["events"] == []


# ---------------------------------------------------------------------------------------------
# All-day events


def test_an_all_day_event_runs_from_midnight_to_midnight_in_its_calendars_zone(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    factory.calendar(owner, name="Berlin", time_zone="Europe/Berlin")
    one_day = create(
        db, writer, calendar="Berlin", all_day=True, starts_at="2026-03-02", ends_at="2026-03-02"
    )
    assert (one_day["startsAt"], one_day["endsAt"]) == (
        "2026-03-02T00:00:00+01:00",
        "2026-03-03T00:00:00+01:00",
    )
    assert one_day["allDay"] is True
    # endsAt is exclusive: the 28th and the 29th, across the switch to summer time.
    weekend = create(
        db, writer, calendar="Berlin", all_day=True, starts_at="2026-03-28", ends_at="2026-03-30"
    )
    assert (weekend["startsAt"], weekend["endsAt"]) == (
        "2026-03-28T00:00:00+01:00",
        "2026-03-30T00:00:00+02:00",
    )
    midnight = create(
        db,
        writer,
        calendar="Berlin",
        all_day=True,
        starts_at="2026-04-01T00:00:00",
        ends_at="2026-04-02T00:00:00+02:00",
    )
    assert (midnight["startsAt"], midnight["endsAt"]) == (
        "2026-04-01T00:00:00+02:00",
        "2026-04-02T00:00:00+02:00",
    )


def test_an_all_day_event_that_ends_before_it_starts_or_is_not_whole_days_is_refused(
    db: Database, writer: Principal
) -> None:
    with pytest.raises(ValidationFailed) as backwards:
        create(db, writer, all_day=True, starts_at="2026-03-05", ends_at="2026-03-04")
    assert fields_of(backwards.value) == {"endsAt"}
    with pytest.raises(ValidationFailed) as timed:
        create(db, writer, all_day=True, starts_at="2026-03-05T09:30:00Z", ends_at="2026-03-05")
    assert fields_of(timed.value) == {"startsAt"}


# ---------------------------------------------------------------------------------------------
# Update (PATCH semantics)


def update(db: Database, principal: Principal, event_id: str, **fields: Any) -> dict[str, Any]:
    return db.call(
        events.update_event,
        principal=principal,
        event_id=event_id,
        body=EventUpdate(**fields),
        now=utcnow(),
    )


def test_an_update_changes_the_fields_sent_and_nothing_else(
    db: Database, writer: Principal
) -> None:
    event = create(db, writer, description="agenda", location="Room 1")
    changed = update(db, writer, event["id"], title="Retro", location="Room 2")
    assert changed == {
        **event,
        "title": "Retro",
        "location": "Room 2",
        "updatedAt": changed["updatedAt"],
    }
    assert instant(changed["updatedAt"]) > instant(event["updatedAt"])
    assert db.call(events.get_event, principal=writer, event_id=event["id"]) == changed


def test_null_clears_description_and_location_but_not_the_required_fields(
    db: Database, writer: Principal
) -> None:
    event = create(db, writer, description="agenda", location="Room 1")
    cleared = update(db, writer, event["id"], description=None)
    assert (cleared["description"], cleared["location"]) == (None, "Room 1")
    with pytest.raises(ValidationFailed) as refused:
        update(db, writer, event["id"], title=None, starts_at=None, all_day=None)
    assert fields_of(refused.value) == {"title", "startsAt", "allDay"}


def test_moving_one_end_is_checked_against_the_stored_other_and_a_refusal_changes_nothing(
    db: Database, writer: Principal
) -> None:
    event = create(db, writer)
    later = update(db, writer, event["id"], ends_at="2026-03-02T12:00:00Z")
    assert (later["startsAt"], later["endsAt"]) == ("2026-03-02T09:00:00Z", "2026-03-02T12:00:00Z")
    with pytest.raises(ValidationFailed) as refused:
        update(db, writer, event["id"], starts_at="2026-03-02T13:00:00Z", title="Moved")
    assert fields_of(refused.value) == {"endsAt"}
    assert db.call(events.get_event, principal=writer, event_id=event["id"]) == later


def test_an_update_with_nothing_sent_returns_the_event_untouched(
    db: Database, writer: Principal
) -> None:
    event = create(db, writer)
    assert update(db, writer, event["id"]) == event


def test_an_event_moved_far_away_is_still_found_by_the_window_it_is_in_now(
    db: Database, writer: Principal
) -> None:
    event = create(db, writer)
    update(
        db, writer, event["id"], starts_at="2026-01-01T00:00:00Z", ends_at="2026-12-31T00:00:00Z"
    )
    window = {"time_min": "2026-06-01T00:00:00Z", "time_max": "2026-06-02T00:00:00Z"}
    assert titles(db, writer, **window) == ["Planning"]


def test_an_event_made_all_day_keeps_its_days_in_its_calendars_zone(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    factory.calendar(owner, name="NY", time_zone="America/New_York")
    event = create(
        db, writer, calendar="NY", starts_at="2026-03-02T09:00:00", ends_at="2026-03-02T10:00:00"
    )
    whole = update(
        db, writer, event["id"], all_day=True, starts_at="2026-03-02", ends_at="2026-03-03"
    )
    assert (whole["startsAt"], whole["endsAt"], whole["allDay"]) == (
        "2026-03-02T00:00:00-05:00",
        "2026-03-03T00:00:00-05:00",
        True,
    )
    renamed = update(db, writer, event["id"], title="Offsite")  # stays all-day
    assert (renamed["startsAt"], renamed["endsAt"], renamed["allDay"]) == (
        whole["startsAt"],
        whole["endsAt"],
        True,
    )


def test_untrusted_update_input_reports_every_bad_field(db: Database, writer: Principal) -> None:
    event = create(db, writer)
    body = {"title": ["not", "text"], "endsAt": "2026-03-01T00:00:00Z", "startAt": "typo"}
    with pytest.raises(ValidationFailed) as refused:
        db.call(
            events.update_event,
            principal=writer,
            event_id=event["id"],
            body=body,
            now=utcnow(),
        )
    assert fields_of(refused.value) == {"title", "endsAt", "startAt"}
    assert db.call(events.get_event, principal=writer, event_id=event["id"]) == event


# ---------------------------------------------------------------------------------------------
# Delete


def test_a_deleted_event_is_returned_as_it_was_and_is_gone(db: Database, writer: Principal) -> None:
    event = create(db, writer)
    keep = create(db, writer, title="Keep")
    gone = db.call(events.delete_event, principal=writer, event_id=event["id"], now=utcnow())
    assert gone == event
    with pytest.raises(NotFound):
        db.call(events.get_event, principal=writer, event_id=event["id"])
    with pytest.raises(NotFound):
        db.call(events.delete_event, principal=writer, event_id=event["id"], now=utcnow())
    assert listed(db, writer)["events"] == [keep]


# ---------------------------------------------------------------------------------------------
# Scope: what a key cannot reach does not exist for it


def out_of_reach(db: Database, principal: Principal, event_id: str) -> list[str]:
    """The messages of get, update and delete of ``event_id`` by ``principal``: each must
    be a 404."""
    calls = [
        (events.get_event, {}),
        (events.update_event, {"body": EventUpdate(title="Mine now"), "now": utcnow()}),
        (events.delete_event, {"now": utcnow()}),
    ]
    messages = []
    for fn, extra in calls:
        with pytest.raises(NotFound) as refused:
            db.call(fn, principal=principal, event_id=event_id, **extra)  # type: ignore[operator]
        messages.append(refused.value.message)
    return messages


def test_another_owners_event_is_not_found_exactly_like_one_that_does_not_exist(
    db: Database, factory: Factory, writer: Principal
) -> None:
    stranger = factory.owner()
    theirs = create(db, principal_for(db, factory, stranger))
    assert (
        out_of_reach(db, writer, theirs["id"])
        == [f"No event {theirs['id']!r} in the calendars this key can reach."] * 3
    )
    assert (
        out_of_reach(db, writer, "ev_doesnotexist")
        == ["No event 'ev_doesnotexist' in the calendars this key can reach."] * 3
    )
    stranger_view = principal_for(db, factory, stranger)
    assert db.call(events.get_event, principal=stranger_view, event_id=theirs["id"]) == theirs
    assert titles(db, writer) == []


def test_a_one_calendar_key_does_not_see_the_owners_other_calendars(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    work = factory.calendar(owner, name="Work")
    private = create(db, writer, title="Private")
    mine = create(db, writer, title="Work thing", calendar_id=work)
    scoped = principal_for(db, factory, owner, calendar_id=work)
    assert out_of_reach(db, scoped, private["id"])
    assert db.call(events.get_event, principal=scoped, event_id=mine["id"]) == mine
    result = listed(db, scoped)
    assert [c["id"] for c in result["calendars"]] == [work]
    assert result["events"] == [mine]
    assert db.call(events.get_event, principal=writer, event_id=private["id"]) == private


# ---------------------------------------------------------------------------------------------
# Permission: a read-only key changes nothing, whatever it sends


def test_a_read_only_key_may_list_and_read(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    event = create(db, writer)
    reader = principal_for(db, factory, owner, permission="read")
    assert listed(db, reader)["events"] == [event]
    assert db.call(events.get_event, principal=reader, event_id=event["id"]) == event


@pytest.mark.parametrize(
    "body",
    [
        {"title": "Valid", "startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T10:00:00Z"},
        {"title": 5, "colour": "red"},
    ],
    ids=["valid-body", "invalid-body"],
)
async def test_a_read_only_key_is_refused_before_its_input_is_read(
    db: Database, factory: Factory, owner: Owner, writer: Principal, body: dict[str, Any]
) -> None:
    """The write operations declare that they need a write key; the gateway refuses a read
    key before their input is read (so the invalid body's errors never show)."""
    event = create(db, writer)
    reader = principal_for(db, factory, owner, permission="read")
    now = utcnow()
    attempts = (
        (operations.CREATE, {"body": body, "now": now}),
        (operations.CREATE, {"body": body, "now": now, "idempotency_key": "once"}),
        (operations.UPDATE, {"event_id": event["id"], "body": body, "now": now}),
    )
    for op, args in attempts:
        with pytest.raises(InsufficientScope) as refused:
            await db.run_connected(
                gateway.perform,
                principal=reader,
                ctx=call_context(op.name, "POST"),
                op=op,
                args=args,
            )
        assert refused.value.required_scope == "calendar:write"
    assert listed(db, writer)["events"] == [event]


# ---------------------------------------------------------------------------------------------
# Idempotent create


def create_once(
    db: Database, principal: Principal, idempotency_key: str, **fields: Any
) -> tuple[dict[str, Any], bool]:
    body = {
        "title": "Planning",
        "startsAt": "2026-03-02T09:00:00Z",
        "endsAt": "2026-03-02T10:00:00Z",
        **fields,
    }
    return db.call(
        events.create_event_from_input,
        principal=principal,
        body=body,
        now=utcnow(),
        idempotency_key=idempotency_key,
    )


def test_a_create_repeated_with_its_idempotency_key_returns_the_first_event(
    db: Database, writer: Principal
) -> None:
    first, replayed = create_once(db, writer, "order-42")
    again, replayed_again = create_once(db, writer, "order-42")
    assert (replayed, replayed_again) == (False, True)
    assert again == first
    assert listed(db, writer)["events"] == [first]


def test_an_idempotency_key_reused_with_another_body_is_refused(
    db: Database, writer: Principal
) -> None:
    first, _ = create_once(db, writer, "order-42")
    with pytest.raises(IdempotencyMismatch):
        create_once(db, writer, "order-42", title="Something else")
    assert listed(db, writer)["events"] == [first]


def test_idempotency_keys_belong_to_one_api_key(
    db: Database, factory: Factory, owner: Owner, writer: Principal
) -> None:
    first, _ = create_once(db, writer, "order-42")
    other_key = principal_for(db, factory, owner)
    second, replayed = create_once(db, other_key, "order-42")
    assert not replayed and second["id"] != first["id"]
    assert sorted(e["id"] for e in listed(db, writer)["events"]) == sorted(
        [first["id"], second["id"]]
    )


@pytest.mark.parametrize(
    "idempotency_key", ["", "x" * 256, "tab\there"], ids=["empty", "too-long", "control-char"]
)
def test_a_bad_idempotency_key_is_refused_and_nothing_is_created(
    db: Database, writer: Principal, idempotency_key: str
) -> None:
    with pytest.raises(ValidationFailed) as refused:
        create_once(db, writer, idempotency_key)
    assert fields_of(refused.value) == {"Idempotency-Key"}
    assert listed(db, writer)["events"] == []


def test_an_idempotent_create_with_bad_fields_is_not_remembered(
    db: Database, writer: Principal
) -> None:
    with pytest.raises(ValidationFailed):
        create_once(db, writer, "order-42", endsAt="2026-03-01T00:00:00Z")
    event, replayed = create_once(db, writer, "order-42")
    assert not replayed
    assert listed(db, writer)["events"] == [event]
