"""The ``calendar-service`` CLI's JSON contract (SPEC.md), run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

import httpx

from calendar_service.config import Config
from tests.rest.conftest import EVENTS
from tests.support import bearer


def cli(config: Config, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CALENDAR_DATABASE_URL": config.database_url}
    result = subprocess.run(
        [sys.executable, "-m", "calendar_service.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def cli_json(config: Config, *args: str) -> dict[str, Any]:
    out = cli(config, *args, "--json").stdout
    return json.loads(out)  # type: ignore[no-any-return]


def test_the_owner_workflow_through_the_cli_with_json_output(
    config: Config, api: httpx.Client
) -> None:
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    user = cli_json(config, "users", "create", email, "--password", "a long password")
    assert user["email"] == email
    assert user["id"].startswith("usr_")
    assert user["defaultCalendarId"].startswith("cal_")

    cal = cli_json(
        config,
        "calendars",
        "create",
        "--user",
        email,
        "--name",
        "Work",
        "--time-zone",
        "Europe/Paris",
    )
    assert (cal["name"], cal["timeZone"]) == ("Work", "Europe/Paris")
    listed = cli_json(config, "calendars", "list", "--user", email)
    assert {c["name"] for c in listed["calendars"]} == {"Личное", "Work"}

    key = cli_json(
        config,
        "keys",
        "create",
        "--user",
        email,
        "--name",
        "crm",
        "--permission",
        "read",
        "--expires-in",
        "30d",
        "--calendar",
        cal["id"],
    )
    assert key["permission"] == "read"
    assert key["calendarId"] == cal["id"]
    assert key["secret"].startswith("calsk_")
    assert key["expiresAt"]
    wide = cli_json(
        config,
        "keys",
        "create",
        "--user",
        email,
        "--name",
        "zap",
        "--permission",
        "write",
        "--expires-at",
        "2099-01-01T00:00:00Z",
    )
    assert wide["calendarId"] is None
    assert wide["expiresAt"] == "2099-01-01T00:00:00Z"

    response = api.get(
        EVENTS, params={"timeMin": "2026-01-01T00:00:00Z"}, headers=bearer(key["secret"])
    )
    assert response.status_code == 200
    calls = cli_json(config, "calls", key["id"])["calls"]
    assert len(calls) == 1
    call = calls[0]
    assert {"at", "transport", "operation", "method", "path", "status", "latencyMs"} <= set(call)
    assert (call["transport"], call["operation"], call["method"], call["path"], call["status"]) == (
        "rest",
        "listCalendarEvents",
        "GET",
        EVENTS,
        200,
    )
    assert "timeMin" not in json.dumps(calls)

    keys = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert {k["id"] for k in keys} == {key["id"], wide["id"]}
    assert all("secret" not in k for k in keys)

    revoked = cli_json(config, "keys", "revoke", key["id"])
    assert revoked["id"] == key["id"]
    assert revoked["revokedAt"]
    refused = api.get(EVENTS, headers=bearer(key["secret"]))
    assert refused.json()["code"] == "revoked_api_key"
    newest_first = cli_json(config, "calls", key["id"])["calls"]
    assert [c["status"] for c in newest_first] == [401, 200]


def test_cli_errors_are_clear_and_exit_non_zero(config: Config) -> None:
    missing = cli(
        config, "keys", "create", "--user", "nobody@example.com", "--name", "x", check=False
    )
    assert missing.returncode != 0
    assert "nobody@example.com" in missing.stderr
    bad = cli(config, "users", "create", "not-an-email", check=False)
    assert bad.returncode == 2
    assert "email" in bad.stderr
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    zone = cli(
        config,
        "calendars",
        "create",
        "--user",
        email,
        "--name",
        "X",
        "--time-zone",
        "Mars/Olympus",
        check=False,
    )
    assert zone.returncode == 2
    assert "timeZone" in zone.stderr
    expiry = cli(
        config,
        "keys",
        "create",
        "--user",
        email,
        "--name",
        "x",
        "--expires-in",
        "forever",
        check=False,
    )
    assert expiry.returncode == 2
