"""``keys create --approval``, ``keys update --approval`` and ``proposals list|approve|reject``,
run as a real subprocess against the test server's database (docs/changes.md)."""

from __future__ import annotations

import uuid

import httpx

from calendar_service.platform.config import Config
from tests.cli.test_cli import cli, cli_json
from tests.rest.conftest import EVENTS, create_event, event_body
from tests.support import bearer


def test_the_owner_decides_what_a_careful_key_proposed_from_the_cli(
    config: Config, api: httpx.Client
) -> None:
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    key = cli_json(
        config, "keys", "create", "--user", email, "--name", "agent", "--permission", "write",
        "--approval", "destructive",
    )  # fmt: skip
    assert key["approval"] == "destructive"
    secret = key["secret"]
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    moved = api.patch(url, json={"title": "Moved"}, headers=bearer(secret)).json()
    deleted = api.delete(url, headers=bearer(secret)).json()

    listed = cli_json(config, "proposals", "list", "--user", email, "--status", "pending")
    assert [p["id"] for p in listed["proposals"]] == [deleted["id"], moved["id"]]
    text = cli(config, "proposals", "list", "--user", email).stdout
    assert moved["id"] in text and "'Moved'" in text and "by key agent (rest)" in text

    rejected = cli_json(config, "proposals", "reject", deleted["id"], "--user", email)
    assert rejected["status"] == "rejected"
    again = cli(config, "proposals", "reject", deleted["id"], check=False)
    assert again.returncode != 0 and "was already rejected" in again.stderr

    approved = cli_json(config, "proposals", "approve", moved["id"])
    assert approved["status"] == "approved"
    twice = cli(config, "proposals", "approve", moved["id"], check=False)
    assert twice.returncode == 1 and "was already approved" in twice.stderr
    assert api.get(url, headers=bearer(secret)).json()["title"] == "Moved"
    [change] = cli_json(config, "changes", "list", "--user", email, "--key", key["id"])["changes"][
        :1
    ]
    assert change["transport"] == "cli" and change["proposalId"] == moved["id"]

    # A key made stricter from the CLI: its creates now wait too.
    updated = cli_json(config, "keys", "update", key["id"], "--user", email, "--approval", "all")
    assert updated["approval"] == "all"
    waits = api.post(EVENTS, json=event_body(), headers=bearer(secret))
    assert waits.status_code == 202
    # An approval of an event changed since fails, says why and exits 1.
    proposal = api.patch(url, json={"title": "Again"}, headers=bearer(secret)).json()
    cli_json(config, "keys", "update", key["id"], "--user", email, "--approval", "none")
    assert api.patch(url, json={"title": "Owner"}, headers=bearer(secret)).status_code == 200
    failed = cli(config, "proposals", "approve", proposal["id"], check=False)
    assert failed.returncode == 1 and "changed since" in failed.stdout
    failed_again = cli(config, "proposals", "approve", proposal["id"], check=False)
    assert failed_again.returncode == 1 and "has already failed" in failed_again.stderr

    stranger = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", stranger)
    refused = cli(
        config, "proposals", "approve", waits.json()["id"], "--user", stranger, check=False
    )
    assert refused.returncode != 0 and "has no proposal" in refused.stderr
    bad = cli(config, "keys", "create", "--user", email, "--name", "x", "--approval", "some",
              check=False)  # fmt: skip
    assert bad.returncode == 2 and "approval" in bad.stderr
