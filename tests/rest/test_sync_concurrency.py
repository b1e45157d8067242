"""Never a missed change, on PostgreSQL with two real server processes: writers change events
through both at once (their transactions take ids in one order and commit in another) while a
client syncs in a loop; at the end its copy equals a fresh full list, and every change a writer
was answered for reached the client (bounded in requests and time)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest

from calendar_service.platform.config import Config
from tests.rest.conftest import EVENTS
from tests.support import (
    Factory,
    bearer,
    free_port,
    serve_env,
    serving,
)

pytestmark = pytest.mark.postgresql  # the race is PostgreSQL's (several processes, one database)

WRITERS = 4
ROUNDS = 12  # each writer's rounds: about 5 writes each
POLLS_MOST = 2_000


@contextmanager
def _server(database_url: str) -> Iterator[str]:
    """``calendar-service serve`` in a process of its own; its base URL once it answers."""
    port = free_port()
    env = {**serve_env(database_url), "CALENDAR_RATE_LIMIT": "100000/minute"}
    base = f"http://127.0.0.1:{port}"
    with serving(env, base, "--port", str(port)):
        yield base


def _full_list(client: httpx.Client) -> tuple[dict[str, dict[str, Any]], str]:
    params = {"singleEvents": "false", "limit": "50"}
    found: dict[str, dict[str, Any]] = {}
    for _ in range(1_000):
        page = client.get(EVENTS, params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        found.update((e["id"], e) for e in body["events"])
        if "nextPageToken" not in body:
            return found, body["nextSyncToken"]
        params["pageToken"] = body["nextPageToken"]
    raise AssertionError("the list's pages never ended")


class Writer(threading.Thread):
    """Creates, changes and deletes events and occurrences through one server; remembers what
    each answered write left (the event as answered, or ``None`` for deleted)."""

    def __init__(self, base: str, secret: str, number: int, calendars: list[str]) -> None:
        super().__init__(name=f"writer-{number}", daemon=True)
        self.base, self.secret, self.number, self.calendars = base, secret, number, calendars
        self.writes: list[tuple[str, dict[str, Any] | None]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.base, headers=bearer(self.secret), timeout=30) as c:
                self._work(c)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _ok(self, response: httpx.Response) -> Any:
        assert response.status_code in (200, 201, 204), response.text
        return None if response.status_code == 204 else response.json()

    def _work(self, c: httpx.Client) -> None:
        n = self.number
        mine: list[str] = []
        series = self._ok(
            c.post(
                EVENTS,
                json={
                    "title": f"series {n}",
                    "startsAt": f"2026-03-0{n + 1}T09:00:00Z",
                    "endsAt": f"2026-03-0{n + 1}T10:00:00Z",
                    "recurrence": ["RRULE:FREQ=DAILY;COUNT=40"],
                    "calendarId": self.calendars[n % 2],
                },
            )
        )
        self.writes.append((series["id"], series))
        for r in range(ROUNDS):
            body = {
                "title": f"w{n} r{r}",
                "startsAt": f"2026-04-{r + 1:02d}T{n + 8:02d}:00:00Z",
                "endsAt": f"2026-04-{r + 1:02d}T{n + 9:02d}:00:00Z",
                "calendarId": self.calendars[(n + r) % 2],
            }
            event = self._ok(c.post(EVENTS, json=body))
            self.writes.append((event["id"], event))
            mine.append(event["id"])
            if r % 2 == 1:
                changed = self._ok(
                    c.patch(f"{EVENTS}/{mine[-2]}", json={"title": f"w{n} r{r} changed"})
                )
                self.writes.append((changed["id"], changed))
            if r % 3 == 2:
                gone = mine.pop(0)
                self._ok(c.delete(f"{EVENTS}/{gone}"))
                self.writes.append((gone, None))
            occurrence = f"{series['id']}_202603{n + 2 + r:02d}T090000Z"
            if r % 2 == 0:
                moved = self._ok(c.patch(f"{EVENTS}/{occurrence}", json={"title": f"o{r}"}))
                self.writes.append((moved["id"], moved))
            else:
                self._ok(c.delete(f"{EVENTS}/{occurrence}"))
                self.writes.append((occurrence, None))


def test_a_syncing_client_misses_nothing_while_two_processes_take_writes(
    config: Config, factory: Factory
) -> None:
    owner = factory.owner()
    calendars = [owner.default_calendar_id, factory.calendar(owner)]
    _, secret = factory.key(owner)
    with ExitStack() as stack:
        bases = [stack.enter_context(_server(config.database_url)) for _ in range(2)]
        reader = stack.enter_context(
            httpx.Client(base_url=bases[0], headers=bearer(secret), timeout=30)
        )
        copy, token = _full_list(reader)
        seen: dict[str, list[dict[str, Any]]] = {}  # every version of every id the syncs gave

        def sync_once(token: str) -> str:
            params = {"syncToken": token, "limit": "7"}
            for _ in range(1_000):
                page = reader.get(EVENTS, params=params)
                assert page.status_code == 200, page.text
                body = page.json()
                for event in body["events"]:
                    seen.setdefault(event["id"], []).append(event)
                    if event.get("status") == "cancelled":
                        copy.pop(event["id"], None)
                    else:
                        copy[event["id"]] = event
                if "nextPageToken" not in body:
                    return str(body["nextSyncToken"])
                params = {"pageToken": body["nextPageToken"], "limit": "7"}
            raise AssertionError("a sync's pages never ended")

        writers = [Writer(bases[i % 2], secret, i, calendars) for i in range(WRITERS)]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 240
        polls = 0
        while any(w.is_alive() for w in writers):
            assert polls < POLLS_MOST and time.monotonic() < deadline, "bounded"
            token = sync_once(token)
            polls += 1
        for writer in writers:
            writer.join(timeout=30)
            assert writer.error is None, repr(writer.error)
        token = sync_once(token)  # the changes answered after the last poll began

        expected, _ = _full_list(reader)
        assert copy == expected
        assert polls >= 2, "the client synced while the writers wrote"
        # Every answered write reached the client: that version (or a later one) of the event,
        # or its tombstone.
        for writer in writers:
            for event_id, written in writer.writes:
                versions = seen.get(event_id, [])
                if written is None:
                    assert any(v.get("status") == "cancelled" for v in versions), event_id
                else:
                    assert written in versions or any(
                        v.get("status") == "cancelled"
                        or v.get("updatedAt", "") > written["updatedAt"]
                        for v in versions
                    ), (event_id, written, versions)
