"""A one-calendar key learns nothing about the owner's other calendars from an error."""

from __future__ import annotations

import httpx

from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


def test_a_mismatched_calendar_pair_never_names_a_calendar_outside_the_keys_reach(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    therapy = factory.calendar(owner, name="Therapy sessions")
    _, work_only = factory.key(owner, calendar_id=work)
    for pair in (
        {"calendarId": therapy, "calendar": "Work"},
        {"calendarId": work, "calendar": "Therapy sessions"},
    ):
        answer = api.post(EVENTS, json=event_body(**pair), headers=bearer(work_only))
        assert answer.status_code == 401, answer.text
        assert answer.json()["code"] == "insufficient_scope"
        assert "Therapy" not in answer.text
        assert "Личное" not in answer.text


def test_a_one_calendar_key_cannot_tell_whether_another_calendar_name_exists(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    factory.calendar(owner, name="Therapy sessions")
    _, work_only = factory.key(owner, calendar_id=work)

    def answer(name: str) -> tuple[int, str, str]:
        response = api.post(EVENTS, json=event_body(calendar=name), headers=bearer(work_only))
        problem = response.json()
        return response.status_code, problem["code"], problem["detail"]

    assert answer("Therapy sessions") == answer("No such calendar") == answer("Личное")
    assert answer("Therapy sessions")[0] == 401
