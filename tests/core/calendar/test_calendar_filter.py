"""The list narrowed to some calendars (``list_events(calendar_ids=...)``, issue 24 item 3):
ids or names, one value or several (comma-separated too), within what the key reaches first;
its page and sync tokens are bound to the calendars it names."""

from __future__ import annotations

from typing import Any

import pytest

from calendar_service.platform.db import Database
from calendar_service.platform.errors import InsufficientScope, ValidationFailed
from tests.core.calendar.events.test_events import create, listed, principal_for
from tests.support import Factory

WINDOW = {"time_min": "2026-03-01T00:00:00Z", "time_max": "2026-04-01T00:00:00Z"}


def _three(db: Database, factory: Factory) -> tuple[Any, dict[str, str]]:
    """An all-calendars principal of an owner with three calendars, one event in each."""
    owner = factory.owner()
    ids = {
        "Личное": owner.default_calendar_id,
        "Work": factory.calendar(owner, name="Work"),
        "Team, North": factory.calendar(owner, name="Team, North"),
    }
    principal = principal_for(db, factory, owner)
    for day, (name, calendar_id) in enumerate(ids.items(), start=2):
        create(
            db,
            principal,
            title=name,
            calendar_id=calendar_id,
            starts_at=f"2026-03-0{day}T09:00:00Z",
            ends_at=f"2026-03-0{day}T10:00:00Z",
        )
    return principal, ids


def _names(answer: dict[str, Any]) -> tuple[list[str], list[str]]:
    return [c["name"] for c in answer["calendars"]], [e["title"] for e in answer["events"]]


def test_the_list_narrows_to_the_calendars_named_by_id_or_by_name(
    db: Database, factory: Factory
) -> None:
    principal, ids = _three(db, factory)
    assert _names(listed(db, principal, **WINDOW))[1] == ["Личное", "Work", "Team, North"]
    for wanted in (
        [ids["Work"]],
        ["Work"],
        [" Work "],
        ids["Work"],
        f"{ids['Work']},Work",
    ):
        answer = listed(db, principal, calendar_ids=wanted, **WINDOW)
        assert _names(answer) == (["Work"], ["Work"]), wanted
    both = listed(db, principal, calendar_ids=[f"Work, {ids['Личное']}"], **WINDOW)
    assert _names(both) == (["Личное", "Work"], ["Личное", "Work"])
    # A name with a comma in it, sent as a value of its own.
    comma = listed(db, principal, calendar_ids=["Team, North", "Work"], **WINDOW)
    assert _names(comma)[1] == ["Work", "Team, North"]


def test_a_calendar_that_does_not_exist_is_a_400_naming_it(db: Database, factory: Factory) -> None:
    principal, _ = _three(db, factory)
    with pytest.raises(ValidationFailed) as refused:
        listed(db, principal, calendar_ids=["Work,Holidays", "cal_nope"], **WINDOW)
    assert [e["field"] for e in refused.value.errors] == ["calendarIds"]
    message = refused.value.errors[0]["message"]
    assert "'Holidays'" in message and "'cal_nope'" in message and "Work" not in message
    for empty in ([""], [" "], ["Work,"], []):
        with pytest.raises(ValidationFailed):
            listed(db, principal, calendar_ids=empty, **WINDOW)


def test_a_one_calendar_key_naming_another_calendar_is_refused_insufficient_scope(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = principal_for(db, factory, owner, calendar_id=work)
    assert _names(listed(db, principal, calendar_ids=["Work"]))[0] == ["Work"]
    assert _names(listed(db, principal, calendar_ids=[work]))[0] == ["Work"]
    # Whether the other calendar exists or not, the same answer: the key may not learn it.
    answers = []
    for other in (owner.default_calendar_id, "Личное", "No such calendar", "cal_nope"):
        with pytest.raises(InsufficientScope) as refused:
            listed(db, principal, calendar_ids=["Work", other])
        answers.append(refused.value.message)
    assert len(set(answers)) == 1 and "Личное" not in answers[0]


def test_a_page_token_is_good_only_with_the_calendars_it_was_made_for(
    db: Database, factory: Factory
) -> None:
    principal, ids = _three(db, factory)
    work = [ids["Work"], "Team, North"]
    first = listed(db, principal, calendar_ids=work, limit=1, **WINDOW)
    assert _names(first)[1] == ["Work"]
    token = first["nextPageToken"]
    # The same calendars named another way: the same query.
    same = ["Work", ids["Team, North"]]
    following = listed(db, principal, calendar_ids=same, limit=1, page_token=token, **WINDOW)
    assert _names(following)[1] == ["Team, North"]
    for other in (None, [ids["Work"]], [*work, "Личное"]):
        with pytest.raises(ValidationFailed) as refused:
            listed(db, principal, calendar_ids=other, limit=1, page_token=token, **WINDOW)
        assert refused.value.errors[0]["field"] == "pageToken"


def test_a_sync_token_of_a_narrowed_list_syncs_those_calendars_and_only_with_them(
    db: Database, factory: Factory
) -> None:
    principal, ids = _three(db, factory)
    token = listed(db, principal, calendar_ids=["Work"])["nextSyncToken"]
    unfiltered = listed(db, principal)["nextSyncToken"]
    for name, calendar_id in ids.items():
        create(db, principal, title=f"new in {name}", calendar_id=calendar_id)
    changes = listed(db, principal, calendar_ids=[ids["Work"]], sync_token=token)
    assert _names(changes) == (["Work"], ["new in Work"])
    everything = listed(db, principal, sync_token=unfiltered)
    assert len(everything["events"]) == 3
    for other in (None, ["Личное"]):
        with pytest.raises(ValidationFailed) as refused:
            listed(db, principal, calendar_ids=other, sync_token=token)
        assert refused.value.errors[0]["field"] == "syncToken"
    with pytest.raises(ValidationFailed):
        listed(db, principal, calendar_ids=["Work"], sync_token=unfiltered)
