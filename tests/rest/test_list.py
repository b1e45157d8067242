"""GET /api/v1/calendar/events: the overlap window, open bounds, ordering and pagination."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


@pytest.fixture
def secret(factory: Factory) -> str:
    return factory.key(factory.owner())[1]


def _create(api: httpx.Client, secret: str, title: str, start: str, end: str) -> dict[str, Any]:
    response = api.post(
        EVENTS, json=event_body(title=title, startsAt=start, endsAt=end), headers=bearer(secret)
    )
    assert response.status_code == 201, response.text
    return response.json()


def _titles(api: httpx.Client, secret: str, **params: str) -> list[str]:
    response = api.get(EVENTS, params=params, headers=bearer(secret))
    assert response.status_code == 200, response.text
    return [e["title"] for e in response.json()["events"]]


def test_events_overlapping_the_window_are_returned_and_touching_ones_are_not(
    api: httpx.Client, secret: str
) -> None:
    _create(api, secret, "ends at timeMin", "2026-03-02T08:00:00Z", "2026-03-02T09:00:00Z")
    _create(api, secret, "straddles timeMin", "2026-03-02T08:30:00Z", "2026-03-02T09:30:00Z")
    _create(api, secret, "inside", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z")
    _create(api, secret, "zero-length at timeMin", "2026-03-02T09:00:00Z", "2026-03-02T09:00:00Z")
    _create(api, secret, "straddles timeMax", "2026-03-02T11:30:00Z", "2026-03-02T12:30:00Z")
    _create(api, secret, "starts at timeMax", "2026-03-02T12:00:00Z", "2026-03-02T13:00:00Z")
    _create(api, secret, "covers everything", "2026-02-01T00:00:00Z", "2026-04-01T00:00:00Z")
    assert _titles(api, secret, timeMin="2026-03-02T09:00:00Z", timeMax="2026-03-02T12:00:00Z") == [
        "covers everything",
        "straddles timeMin",
        "zero-length at timeMin",
        "inside",
        "straddles timeMax",
    ]


def test_an_omitted_bound_is_unbounded(api: httpx.Client, secret: str) -> None:
    _create(api, secret, "2020", "2020-01-01T00:00:00Z", "2020-01-01T01:00:00Z")
    _create(api, secret, "2030", "2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z")
    assert _titles(api, secret) == ["2020", "2030"]
    assert _titles(api, secret, timeMin="2025-01-01T00:00:00Z") == ["2030"]
    assert _titles(api, secret, timeMax="2025-01-01T00:00:00Z") == ["2020"]


def test_bounds_take_offsets_and_dates_and_naive_ones_use_the_calendar_zone(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner(time_zone="Asia/Tokyo")
    _, secret = factory.key(owner)
    _create(api, secret, "tokyo morning", "2026-03-02T08:00", "2026-03-02T09:00")
    assert _titles(api, secret, timeMin="2026-03-02", timeMax="2026-03-03") == ["tokyo morning"]
    assert _titles(api, secret, timeMin="2026-03-02T00:00:00Z") == []
    assert _titles(
        api, secret, timeMin="2026-03-01T23:00:00Z", timeMax="2026-03-02T00:30:00+01:00"
    ) == ["tokyo morning"]


def test_a_long_event_far_before_the_window_is_still_found(api: httpx.Client, secret: str) -> None:
    _create(api, secret, "sabbatical", "2025-01-01T00:00:00Z", "2027-01-01T00:00:00Z")
    for day in range(1, 4):
        _create(api, secret, f"day {day}", f"2026-06-0{day}T09:00:00Z", f"2026-06-0{day}T10:00:00Z")
    assert _titles(api, secret, timeMin="2026-06-02T00:00:00Z", timeMax="2026-06-03T00:00:00Z") == [
        "sabbatical",
        "day 2",
    ]


def test_pagination_returns_every_event_exactly_once_in_order(
    api: httpx.Client, secret: str
) -> None:
    created = []
    for i in range(23):  # several share a start time, so the id breaks ties
        start = f"2026-05-{1 + i // 3:02d}T09:00:00Z"
        created.append(_create(api, secret, f"e{i}", start, start))
    seen: list[dict[str, Any]] = []
    params: dict[str, str] = {"limit": "5", "timeMin": "2026-01-01T00:00:00Z"}
    pages = 0
    while True:
        body = api.get(EVENTS, params=params, headers=bearer(secret)).json()
        pages += 1
        assert len(body["events"]) <= 5
        seen.extend(body["events"])
        if "nextPageToken" not in body:
            break
        params["pageToken"] = body["nextPageToken"]
    assert pages == 5
    assert sorted(e["id"] for e in seen) == sorted(e["id"] for e in created)
    assert len({e["id"] for e in seen}) == 23
    keys = [(e["startsAt"], e["id"]) for e in seen]
    assert keys == sorted(keys)


def test_a_page_token_only_works_with_the_query_that_made_it(
    api: httpx.Client, secret: str
) -> None:
    for i in range(3):
        _create(api, secret, f"e{i}", "2026-05-01T09:00:00Z", "2026-05-01T10:00:00Z")
    token = api.get(EVENTS, params={"limit": "1"}, headers=bearer(secret)).json()["nextPageToken"]
    other = api.get(
        EVENTS,
        params={"limit": "1", "pageToken": token, "timeMin": "2026-01-01T00:00:00Z"},
        headers=bearer(secret),
    )
    assert other.status_code == 400
    assert other.json()["errors"][0]["field"] == "pageToken"
    garbage = api.get(EVENTS, params={"pageToken": "!!!"}, headers=bearer(secret))
    assert garbage.status_code == 400


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"timeMin": "yesterday"}, "timeMin"),
        ({"timeMax": "2026-13-01T00:00:00Z"}, "timeMax"),
        ({"timeMin": "2026-03-02T00:00:00Z", "timeMax": "2026-03-01T00:00:00Z"}, "timeMax"),
        ({"limit": "0"}, "limit"),
        ({"limit": "2501"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "-1"}, "limit"),
    ],
)
def test_bad_list_parameters_are_refused_naming_the_parameter(
    api: httpx.Client, secret: str, params: dict[str, str], field: str
) -> None:
    response = api.get(EVENTS, params=params, headers=bearer(secret))
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == [field]


def test_the_list_carries_rate_limit_headers_and_is_not_cached(
    api: httpx.Client, secret: str
) -> None:
    response = api.get(EVENTS, headers=bearer(secret))
    assert response.headers["cache-control"] == "no-store"
    assert int(response.headers["ratelimit-remaining"]) < int(response.headers["ratelimit-limit"])
