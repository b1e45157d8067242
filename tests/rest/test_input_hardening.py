"""Input a stranger controls is refused with a 400 naming it, the same on SQLite and
PostgreSQL: NUL characters anywhere (PostgreSQL cannot store them) and duplicate JSON keys."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from calendar_service.access import call_history as history
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer

NUL = "\x00"
NUL_MESSAGE = "must not contain NUL characters (U+0000)"


@pytest.fixture
def secret(factory: Factory) -> str:
    return factory.key(factory.owner())[1]


def _errors(response: httpx.Response) -> list[dict[str, str]]:
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "validation_error"
    return list(response.json()["errors"])


@pytest.mark.parametrize(
    "field", ["title", "description", "location", "calendar", "calendarId", "startsAt"]
)
def test_a_nul_character_in_any_field_of_a_new_event_is_refused_naming_the_field(
    api: httpx.Client, secret: str, field: str
) -> None:
    body = event_body(**{field: f"2026-03-02T09:00:00Z{NUL}"})
    answer = api.post(EVENTS, json=body, headers=bearer(secret))
    assert {"field": field, "message": NUL_MESSAGE} in _errors(answer)
    assert api.get(EVENTS, headers=bearer(secret)).json()["events"] == []


def test_a_nul_character_is_refused_with_the_other_bad_fields_at_once(
    api: httpx.Client, secret: str
) -> None:
    body = event_body(title=f"Plan{NUL}ning", endsAt="not a time", allDay="yes")
    fields = {e["field"] for e in _errors(api.post(EVENTS, json=body, headers=bearer(secret)))}
    assert fields == {"title", "endsAt", "allDay"}


def test_a_nul_character_in_a_field_name_is_refused(api: httpx.Client, secret: str) -> None:
    body = {**event_body(), f"note{NUL}": "x"}
    answer = api.post(EVENTS, json=body, headers=bearer(secret))
    assert [e["field"] for e in _errors(answer)] == ["note\\u0000"]


def test_a_nul_character_in_a_change_is_refused_and_changes_nothing(
    api: httpx.Client, secret: str
) -> None:
    event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    url = f"{EVENTS}/{event['id']}"
    answer = api.patch(url, json={"location": f"Room{NUL}1"}, headers=bearer(secret))
    assert _errors(answer) == [{"field": "location", "message": NUL_MESSAGE}]
    assert api.get(url, headers=bearer(secret)).json() == event


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_an_event_id_with_a_nul_character_is_refused(
    api: httpx.Client, secret: str, method: str
) -> None:
    event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    answer = api.request(
        method, f"{EVENTS}/{event['id']}%00", json={"title": "x"}, headers=bearer(secret)
    )
    assert _errors(answer) == [{"field": "eventId", "message": NUL_MESSAGE}]
    assert api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json() == event


@pytest.mark.parametrize("parameter", ["timeMin", "timeMax", "limit", "pageToken", "other"])
def test_a_query_parameter_with_a_nul_character_is_refused(
    api: httpx.Client, secret: str, parameter: str
) -> None:
    answer = api.get(EVENTS, params={parameter: f"2026{NUL}"}, headers=bearer(secret))
    assert _errors(answer) == [{"field": parameter, "message": NUL_MESSAGE}]


def test_a_page_token_carrying_a_nul_character_inside_is_refused(
    api: httpx.Client, secret: str
) -> None:
    for _ in range(2):
        api.post(EVENTS, json=event_body(), headers=bearer(secret))
    token = api.get(EVENTS, params={"limit": "1"}, headers=bearer(secret)).json()["nextPageToken"]
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    # A signed token is a MAC then a JSON [start, id, position]: put a NUL at the end of the id.
    at = raw.index(b'["')
    payload = json.loads(raw[at:])
    payload[1] += NUL
    forged = base64.urlsafe_b64encode(raw[:at] + json.dumps(payload).encode()).decode()
    forged = forged.rstrip("=")
    answer = api.get(EVENTS, params={"limit": "1", "pageToken": forged}, headers=bearer(secret))
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["field"] == "pageToken"


def test_a_refused_nul_is_recorded_in_the_keys_history_without_the_query(
    api: httpx.Client, factory: Factory
) -> None:
    key_id, secret = factory.key(factory.owner())
    api.get(EVENTS, params={"timeMin": NUL}, headers=bearer(secret))
    calls = factory.db.call(history.list_calls, key_id=key_id)
    assert [(c["status"], c["path"]) for c in calls] == [(400, EVENTS)]


def _raw(api: httpx.Client, method: str, url: str, body: str, secret: str) -> httpx.Response:
    headers = {**bearer(secret), "Content-Type": "application/json"}
    return api.request(method, url, content=body.encode(), headers=headers)


@pytest.mark.parametrize(
    "body",
    [
        '{"title": "Planning", "startsAt": "2026-03-02T09:00:00Z", "title": "Other",'
        ' "endsAt": "2026-03-02T10:00:00Z"}',
        # The same name spelt with an escape is the same key.
        '{"title": "Planning", "startsAt": "2026-03-02T09:00:00Z", "\\u0074itle" : "Other",'
        ' "endsAt": "2026-03-02T10:00:00Z"}',
    ],
)
def test_a_new_event_with_a_duplicate_json_key_is_refused_not_last_one_wins(
    api: httpx.Client, secret: str, body: str
) -> None:
    answer = _raw(api, "POST", EVENTS, body, secret)
    assert _errors(answer) == [{"field": "title", "message": "is given more than once"}]
    assert api.get(EVENTS, headers=bearer(secret)).json()["events"] == []


def test_a_change_with_a_duplicate_json_key_is_refused_and_changes_nothing(
    api: httpx.Client, secret: str
) -> None:
    event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    url = f"{EVENTS}/{event['id']}"
    answer = _raw(api, "PATCH", url, '{"location": "A", "location": "B"}', secret)
    assert _errors(answer) == [{"field": "location", "message": "is given more than once"}]
    assert api.get(url, headers=bearer(secret)).json() == event


def test_colons_and_repeated_names_in_values_are_not_duplicate_keys(
    api: httpx.Client, secret: str
) -> None:
    body = (
        '{"title": "title: \\"title\\": 10:30", "description": "{\\"title\\": 1}",'
        ' "location": "Room \\u003a 1", "startsAt": "2026-03-02T09:00:00Z",'
        ' "endsAt": "2026-03-02T10:00:00Z"}'
    )
    answer = _raw(api, "POST", EVENTS, body, secret)
    assert answer.status_code == 201, answer.text
    assert answer.json()["title"] == 'title: "title": 10:30'
    assert answer.json()["location"] == "Room : 1"


@pytest.mark.parametrize("depth", [300, 1010])
def test_a_deeply_nested_body_is_refused_with_a_400(
    api: httpx.Client, secret: str, depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    body = json.dumps(event_body())[:-1] + f', "extra": {nested}}}'
    answer = _raw(api, "POST", EVENTS, body, secret)
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "validation_error"
