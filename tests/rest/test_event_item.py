"""GET, PATCH and DELETE /api/v1/calendar/events/{eventId}."""

from __future__ import annotations

import httpx

from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


def test_patch_changes_only_the_fields_sent(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    event = api.post(EVENTS, json=event_body(location="Room 1"), headers=bearer(secret)).json()
    url = f"{EVENTS}/{event['id']}"
    patched = api.patch(url, json={"title": "Renamed", "location": None}, headers=bearer(secret))
    assert patched.status_code == 200
    body = patched.json()
    assert (body["title"], body["location"], body["startsAt"]) == (
        "Renamed",
        None,
        event["startsAt"],
    )
    assert body["updatedAt"] >= event["updatedAt"]
    assert api.get(url, headers=bearer(secret)).json() == body


def test_patch_validates_the_resulting_times(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    url = f"{EVENTS}/{event['id']}"
    before = api.patch(url, json={"endsAt": "2026-03-02T08:00:00Z"}, headers=bearer(secret))
    assert before.status_code == 400
    assert before.json()["errors"][0]["field"] == "endsAt"
    nulls = api.patch(url, json={"title": None, "startsAt": None}, headers=bearer(secret))
    assert {e["field"] for e in nulls.json()["errors"]} == {"title", "startsAt"}
    unknown = api.patch(url, json={"calendarId": "cal_x"}, headers=bearer(secret))
    assert unknown.json()["errors"] == [{"field": "calendarId", "message": "is not a known field"}]
    assert api.get(url, headers=bearer(secret)).json() == event


def test_patch_can_turn_an_event_into_an_all_day_event(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    url = f"{EVENTS}/{event['id']}"
    patched = api.patch(
        url,
        json={"allDay": True, "startsAt": "2026-03-02", "endsAt": "2026-03-03"},
        headers=bearer(secret),
    ).json()
    assert (patched["allDay"], patched["startsAt"], patched["endsAt"]) == (
        True,
        "2026-03-02T00:00:00Z",
        "2026-03-03T00:00:00Z",
    )
    moved = api.patch(
        url, json={"startsAt": "2026-03-05", "endsAt": "2026-03-05"}, headers=bearer(secret)
    ).json()
    assert (moved["startsAt"], moved["endsAt"]) == ("2026-03-05T00:00:00Z", "2026-03-06T00:00:00Z")


def test_delete_answers_204_and_the_event_is_gone(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    url = f"{EVENTS}/{event['id']}"
    deleted = api.delete(url, headers=bearer(secret))
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert api.get(url, headers=bearer(secret)).status_code == 404
    assert api.delete(url, headers=bearer(secret)).status_code == 404
    assert api.get(EVENTS, headers=bearer(secret)).json()["events"] == []


def test_unknown_routes_and_methods_get_problem_details(api: httpx.Client) -> None:
    missing = api.get("/api/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    wrong = api.put(EVENTS)
    assert wrong.status_code == 405
    assert wrong.json()["code"] == "method_not_allowed"
