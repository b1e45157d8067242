"""One-calendar keys stay in their calendar; owners never see each other's data."""

from __future__ import annotations

import httpx

from tests.rest.conftest import EVENTS, event_body, with_work
from tests.support import Factory, bearer


def test_a_one_calendar_key_lists_only_its_calendar_and_its_events(
    api: httpx.Client, factory: Factory
) -> None:
    owner, work, everything = with_work(factory)
    _, work_only = factory.key(owner, permission="read", calendar_id=work)
    api.post(EVENTS, json=event_body(title="private"), headers=bearer(everything))
    api.post(EVENTS, json=event_body(title="work", calendarId=work), headers=bearer(everything))
    listed = api.get(EVENTS, headers=bearer(work_only)).json()
    assert [c["id"] for c in listed["calendars"]] == [work]
    assert [e["title"] for e in listed["events"]] == ["work"]
    both = api.get(EVENTS, headers=bearer(everything)).json()
    assert sorted(e["title"] for e in both["events"]) == ["private", "work"]
    assert len(both["calendars"]) == 2


def test_a_one_calendar_key_cannot_write_to_another_calendar_by_id_or_by_name(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, work_only = factory.key(owner, calendar_id=work)
    by_id = api.post(
        EVENTS, json=event_body(calendarId=owner.default_calendar_id), headers=bearer(work_only)
    )
    assert by_id.status_code == 401
    assert by_id.json()["code"] == "insufficient_scope"
    assert 'error="insufficient_scope"' in by_id.headers["www-authenticate"]
    by_name = api.post(EVENTS, json=event_body(calendar="Личное"), headers=bearer(work_only))
    assert by_name.status_code == 401
    assert by_name.json()["code"] == "insufficient_scope"
    default = api.post(EVENTS, json=event_body(), headers=bearer(work_only))
    assert default.status_code == 201
    assert default.json()["calendarId"] == work


def test_a_one_calendar_key_cannot_read_change_or_delete_another_calendars_event(
    api: httpx.Client, factory: Factory
) -> None:
    owner, work, everything = with_work(factory)
    _, work_only = factory.key(owner, calendar_id=work)
    private = api.post(EVENTS, json=event_body(), headers=bearer(everything)).json()
    url = f"{EVENTS}/{private['id']}"
    for response in (
        api.get(url, headers=bearer(work_only)),
        api.patch(url, json={"title": "hijacked"}, headers=bearer(work_only)),
        api.delete(url, headers=bearer(work_only)),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"
    assert api.get(url, headers=bearer(everything)).json()["title"] == "Planning"


def test_owners_are_isolated_from_each_other(api: httpx.Client, factory: Factory) -> None:
    alice, bob = factory.owner(), factory.owner()
    _, alice_key = factory.key(alice)
    _, bob_key = factory.key(bob)
    event = api.post(EVENTS, json=event_body(title="alice only"), headers=bearer(alice_key))
    event_id = event.json()["id"]
    listed = api.get(EVENTS, headers=bearer(bob_key)).json()
    assert listed["events"] == []
    assert [c["id"] for c in listed["calendars"]] == [bob.default_calendar_id]
    assert api.get(f"{EVENTS}/{event_id}", headers=bearer(bob_key)).status_code == 404
    assert api.delete(f"{EVENTS}/{event_id}", headers=bearer(bob_key)).status_code == 404
    into_alice = api.post(
        EVENTS, json=event_body(calendarId=alice.default_calendar_id), headers=bearer(bob_key)
    )
    assert into_alice.status_code == 400
    assert into_alice.json()["errors"][0]["field"] == "calendarId"
    assert api.get(f"{EVENTS}/{event_id}", headers=bearer(alice_key)).status_code == 200
