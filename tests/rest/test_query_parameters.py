"""Query parameters (issue 24 item 3): an operation refuses those it does not take, naming
each, instead of answering for every calendar and all time; the list's ``calendarIds``
narrows it to some calendars. The OAuth endpoints and the feed still ignore what they do not
know."""

from __future__ import annotations

from typing import Any

import httpx

from calendar_service.access import call_history as history
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS, create_event, event_body
from tests.rest.ical.support import fetch, make_feed
from tests.support import Factory, bearer

WINDOW = {"timeMin": "2026-03-01T00:00:00Z", "timeMax": "2026-04-01T00:00:00Z"}


def _unknown(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "unknown_parameter"
    return {e["field"]: e["message"] for e in problem["errors"]}


def test_the_list_refuses_parameters_it_does_not_take_naming_each_and_what_was_meant(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    create_event(api, secret)
    query = "calendarId=cal_x&calendar=Work&timemin=2030-01-01&timeMin=2026-01-01&timemin=x"
    answer = api.get(f"{EVENTS}?{query}", headers=bearer(secret))
    errors = _unknown(answer)
    assert list(errors) == ["calendarId", "calendar", "timemin"]
    assert "did you mean calendarIds?" in errors["calendarId"]
    assert "did you mean calendarIds?" in errors["calendar"]
    assert "did you mean timeMin?" in errors["timemin"]
    assert "calendarId, calendar, timemin" in answer.json()["detail"]
    # The refusal is the key's call, as a bad body is.
    assert db.call(history.list_calls, key_id=key_id)[0]["status"] == 400


def test_every_operation_refuses_an_unknown_parameter_and_takes_its_own(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    event = create_event(api, secret)
    item = f"{EVENTS}/{event['id']}"
    headers = bearer(secret)
    ics = {**headers, "Content-Type": "text/calendar"}
    calls = [
        ("GET", EVENTS, {}),
        ("POST", EVENTS, {"json": event_body()}),
        ("GET", item, {}),
        ("PATCH", item, {"json": {"title": "x"}}),
        ("DELETE", item, {}),
        ("POST", "/api/v1/calendar/freeBusy", {"json": WINDOW}),
        ("POST", "/api/v1/calendar/freeTime", {"json": {**WINDOW, "durationMinutes": 30}}),
        ("POST", f"{EVENTS}/import", {"content": b"", "headers": ics}),
    ]
    for method, path, options in calls:
        options = {"headers": headers, **options}
        answer = api.request(method, path, params={"scope": "all", "x": "1"}, **options)
        errors = _unknown(answer)
        taken = method in ("PATCH", "DELETE")
        assert list(errors) == (["x"] if taken else ["scope", "x"]), (method, path)
        if not taken:
            assert "which takes none" in errors["x"] or "it takes" in errors["x"]


def test_a_key_in_the_url_is_still_refused_as_such_before_unknown_parameters(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    answer = api.get(EVENTS, params={"api_key": secret, "calendar": "Work"})
    assert answer.status_code == 400
    assert answer.json()["code"] == "api_key_in_url"


def test_the_feed_and_the_oauth_endpoints_ignore_parameters_they_do_not_know(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    owner = factory.owner()
    feed = make_feed(db, config, owner, owner.default_calendar_id)
    assert fetch(feed["url"] + "?calendar-app=1&x=y").status_code == 200
    metadata = api.get("/.well-known/oauth-authorization-server", params={"x": "1"})
    assert metadata.status_code == 200
    register = api.post(
        "/register?x=1",
        json={"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"},
    )
    assert register.status_code == 201, register.text


def _titles(answer: httpx.Response) -> tuple[list[str], list[str]]:
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return [c["name"] for c in body["calendars"]], [e["title"] for e in body["events"]]


def test_calendar_ids_narrow_the_list_repeated_or_comma_separated_by_id_or_name(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    factory.calendar(owner, name="Sport")
    _, secret = factory.key(owner)
    headers = bearer(secret)
    for name, day in (("Личное", 2), ("Work", 3), ("Sport", 4)):
        starts = f"2026-03-0{day}T09:00:00Z"
        ends = f"2026-03-0{day}T10:00:00Z"
        create_event(api, secret, title=name, calendar=name, startsAt=starts, endsAt=ends)
    everything = _titles(api.get(EVENTS, params=WINDOW, headers=headers))
    assert everything == (["Личное", "Sport", "Work"], ["Личное", "Work", "Sport"])
    for chosen in (
        [("calendarIds", work), ("calendarIds", "Sport")],
        [("calendarIds", f"{work},Sport")],
        [("calendarIds", "Sport , Work")],
    ):
        answer = api.get(EVENTS, params=[*WINDOW.items(), *chosen], headers=headers)
        assert _titles(answer) == (["Sport", "Work"], ["Work", "Sport"]), chosen
    missing = api.get(EVENTS, params={"calendarIds": "Work,Holidays"}, headers=headers)
    assert missing.status_code == 400
    assert missing.json()["errors"][0]["field"] == "calendarIds"
    assert "'Holidays'" in missing.json()["errors"][0]["message"]
    assert api.get(EVENTS, params={"calendarIds": ""}, headers=headers).status_code == 400


def test_a_one_calendar_key_naming_another_calendar_in_calendar_ids_gets_401(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, secret = factory.key(owner, calendar_id=work)
    assert _titles(api.get(EVENTS, params={"calendarIds": "Work"}, headers=bearer(secret)))[0] == [
        "Work"
    ]
    for other in ("Личное", owner.default_calendar_id, "No such"):
        answer = api.get(EVENTS, params={"calendarIds": f"Work,{other}"}, headers=bearer(secret))
        assert answer.status_code == 401, answer.text
        assert answer.json()["code"] == "insufficient_scope"
        assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]


def test_a_page_token_is_refused_with_other_calendar_ids(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    factory.calendar(owner, name="Work")
    _, secret = factory.key(owner)
    headers = bearer(secret)
    for day in (2, 3):
        starts, ends = f"2026-03-0{day}T09:00:00Z", f"2026-03-0{day}T10:00:00Z"
        create_event(api, secret, calendar="Work", startsAt=starts, endsAt=ends)
    narrowed = {**WINDOW, "calendarIds": "Work", "limit": "1"}
    token = api.get(EVENTS, params=narrowed, headers=headers).json()["nextPageToken"]
    again = api.get(EVENTS, params={**narrowed, "pageToken": token}, headers=headers)
    assert again.status_code == 200 and len(again.json()["events"]) == 1
    widened = {**WINDOW, "limit": "1", "pageToken": token}
    refused = api.get(EVENTS, params=widened, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "pageToken"


def test_the_query_string_reads_as_starlette_reads_it() -> None:
    """``asgi.context.Query`` (the REST front's own reading of the query string, cheaper than
    Starlette's ``QueryParams``) gives the same names and values, in the same order."""
    from starlette.datastructures import QueryParams

    from calendar_service.asgi.context import Query

    raws = [
        b"",
        b"timeMin=2026-03-01T00%3A00%3A00Z&timeMax=2026-04-01T00:00:00%2B02:00&limit=5",
        b"a=1&a=2&b&c=&&d=%zz&e=%E2%82%AC&f=a+b%2Bc&g%20h=i=j&%6Bey=x&=empty",
        b"calendarIds=Work,Home&calendarIds=%C3%A9t%C3%A9&x=%FF%FE&y=\xe9",
        b"q=%00&r=100%25&s=%",
    ]
    for raw in raws:
        ours, theirs = Query(raw), QueryParams(raw)
        assert ours.items == theirs.multi_items(), raw
        assert ours.last == dict(theirs), raw
        assert ours.getlist("a") == theirs.getlist("a"), raw
