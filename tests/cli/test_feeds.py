"""``calendar-service feeds create|list|revoke|fetches``, against the running server's
database: the URL it prints serves the calendar until it is revoked; without
``CALENDAR_BASE_URL``, the URL starts with the address ``serve`` (a real process) serves on."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from calendar_service.platform.config import Config
from tests.cli.support import Ran, cli, cli_json, run_cli
from tests.rest.ical.support import fetch, parsed
from tests.support import RunningServer, free_port, fresh_database_url, serve_env, serving


def feeds_cli(config: Config, *args: str, check: bool = True) -> Ran:
    """The CLI with the server's base URL, which the feed's URL starts with."""
    env = {"CALENDAR_DATABASE_URL": config.database_url, "CALENDAR_BASE_URL": config.base_url}
    return run_cli(env, *args, check=check)


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


def _bare_cli(env: dict[str, str], *args: str) -> Ran:
    """The CLI with ``env``'s database and base URL: none unless ``env`` has one."""
    settings = {name: env.get(name) for name in ("CALENDAR_DATABASE_URL", "CALENDAR_BASE_URL")}
    return run_cli(settings, *args, check=False)


def _made_by_cli(env: dict[str, str]) -> tuple[str, str]:
    email = f"feeds-{uuid.uuid4().hex[:8]}@example.com"
    assert _bare_cli(env, "users", "create", email).returncode == 0
    made = _bare_cli(env, "calendars", "create", "--user", email, "--name", "Work", "--json")
    assert made.returncode == 0, made.stderr
    return email, json.loads(made.stdout)["id"]


def test_feeds_create_prints_the_address_serve_serves_on_not_the_default_port(
    tmp_path: Path,
) -> None:
    with fresh_database_url(tmp_path) as url:
        env = serve_env(url)  # no CALENDAR_BASE_URL, as after `make run PORT=…`
        email, calendar_id = _made_by_cli(env)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with serving(env, base, "--port", str(port)) as client:
            made = _bare_cli(env, "feeds", "create", "--user", email, "--calendar", calendar_id)
            assert made.returncode == 0, made.stderr
            assert ":8000" not in made.stdout
            [link] = re.findall(r"http\S+", made.stdout)
            assert link.startswith(f"{base}/ical/"), made.stdout
            served = client.get(link)
            assert served.status_code == 200 and "BEGIN:VCALENDAR" in served.text

        # CALENDAR_BASE_URL, where it is set, says where the service is reached (a proxy).
        public = {**env, "CALENDAR_BASE_URL": "https://calendar.example.com/"}
        made = _bare_cli(public, "feeds", "create", "--user", email, "--calendar", calendar_id,
                         "--json")  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert json.loads(made.stdout)["url"].startswith("https://calendar.example.com/ical/")


def test_feeds_create_without_a_known_address_asks_for_calendar_base_url_and_makes_nothing(
    tmp_path: Path,
) -> None:
    with fresh_database_url(tmp_path) as url:
        env = serve_env(url)  # no serve has run on this database, no CALENDAR_BASE_URL
        email, calendar_id = _made_by_cli(env)
        refused = _bare_cli(env, "feeds", "create", "--user", email, "--calendar", calendar_id)
        assert refused.returncode == 1, refused.stdout
        assert "CALENDAR_BASE_URL" in refused.stderr
        assert "http" not in refused.stdout  # no link at all rather than a wrong one
        listed = _bare_cli(env, "feeds", "list", "--user", email, "--json")
        assert json.loads(listed.stdout) == {"feeds": []}  # nothing made, no secret lost


def test_feeds_reminder_sets_shows_and_clears_the_default_reminder(config: Config) -> None:
    email, _ = _owner_with_calendar(config)
    assert feeds_json(config, "feeds", "reminder", "--user", email) == {"minutesBefore": None}
    set_ = feeds_json(config, "feeds", "reminder", "--user", email, "--minutes", "15")
    assert set_ == {"minutesBefore": 15}
    shown = feeds_cli(config, "feeds", "reminder", "--user", email).stdout
    assert "15 minutes before each event" in shown
    refused = feeds_cli(
        config, "feeds", "reminder", "--user", email, "--minutes", "-5", check=False
    )
    assert refused.returncode == 2 and "minutesBefore" in refused.stderr
    cleared = feeds_json(config, "feeds", "reminder", "--user", email, "--minutes", "none")
    assert cleared == {"minutesBefore": None}
