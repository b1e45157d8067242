"""``calendar-service changes list`` and ``changes undo``, as real subprocesses: the owner sees
what a key did and takes it back, one change or all the key's since a time, newest first."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from calendar_service.platform.config import Config
from tests.cli.test_cli import cli, cli_json
from tests.rest.conftest import EVENTS, event_body
from tests.support import bearer

WEEKLY = {
    "title": "Team sync",
    "startsAt": "2026-03-02T10:00:00Z",
    "endsAt": "2026-03-02T10:30:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=4"],
}


def _owner_and_key(config: Config, name: str = "Calendar assistant") -> tuple[str, str, str]:
    """A new owner (email) and a write key of theirs (id, secret)."""
    email = f"changes-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    key = cli_json(
        config, "keys", "create", "--user", email, "--name", name, "--permission", "write"
    )
    return email, key["id"], key["secret"]


def _listed(config: Config, email: str, *extra: str) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = cli_json(config, "changes", "list", "--user", email, *extra)[
        "changes"
    ]
    return changes


def test_the_owner_lists_a_keys_changes_and_undoes_one(config: Config, api: httpx.Client) -> None:
    email, key_id, secret = _owner_and_key(config)
    made = api.post(EVENTS, json=event_body(), headers=bearer(secret))
    url = f"{EVENTS}/{made.json()['id']}"
    moved = api.patch(url, json={"title": "Moved"}, headers=bearer(secret))
    listed = _listed(config, email, "--key", key_id)
    assert [c["id"] for c in listed] == [
        moved.headers["calendar-change-id"],
        made.headers["calendar-change-id"],
    ]
    assert listed[0]["actor"] == {"type": "key", "id": key_id, "name": "Calendar assistant"}
    assert _listed(config, email, "--before", "2200-01-01") == listed
    assert _listed(config, email, "--since", "2020-01-01", "--before", "2020-01-02") == []
    bad = cli(config, "changes", "list", "--user", email, "--before", "soon", check=False)
    assert bad.returncode != 0 and "before" in bad.stderr
    text = cli(config, "changes", "list", "--user", email).stdout
    assert "updated" in text and "Calendar assistant (rest)" in text

    undone = cli_json(config, "changes", "undo", moved.headers["calendar-change-id"])
    assert undone["undoes"] == moved.headers["calendar-change-id"]
    assert (undone["actor"]["type"], undone["transport"]) == ("owner", "cli")
    assert undone["actor"]["name"] == email
    assert api.get(url, headers=bearer(secret)).json()["title"] == made.json()["title"]

    again = cli(config, "changes", "undo", moved.headers["calendar-change-id"], check=False)
    assert again.returncode == 1 and "has already been undone" in again.stderr
    api.patch(url, json={"title": "Moved again"}, headers=bearer(secret))
    refused = cli(config, "changes", "undo", made.headers["calendar-change-id"], check=False)
    assert refused.returncode == 1 and "changed since" in refused.stderr
    dry = cli_json(config, "changes", "undo", made.headers["calendar-change-id"], "--force",
                   "--dry-run")  # fmt: skip
    assert dry["dryRun"] is True and dry["kind"] == "deleted"
    assert api.get(url, headers=bearer(secret)).status_code == 200  # nothing changed
    forced = cli_json(config, "changes", "undo", made.headers["calendar-change-id"], "--force")
    assert forced["kind"] == "deleted"
    assert api.get(url, headers=bearer(secret)).status_code == 404

    missing = cli(config, "changes", "undo", "chg_066133a21e8c4d5f3b2a1c0d9e8f7a6b", check=False)
    assert missing.returncode == 1 and "No change" in missing.stderr
    both = cli(config, "changes", "undo", "chg_x", "--key", key_id, check=False)
    assert both.returncode == 2 and "Traceback" not in both.stderr
    no_since = cli(config, "changes", "undo", "--key", key_id, check=False)
    assert no_since.returncode == 2 and "--since" in no_since.stderr


def test_undoing_a_keys_work_since_a_time_goes_newest_first_and_lists_what_it_cannot(
    config: Config, api: httpx.Client
) -> None:
    email, key_id, secret = _owner_and_key(config)
    other_key = cli_json(
        config, "keys", "create", "--user", email, "--name", "Helper", "--permission", "write"
    )
    series = api.post(EVENTS, json=WEEKLY, headers=bearer(secret)).json()
    window = {"timeMin": "2026-03-01", "timeMax": "2026-04-01"}
    before = api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"]
    # The agent moves one occurrence, then deletes the whole series instead of another one.
    api.patch(
        f"{EVENTS}/{before[1]['id']}",
        json={"startsAt": "2026-03-09T11:00:00Z", "endsAt": "2026-03-09T11:30:00Z"},
        headers=bearer(secret),
    )
    single = api.post(EVENTS, json=event_body(title="Lunch"), headers=bearer(secret)).json()
    api.delete(f"{EVENTS}/{series['id']}", headers=bearer(secret))
    # Someone else changed the agent's lunch since: that one is refused.
    api.patch(f"{EVENTS}/{single['id']}", json={"location": "Canteen"},
              headers=bearer(other_key["secret"]))  # fmt: skip
    since = ("--key", key_id, "--since", "2020-01-01")
    preview = cli_json(config, "changes", "undo", *since, "--dry-run")
    assert preview["dryRun"] is True  # and nothing changed:
    assert api.get(f"{EVENTS}/{series['id']}", headers=bearer(secret)).status_code == 404
    assert _listed(config, email, "--key", key_id)[0]["kind"] == "deleted"
    done = cli_json(config, "changes", "undo", *since)
    assert [c["kind"] for c in done["undone"]] == ["deleted", "updated", "created"]
    assert [c["id"] for c in done["undone"]] == [c["id"] for c in preview["undone"]]
    [refused] = done["refused"]
    assert refused["change"]["eventId"] == single["id"] and refused["code"] == "conflict"
    assert all("undoneBy" in c for c in done["undone"])
    # The series' delete and the move were undone, then its create: the series is gone again,
    # as before the agent began; the lunch, changed since by another key, stays.
    assert api.get(f"{EVENTS}/{series['id']}", headers=bearer(secret)).status_code == 404
    assert api.get(f"{EVENTS}/{single['id']}", headers=bearer(secret)).status_code == 200
    again = cli_json(config, "changes", "undo", *since)
    assert again["undone"] == [] and [r["change"]["id"] for r in again["refused"]] == [
        refused["change"]["id"]
    ]
    mine = _listed(config, email, "--since", "2020-01-01")
    assert {c["transport"] for c in mine if c["actor"]["type"] == "owner"} == {"cli"}
    foreign = cli(config, "changes", "list", "--user", email, "--key", "key_nope", check=False)
    assert foreign.returncode == 1 and "No API key" in foreign.stderr
