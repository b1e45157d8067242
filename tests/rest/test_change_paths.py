"""Every path that changes an event leaves exactly one change, and says who, through what, what
the event was before and after, and which request: REST (each scope of a change and a
deletion), MCP, the settings pages, the CLI, an ``.ics`` import and an undo, walked in turn on
one owner's calendar (docs/changes.md, "What is recorded")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.governance.change_list import list_changes
from calendar_service.platform.config import Config
from tests.account.conftest import event_form, signed_in
from tests.cli.test_cli import cli_json
from tests.mcp_tools.clients import connect
from tests.rest.conftest import EVENTS
from tests.support import Factory, Owner, RunningServer, bearer

ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//EN\r\nBEGIN:VEVENT\r\n"
    "UID:{uid}\r\nDTSTAMP:20260301T120000Z\r\nDTSTART:20260305T090000Z\r\n"
    "DTEND:20260305T100000Z\r\nSUMMARY:{title}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
WEEKLY = {
    "title": "Stand-up",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T09:15:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=6"],
}


@dataclass
class Expected:
    """What one path's change must say; ``None`` fields are not checked (``before`` and
    ``after`` are checked field by field, but ``updatedAt``, when given as dicts)."""

    kind: str
    actor: str  # key | owner
    transport: str
    event_id: str
    before: Any = None
    after: Any = None
    request_id: str | None = None  # None: the call history's (a key's call) is compared
    extra: dict[str, Any] | None = None


@dataclass
class World:
    api: httpx.Client
    server: RunningServer
    factory: Factory
    config: Config
    owner: Owner
    key_id: str
    secret: str
    tmp: Path


def _get(world: World, event_id: str) -> dict[str, Any]:
    answer = world.api.get(f"{EVENTS}/{event_id}", headers=bearer(world.secret))
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def _occurrences(world: World, series_id: str) -> list[dict[str, Any]]:
    window = {"timeMin": "2026-03-01", "timeMax": "2026-06-01"}
    listed = world.api.get(EVENTS, params=window, headers=bearer(world.secret)).json()["events"]
    return [e for e in listed if e.get("recurringEventId") == series_id]


def _series(world: World) -> dict[str, Any]:
    made = world.api.post(EVENTS, json=WEEKLY, headers=bearer(world.secret))
    assert made.status_code == 201
    return made.json()  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# The paths: each makes one change and says what it must be


async def rest_create(w: World) -> Expected:
    made = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    return Expected("created", "key", "rest", made.json()["id"], None, made.json(),
                    made.headers["request-id"])  # fmt: skip


async def rest_update(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    url = f"{EVENTS}/{event.json()['id']}"
    changed = w.api.patch(url, json={"title": "Renamed"}, headers=bearer(w.secret))
    return Expected("updated", "key", "rest", event.json()["id"], event.json(), changed.json(),
                    changed.headers["request-id"])  # fmt: skip


async def rest_update_this(w: World) -> Expected:
    series = _series(w)
    one = _occurrences(w, series["id"])[1]
    changed = w.api.patch(f"{EVENTS}/{one['id']}", params={"scope": "this"},
                          json={"title": "Once"}, headers=bearer(w.secret))  # fmt: skip
    return Expected("updated", "key", "rest", one["id"], one, changed.json(),
                    changed.headers["request-id"], {"recurringEventId": series["id"]})  # fmt: skip


async def rest_update_following(w: World) -> Expected:
    series = _series(w)
    third = _occurrences(w, series["id"])[2]
    split = w.api.patch(f"{EVENTS}/{third['id']}", params={"scope": "following"},
                        json={"title": "Later"}, headers=bearer(w.secret))  # fmt: skip
    return Expected("updated", "key", "rest", series["id"], series, _get(w, series["id"]),
                    split.headers["request-id"],
                    {"newSeries": split.json(), "occurrences": 4})  # fmt: skip


async def rest_update_all(w: World) -> Expected:
    series = _series(w)
    second = _occurrences(w, series["id"])[1]
    changed = w.api.patch(f"{EVENTS}/{second['id']}", params={"scope": "all"},
                          json={"title": "All"}, headers=bearer(w.secret))  # fmt: skip
    return Expected("updated", "key", "rest", series["id"], series, changed.json(),
                    changed.headers["request-id"], {"occurrences": 6})  # fmt: skip


async def rest_delete(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    gone = w.api.delete(f"{EVENTS}/{event.json()['id']}", headers=bearer(w.secret))
    return Expected("deleted", "key", "rest", event.json()["id"], event.json(), None,
                    gone.headers["request-id"])  # fmt: skip


async def rest_delete_this(w: World) -> Expected:
    series = _series(w)
    one = _occurrences(w, series["id"])[3]
    gone = w.api.delete(f"{EVENTS}/{one['id']}", headers=bearer(w.secret))
    return Expected("deleted", "key", "rest", one["id"], one, None, gone.headers["request-id"],
                    {"recurringEventId": series["id"]})  # fmt: skip


async def rest_delete_following(w: World) -> Expected:
    series = _series(w)
    fourth = _occurrences(w, series["id"])[3]
    gone = w.api.delete(f"{EVENTS}/{fourth['id']}", params={"scope": "following"},
                        headers=bearer(w.secret))  # fmt: skip
    return Expected("updated", "key", "rest", series["id"], series, _get(w, series["id"]),
                    gone.headers["request-id"], {"occurrences": 3})  # fmt: skip


async def rest_delete_all(w: World) -> Expected:
    series = _series(w)
    gone = w.api.delete(f"{EVENTS}/{series['id']}", params={"scope": "all"},
                        headers=bearer(w.secret))  # fmt: skip
    return Expected("deleted", "key", "rest", series["id"], series, None,
                    gone.headers["request-id"], {"occurrences": 6})  # fmt: skip


async def rest_import(w: World) -> Expected:
    ics = ICS.format(uid="rest-1@example.com", title="Imported")
    answer = w.api.post(f"{EVENTS}/import", content=ics,
                        headers={**bearer(w.secret), "Content-Type": "text/calendar"})  # fmt: skip
    assert answer.json()["created"] == 1, answer.text
    [made] = [e for e in w.api.get(EVENTS, headers=bearer(w.secret)).json()["events"]
              if e["title"] == "Imported"]  # fmt: skip
    return Expected("created", "key", "import", made["id"], None, made,
                    answer.headers["request-id"])  # fmt: skip


async def rest_undo(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    url = f"{EVENTS}/{event.json()['id']}"
    changed = w.api.patch(url, json={"title": "Oops"}, headers=bearer(w.secret))
    undone = w.api.post(f"/api/v1/calendar/changes/{changed.headers['calendar-change-id']}/undo",
                        headers=bearer(w.secret))  # fmt: skip
    return Expected("updated", "key", "rest", event.json()["id"], changed.json(), event.json(),
                    undone.headers["request-id"],
                    {"undoes": changed.headers["calendar-change-id"]})  # fmt: skip


async def mcp_create(w: World) -> Expected:
    async with connect(w.server.url, w.secret) as client:
        made = await client.call_tool("createCalendarEvent", {**WEEKLY, "recurrence": None})
    event = dict(made.structured_content or {})
    event.pop("changeId")
    return Expected("created", "key", "mcp", event["id"], None, event)


async def mcp_update(w: World) -> Expected:
    series = _series(w)
    one = _occurrences(w, series["id"])[0]
    async with connect(w.server.url, w.secret) as client:
        changed = await client.call_tool("updateCalendarEvent",
                                         {"eventId": one["id"], "location": "Room 9"})  # fmt: skip
    after = dict(changed.structured_content or {})
    after.pop("changeId")
    return Expected("updated", "key", "mcp", one["id"], one, after, None,
                    {"recurringEventId": series["id"]})  # fmt: skip


async def mcp_delete(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    async with connect(w.server.url, w.secret) as client:
        await client.call_tool("deleteCalendarEvent", {"eventId": event.json()["id"]})
    return Expected("deleted", "key", "mcp", event.json()["id"], event.json(), None)


async def mcp_undo(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    async with connect(w.server.url, w.secret) as client:
        await client.call_tool("undoChange", {"changeId": event.headers["calendar-change-id"]})
    return Expected("deleted", "key", "mcp", event.json()["id"], event.json(), None, None,
                    {"undoes": event.headers["calendar-change-id"]})  # fmt: skip


def _settings_post(w: World, path: str, data: dict[str, str] | None = None) -> str:
    session = signed_in(w.server, w.owner)
    try:
        answer = session.post(path, data)
        assert answer.status_code == 303, answer.text
        return answer.headers["request-id"]
    finally:
        session.client.close()


async def settings_create(w: World) -> Expected:
    request_id = _settings_post(w, "/events", event_form(w.owner.default_calendar_id,
                                                         title="From the page"))  # fmt: skip
    [made] = [e for e in w.api.get(EVENTS, headers=bearer(w.secret)).json()["events"]
              if e["title"] == "From the page"]  # fmt: skip
    return Expected("created", "owner", "settings", made["id"], None, made, request_id)


async def settings_update(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    event_id = event.json()["id"]
    form = event_form(w.owner.default_calendar_id, title="Edited on the page",
                      start_date="2026-03-02", end_date="2026-03-02")  # fmt: skip
    request_id = _settings_post(w, f"/events/{event_id}", form)
    return Expected("updated", "owner", "settings", event_id, event.json(), _get(w, event_id),
                    request_id)  # fmt: skip


async def settings_delete(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    request_id = _settings_post(w, f"/events/{event.json()['id']}/delete")
    return Expected("deleted", "owner", "settings", event.json()["id"], event.json(), None,
                    request_id)  # fmt: skip


async def cli_import(w: World) -> Expected:
    path = w.tmp / "one.ics"
    path.write_text(ICS.format(uid="cli-1@example.com", title="Imported by hand"))
    cli_json(w.config, "import", str(path), "--user", w.owner.email,
             "--calendar", w.owner.default_calendar_id)  # fmt: skip
    [made] = [e for e in w.api.get(EVENTS, headers=bearer(w.secret)).json()["events"]
              if e["title"] == "Imported by hand"]  # fmt: skip
    return Expected("created", "owner", "import", made["id"], None, made, "")


async def cli_undo(w: World) -> Expected:
    event = w.api.post(EVENTS, json={**WEEKLY, "recurrence": None}, headers=bearer(w.secret))
    url = f"{EVENTS}/{event.json()['id']}"
    changed = w.api.patch(url, json={"location": "Elsewhere"}, headers=bearer(w.secret))
    cli_json(w.config, "changes", "undo", changed.headers["calendar-change-id"])
    return Expected("updated", "owner", "cli", event.json()["id"], changed.json(), event.json(),
                    "", {"undoes": changed.headers["calendar-change-id"]})  # fmt: skip


PATHS: tuple[Callable[[World], Awaitable[Expected]], ...] = (
    rest_create,
    rest_update,
    rest_update_this,
    rest_update_following,
    rest_update_all,
    rest_delete,
    rest_delete_this,
    rest_delete_following,
    rest_delete_all,
    rest_import,
    rest_undo,
    mcp_create,
    mcp_update,
    mcp_delete,
    mcp_undo,
    settings_create,
    settings_update,
    settings_delete,
    cli_import,
    cli_undo,
)


def _same_event(found: Any, wanted: Any) -> bool:
    if wanted is None or found is None:
        return found is wanted
    return {**found, "updatedAt": None} == {**wanted, "updatedAt": None}


async def test_every_path_leaves_one_change_saying_who_what_and_which_request(
    api: httpx.Client, server: RunningServer, factory: Factory, config: Config, tmp_path: Path
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    world = World(api, server, factory, config, owner, key_id, secret, tmp_path)
    principal = keys.owner_principal(owner.id)
    for path in PATHS:
        expected = await path(world)
        found = factory.db.call(list_changes, principal=principal, limit=2500)["changes"]
        change = found[0]  # each path's write is its last (its setup writes before it)
        name = path.__name__
        assert change["kind"] == expected.kind, name
        assert change["actor"]["type"] == expected.actor, name
        assert change["actor"]["id"] == (key_id if expected.actor == "key" else owner.id), name
        assert change["transport"] == expected.transport, name
        assert change["eventId"] == expected.event_id, name
        assert _same_event(change["before"], expected.before), (name, change["before"])
        assert _same_event(change["after"], expected.after), (name, change["after"])
        for field, value in (expected.extra or {}).items():
            if field == "newSeries":
                assert _same_event(change[field], value), name
            else:
                assert change[field] == value, (name, field)
        request_id = expected.request_id
        if expected.actor == "key":  # the key's call history names the same request
            calls = factory.db.call(history.list_calls, key_id=key_id, limit=20)
            by_request = {c["requestId"]: c for c in calls}
            if request_id is None:  # an MCP call: its id is the tool call's own
                request_id = change.get("requestId")
            call = by_request[request_id]
            assert (call["transport"], call["status"] < 300) == (
                "mcp" if expected.transport == "mcp" else "rest",
                True,
            ), name
        if request_id:  # one change, and only one, of that request
            assert change["requestId"] == request_id, name
            assert [c["id"] for c in found if c.get("requestId") == request_id] == [change["id"]], (
                name
            )
        else:  # the CLI: no request
            assert "requestId" not in change, name
