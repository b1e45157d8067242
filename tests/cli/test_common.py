"""The CLI's one translation of errors (``cli/common.py``), as a shell runs the console script:
with ``--json`` every refusal of every command is one JSON object on standard error, ``code``
and ``message`` (and ``errors``, ``changes`` … as the REST problem carries them), with the
documented exit code; without it, a message a person reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from calendar_service.platform.config import Config
from tests.cli.support import cli, cli_json
from tests.rest.conftest import EVENTS, event_body
from tests.support import bearer

SCRIPT = str(Path(sys.executable).with_name("calendar-service"))  # pyproject's [project.scripts]


def script(config: Config, *args: str) -> subprocess.CompletedProcess[str]:
    """``calendar-service ARGS`` in a process of its own, on ``config``'s database, without
    ``CALENDAR_WEBHOOK_ALLOW_LOCAL`` (as an owner's shell has it)."""
    env = {k: v for k, v in os.environ.items() if k != "CALENDAR_WEBHOOK_ALLOW_LOCAL"}
    env["CALENDAR_DATABASE_URL"] = config.database_url
    return subprocess.run(
        [SCRIPT, *args], env=env, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture(scope="module")
def setting(config: Config, server: Any) -> dict[str, str]:
    """An owner with a second calendar holding one event, a write key, and two changes of one
    event (the first of which cannot be undone without --force: the event changed since)."""
    email = f"errors-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    work = cli_json(config, "calendars", "create", "--user", email, "--name", "Work")["id"]
    key = cli_json(config, "keys", "create", "--user", email, "--name", "agent",
                   "--permission", "write")  # fmt: skip
    with httpx.Client(base_url=server.url) as api:
        made = api.post(EVENTS, json={**event_body(), "calendarId": work},
                        headers=bearer(key["secret"]))  # fmt: skip
        assert made.status_code == 201, made.text
        moved = api.patch(f"{EVENTS}/{made.json()['id']}", json={"title": "Moved"},
                          headers=bearer(key["secret"]))  # fmt: skip
        assert moved.status_code == 200, moved.text
    return {
        "email": email,
        "calendar": work,
        "key": key["id"],
        "created": made.headers["calendar-change-id"],
        "moved": moved.headers["calendar-change-id"],
    }


# A refused command line ({…} from ``setting``): its exit code, its code, and what the JSON
# object carries beside code and message (a key, and a value it must hold when not None).
REFUSALS: dict[str, tuple[str, int, str, tuple[str, Any] | None]] = {
    "undo-changed-since": ("changes undo {created}", 1, "conflict", ("changes", None)),
    "unknown-owner": ("keys list --user nobody@example.com", 1, "not_found", None),
    "invalid-field": (
        "calendars create --user {email} --name X --time-zone Mars/Olympus",
        2,
        "validation_error",
        ("errors", "timeZone"),
    ),
    "delete-without-yes": (
        "calendars delete {calendar}",
        2,
        "validation_error",
        ("errors", "--yes"),
    ),
    "undo-without-what": ("changes undo", 2, "usage_error", None),
    "option-out-of-range": ("calls {key} --limit 0", 2, "usage_error", ("errors", "--limit")),
    "unknown-option": ("keys list --user {email} --colour red", 2, "usage_error", None),
    "secret-for-key-id": ("keys revoke calsk_0123456789abcdef", 2, "usage_error", None),
    "unknown-proposal": ("proposals approve prop_0000 --user {email}", 1, "not_found", None),
    "local-webhook": (
        "webhook set --user {email} --url http://127.0.0.1:9/hook",
        1,
        "webhook_target_refused",
        None,
    ),
    "redeliver-without-what": ("webhook redeliver --user {email}", 2, "usage_error", None),
    "unreadable-import": (
        "import /nonexistent/file.ics --user {email} --calendar {calendar}",
        2,
        "validation_error",
        ("errors", "file"),
    ),
}


@pytest.mark.parametrize(
    ("command", "exit_code", "code", "carries"), list(REFUSALS.values()), ids=list(REFUSALS)
)
def test_with_json_every_refusal_is_one_json_object_with_its_code_and_exit_code(
    config: Config,
    setting: dict[str, str],
    command: str,
    exit_code: int,
    code: str,
    carries: tuple[str, Any] | None,
) -> None:
    ran = script(config, *command.format(**setting).split(), "--json")
    assert (ran.returncode, ran.stdout) == (exit_code, ""), ran.stderr
    refusal = json.loads(ran.stderr)
    assert refusal["code"] == code, refusal
    assert refusal["message"] and "Traceback" not in ran.stderr
    if carries is not None:
        name, value = carries
        assert refusal[name], refusal
        if value is not None:
            assert value in [item["field"] for item in refusal[name]], refusal


def test_without_json_a_refusal_is_a_sentence_on_standard_error(
    config: Config, setting: dict[str, str]
) -> None:
    ran = script(config, "changes", "undo", setting["created"])
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr.startswith("error: ") and "changed since" in ran.stderr


def test_deleting_a_calendar_without_yes_says_what_it_would_delete_and_how_to_confirm(
    config: Config, setting: dict[str, str]
) -> None:
    asked = cli(config, "calendars", "delete", setting["calendar"], check=False)
    assert asked.returncode == 2
    assert "invalid fields" not in asked.stderr
    assert "1 event" in asked.stderr and "run it again with --yes to confirm" in asked.stderr


def test_a_local_webhook_refused_names_the_setting_for_the_command_and_the_service(
    config: Config, setting: dict[str, str]
) -> None:
    for url in ("http://127.0.0.1:9/hook", "https://127.0.0.1:9/hook"):
        ran = script(config, "webhook", "set", "--user", setting["email"], "--url", url)
        assert ran.returncode == 1
        assert "CALENDAR_WEBHOOK_ALLOW_LOCAL=1" in ran.stderr
        assert "for the service and for the calendar-service command" in ran.stderr
