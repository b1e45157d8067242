"""``calendar-service feeds create|list|revoke|fetches``, run as a real subprocess, against
the running server's database: the URL it prints serves the calendar until it is revoked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from typing import Any

from calendar_service.config import Config
from tests.cli.test_cli import cli, cli_json
from tests.ical.support import fetch, parsed
from tests.support import RunningServer


def feeds_cli(config: Config, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The CLI with the server's base URL, which the feed's URL starts with."""
    env = {
        **os.environ,
        "CALENDAR_DATABASE_URL": config.database_url,
        "CALENDAR_BASE_URL": config.base_url,
    }
    result = subprocess.run(
        [sys.executable, "-m", "calendar_service.cli", *args],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if check:
        assert result.returncode == 0, result.stderr
    return result


def feeds_json(config: Config, *args: str) -> dict[str, Any]:
    return json.loads(feeds_cli(config, *args, "--json").stdout)  # type: ignore[no-any-return]


def _owner_with_calendar(config: Config) -> tuple[str, str]:
    email = f"feeds-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    cal = cli_json(config, "calendars", "create", "--user", email, "--name", "Work",
                   "--time-zone", "Europe/Berlin")  # fmt: skip
    return email, cal["id"]


def test_a_feed_made_with_the_cli_serves_its_calendar_until_revoked(
    config: Config, server: RunningServer
) -> None:
    email, calendar_id = _owner_with_calendar(config)
    feed = feeds_json(config, "feeds", "create", "--user", email, "--calendar", calendar_id)
    assert feed["id"].startswith("feed_")
    assert re.fullmatch(re.escape(config.base_url) + r"/ical/[0-9A-Za-z]{43}\.ics", feed["url"])
    assert feed["calendarId"] == calendar_id and feed["state"] == "active"
    served = parsed(fetch(feed["url"], **{"User-Agent": "cli-test"}))
    assert str(served["X-WR-CALNAME"]) == "Work"

    listed = feeds_json(config, "feeds", "list", "--user", email)["feeds"]
    assert [(f["id"], f["fetches"], f["state"]) for f in listed] == [(feed["id"], 1, "active")]
    assert "url" not in listed[0]
    assert feed["url"].rsplit("/", 1)[1] not in feeds_cli(config, "feeds", "list", "--user",
                                                          email).stdout  # fmt: skip
    fetches = feeds_json(config, "feeds", "fetches", feed["id"], "--user", email)["fetches"]
    assert [(f["status"], f["userAgent"]) for f in fetches] == [(200, "cli-test")]

    revoked = feeds_json(config, "feeds", "revoke", feed["id"], "--user", email)
    assert revoked["id"] == feed["id"] and revoked["revokedAt"]
    assert fetch(feed["url"]).status_code == 404
    text = feeds_cli(config, "feeds", "list", "--user", email).stdout
    assert feed["id"] in text and "revoked" in text


def test_feeds_of_another_owner_or_of_no_calendar_are_refused(
    config: Config, server: RunningServer
) -> None:
    email, calendar_id = _owner_with_calendar(config)
    other, _ = _owner_with_calendar(config)
    refused = feeds_cli(config, "feeds", "create", "--user", other, "--calendar", calendar_id,
                        check=False)  # fmt: skip
    assert refused.returncode == 2
    assert "calendarId" in refused.stderr and "no calendar" in refused.stderr
    feed = feeds_json(config, "feeds", "create", "--user", email, "--calendar", calendar_id)
    theirs = feeds_cli(config, "feeds", "revoke", feed["id"], "--user", other, check=False)
    assert theirs.returncode == 1 and "has no feed" in theirs.stderr
    assert fetch(feed["url"]).status_code == 200
    unknown = feeds_cli(config, "feeds", "revoke", "feed_nope", check=False)
    assert unknown.returncode == 1 and "No feed 'feed_nope'" in unknown.stderr
