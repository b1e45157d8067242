"""The ``calendar-service`` CLI's JSON contract (docs/cli.md): the owner's workflow, and
errors that are clear and exit non-zero; the console script itself, as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from calendar_service.platform.config import Config
from tests.cli.support import cli, cli_json
from tests.rest.conftest import EVENTS
from tests.support import bearer

SCRIPT = str(Path(sys.executable).with_name("calendar-service"))  # pyproject's [project.scripts]


def test_the_console_script_prints_json_or_errors_and_exits_0_1_or_2(config: Config) -> None:
    """The installed ``calendar-service``, in a process of its own as a shell runs it: one JSON
    object on standard output, errors on standard error only, exit 0, 2 (invalid input) or 1."""
    env = {**os.environ, "CALENDAR_DATABASE_URL": config.database_url}

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SCRIPT, *args], env=env, capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    made = script("users", "create", email, "--json")
    assert (made.returncode, made.stderr) == (0, ""), made.stderr
    assert json.loads(made.stdout)["email"] == email
    invalid = script("calendars", "create", "--user", email, "--name", "X",
                     "--time-zone", "Mars/Olympus", "--json")  # fmt: skip
    assert (invalid.returncode, invalid.stdout) == (2, "")
    assert "timeZone" in invalid.stderr and "Traceback" not in invalid.stderr
    unknown = script("keys", "list", "--user", "nobody@example.com")
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert "nobody@example.com" in unknown.stderr and "Traceback" not in unknown.stderr


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

    new_key = ("keys", "create", "--user", email)
    key = cli_json(
        config,
        *new_key,
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
        *new_key,
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


@pytest.fixture(scope="module")
def cli_owner(config: Config) -> str:
    """The email of an owner made through the CLI."""
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    return email


# A command line refused ({email} is cli_owner's), its exit status (None: any but 0), and what
# its error message names.
CLI_ERRORS = {
    "unknown-owner": ("keys create --user nobody@example.com --name x", None, "nobody@example.com"),
    "bad-email": ("users create not-an-email", 2, "email"),
    "unknown-zone": (
        "calendars create --user {email} --name X --time-zone Mars/Olympus",
        2,
        "timeZone",
    ),
    "lifetime-without-unit": (
        "keys create --user {email} --name x --expires-in forever",
        2,
        "expiresIn",
    ),
}


@pytest.mark.parametrize(
    ("command", "status", "named"), list(CLI_ERRORS.values()), ids=list(CLI_ERRORS)
)
def test_cli_errors_are_clear_and_exit_non_zero(
    config: Config, cli_owner: str, command: str, status: int | None, named: str
) -> None:
    result = cli(config, *command.format(email=cli_owner).split(), check=False)
    if status is None:
        assert result.returncode != 0
    else:
        assert result.returncode == status
    assert named in result.stderr


def test_an_owner_whose_domain_mixes_scripts_is_refused_naming_the_letters(config: Config) -> None:
    refused = cli(config, "users", "create", "bob@ex\u0430mple.com", "--json", check=False)
    assert (refused.returncode, refused.stdout) == (2, "")
    error = json.loads(refused.stderr)
    assert error["code"] == "validation_error"
    assert error["errors"] == [
        {
            "field": "email",
            "message": "the domain mixes Latin and Cyrillic letters (\u0430 U+0430): "
            "a look-alike of another address",
        }
    ]
    for fine in ("anna@m\u00fcnchen.de", "anna@\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444"):
        local, domain = fine.split("@")
        made = cli_json(config, "users", "create", f"{local}-{uuid.uuid4().hex[:8]}@{domain}")
        assert made["email"].endswith(domain)
