"""``GET /calendar/events?syncToken=…`` over real HTTP: the changes since the last page of a
list, once each, in the key's calendars only; 410 for an expired token, 400 for a tampered one
or a window; recorded in the call history like any list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from calendar_service.access import call_history as history
from calendar_service.access.keys import Principal
from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.calendar.events import sync
from calendar_service.platform import service_secrets
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.rest.conftest import EVENTS, create_event, with_work
from tests.rest.recurrence_support import watch
from tests.support import Factory, RunningServer, bearer, queued

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

WEEKLY = {
    "title": "Weekly",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T10:00:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY"],
}


def _get(api: httpx.Client, secret: str, **params: str) -> httpx.Response:
    return api.get(EVENTS, params=params, headers=bearer(secret))


def _token(api: httpx.Client, secret: str) -> str:
    """A full list of series, page by page; its last page's nextSyncToken."""
    params = {"singleEvents": "false", "limit": "2"}
    while True:
        page = _get(api, secret, **params)
        assert page.status_code == 200, page.text
        body = page.json()
        if "nextPageToken" not in body:
            return str(body["nextSyncToken"])
        assert "nextSyncToken" not in body
        params["pageToken"] = body["nextPageToken"]


def _changes(api: httpx.Client, secret: str, token: str) -> tuple[list[dict[str, Any]], str]:
    """Every page of a sync; its events and the new token."""
    found: list[dict[str, Any]] = []
    params = {"syncToken": token, "limit": "2"}
    while True:
        page = _get(api, secret, **params)
        assert page.status_code == 200, page.text
        body = page.json()
        found.extend(body["events"])
        if "nextPageToken" not in body:
            return found, str(body["nextSyncToken"])
        params["pageToken"] = body["nextPageToken"]


def test_each_kind_of_change_comes_back_once(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    token = _token(api, secret)
    log: list[list[dict[str, Any]]] = []

    def step() -> list[dict[str, Any]]:
        nonlocal token
        found, token = _changes(api, secret, token)
        again, token = _changes(api, secret, token)
        assert again == []
        log.append(found)
        return found

    single = create_event(api, secret, title="One")
    assert step() == [single]
    patched = api.patch(f"{EVENTS}/{single['id']}", json={"title": "Two"}, headers=bearer(secret))
    assert step() == [patched.json()]
    series = api.post(EVENTS, json=WEEKLY, headers=bearer(secret)).json()
    assert step() == [series]
    occurrence = f"{series['id']}_20260309T090000Z"
    assert api.delete(f"{EVENTS}/{occurrence}", headers=bearer(secret)).status_code == 204
    assert step() == [
        {
            "id": occurrence,
            "status": "cancelled",
            "recurringEventId": series["id"],
            "originalStartsAt": "2026-03-09T09:00:00Z",
        }
    ]
    assert api.delete(f"{EVENTS}/{series['id']}", headers=bearer(secret)).status_code == 204
    assert sorted(e["id"] for e in step()) == sorted([series["id"], occurrence])
    assert all(e["status"] == "cancelled" and len(e) == 2 for e in log[-1])
    assert api.delete(f"{EVENTS}/{single['id']}", headers=bearer(secret)).status_code == 204
    assert step() == [{"id": single["id"], "status": "cancelled"}]


def test_a_one_calendar_key_sees_only_its_calendars_changes(
    api: httpx.Client, factory: Factory
) -> None:
    setup = with_work(factory)
    _, narrow = factory.key(setup.owner, calendar_id=setup.owner.default_calendar_id)
    token = _token(api, narrow)
    elsewhere = create_event(api, setup.everything, calendarId=setup.work, title="Work")
    api.delete(f"{EVENTS}/{elsewhere['id']}", headers=bearer(setup.everything))
    mine = create_event(api, setup.everything, title="Mine")
    found, _ = _changes(api, narrow, token)
    assert [e["id"] for e in found] == [mine["id"]]
    # The wide key's token is refused to the narrow key (it is bound to the key's reach).
    wide_token = _token(api, setup.everything)
    refused = _get(api, narrow, syncToken=wide_token)
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "syncToken"


def test_an_expired_token_is_410_and_says_to_list_again(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    key = db.call(service_secrets.page_token_key, now=utcnow())
    principal = Principal(key_id, owner.id, "read", None, utcnow())
    old = int((utcnow() - timedelta(days=31)).timestamp())
    token = sync.encode_sync_token(key, principal, sync.Position(1, 1, (), old))
    response = _get(api, secret, syncToken=token)
    assert response.status_code == 410, response.text
    problem = response.json()
    assert problem["code"] == "sync_token_expired"
    assert "without syncToken" in problem["detail"]
    assert response.headers["content-type"].startswith("application/problem+json")


def test_a_tampered_token_or_a_window_is_400(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    token = _token(api, secret)
    for bad in (token[:-1] + ("A" if token[-1] != "A" else "B"), "x", "~" + token):
        response = _get(api, secret, syncToken=bad)
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["errors"][0]["field"] in {"syncToken", "pageToken"}
    for bound in ("timeMin", "timeMax"):
        response = _get(api, secret, syncToken=token, **{bound: "2026-03-01T00:00:00Z"})
        assert response.status_code == 400
        assert response.json()["errors"][0]["field"] == bound


def test_a_sync_is_in_the_call_history_without_its_token(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    key_id, secret = factory.key(factory.owner())
    token = _token(api, secret)
    assert _get(api, secret, syncToken=token).status_code == 200
    calls = db.call(history.list_calls, key_id=key_id)
    assert calls[0]["operation"] == "listCalendarEvents"
    assert calls[0]["path"] == EVENTS and calls[0]["status"] == 200
    assert all(token not in str(call) for call in calls)


def test_the_mirror_example_catches_up_with_every_change(
    api: httpx.Client, factory: Factory, server: RunningServer, tmp_path: Path
) -> None:
    """examples/sync_mirror.py --once: the first run lists, the next ones apply the changes."""
    _, secret = factory.key(factory.owner())
    state = tmp_path / "mirror.json"
    env = {
        **os.environ,
        "CALENDAR_BASE_URL": server.url,
        "CALENDAR_API_KEY": secret,
        "MIRROR_FILE": str(state),
    }

    def run() -> str:
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / "sync_mirror.py"), "--once"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    kept = create_event(api, secret, title="Kept")
    assert run() == "1 changes; 1 events in the copy\n"
    gone = create_event(api, secret, title="Gone")
    api.delete(f"{EVENTS}/{gone['id']}", headers=bearer(secret))
    series = api.post(EVENTS, json=WEEKLY, headers=bearer(secret)).json()
    assert run() == "2 changes; 2 events in the copy\n"
    copy = json.loads(state.read_text())["events"]
    assert copy == {kept["id"]: kept, series["id"]: series}


def test_a_deleted_calendars_events_come_back_as_tombstones_with_webhooks_and_its_keys_stop(
    api: httpx.Client, db: Database, factory: Factory
) -> None:
    owner, work, everything = with_work(factory)
    watch(db, owner)
    _, one = factory.key(owner, calendar_id=work)
    _, elsewhere = factory.key(owner, calendar_id=owner.default_calendar_id)
    token, other_token = _token(api, everything), _token(api, elsewhere)
    single = create_event(api, one, title="Single")
    series = create_event(api, one, **WEEKLY)
    before = len(queued(db, owner))
    for _ in range(10):
        step = db.call(
            calendar_changes.delete_calendar_step, user_id=owner.id, calendar_id=work, now=utcnow()
        )
        if step["done"]:
            break
    assert step["done"]
    found, token = _changes(api, everything, token)
    assert sorted(e["id"] for e in found) == sorted([single["id"], series["id"]])
    assert {e["status"] for e in found} == {"cancelled"}
    assert _changes(api, everything, token)[0] == []
    assert _changes(api, elsewhere, other_token)[0] == []  # never reached that calendar
    sent = queued(db, owner)[before:]
    assert sorted((kind, event["id"]) for kind, event in sent) == sorted(
        [("calendar.event.deleted", single["id"]), ("calendar.event.deleted", series["id"])]
    )
    refused = _get(api, one)
    assert refused.status_code == 401
    assert refused.json()["code"] == "revoked_api_key"
    assert _get(api, everything).status_code == 200
