"""``calendar-service calendars update|delete``, against the running server's database: a
rename and a re-zone reach the API at once; a deletion asks first, takes the calendar's events
and revokes its keys."""

from __future__ import annotations

import uuid

import httpx

from calendar_service.platform.config import Config
from tests.cli.support import cli, cli_json
from tests.rest.conftest import EVENTS
from tests.support import RunningServer, bearer


def _owner(config: Config) -> tuple[str, str, str]:
    """A new owner (email), a calendar "Work" of theirs and a write key for it alone."""
    email = f"cals-{uuid.uuid4().hex[:8]}@example.com"
    user = cli_json(config, "users", "create", email)
    assert user["defaultCalendarId"]
    cal = cli_json(config, "calendars", "create", "--user", email, "--name", "Work")
    key = cli_json(config, "keys", "create", "--user", email, "--name", "k",
                   "--permission", "write", "--calendar", cal["id"])  # fmt: skip
    return email, cal["id"], key["secret"]


def test_a_calendar_is_renamed_and_re_zoned_and_the_api_shows_it_at_once(
    config: Config, server: RunningServer, api: httpx.Client
) -> None:
    _, calendar_id, secret = _owner(config)
    made = api.post(
        EVENTS,
        json={"title": "T", "startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T10:00:00Z"},
        headers=bearer(secret),
    )
    assert made.status_code == 201, made.text
    changed = cli_json(config, "calendars", "update", calendar_id, "--name", "Office",
                       "--time-zone", "Europe/Berlin")  # fmt: skip
    assert changed == {
        "id": calendar_id,
        "name": "Office",
        "timeZone": "Europe/Berlin",
        "isDefault": False,
        "color": None,
        "readOnly": False,
    }
    listed = api.get(EVENTS, headers=bearer(secret)).json()
    assert [(e["calendar"], e["startsAt"]) for e in listed["events"]] == [
        ("Office", "2026-03-02T10:00:00+01:00")
    ]
    text = cli(config, "calendars", "update", calendar_id, "--name", "Work").stdout
    assert text.strip() == f"calendar {calendar_id}: 'Work', Europe/Berlin"


def test_a_calendar_gets_a_colour_when_made_or_updated_and_loses_it_and_a_bad_one_exits_2(
    config: Config,
) -> None:
    email = f"cals-{uuid.uuid4().hex[:8]}@example.com"
    cli_json(config, "users", "create", email)
    made = cli_json(config, "calendars", "create", "--user", email, "--name", "Work",
                    "--color", "#1A73E8")  # fmt: skip
    assert made["color"] == "#1a73e8"
    text = cli(config, "calendars", "update", made["id"], "--color", "#0b8043").stdout
    assert text.strip() == f"calendar {made['id']}: 'Work', UTC, #0b8043"
    assert cli_json(config, "calendars", "update", made["id"], "--color", "")["color"] is None
    refused = cli(config, "calendars", "update", made["id"], "--color", "green", check=False)
    assert refused.returncode == 2
    assert "color:" in refused.stderr and "#rrggbb" in refused.stderr
    refused = cli(config, "calendars", "create", "--user", email, "--name", "Home",
                  "--color", "#12345", check=False)  # fmt: skip
    assert refused.returncode == 2 and "color:" in refused.stderr


def test_an_update_with_bad_fields_exits_2_naming_each_and_changes_nothing(
    config: Config,
) -> None:
    email, calendar_id, _ = _owner(config)
    refused = cli(config, "calendars", "update", calendar_id, "--name", " ",
                  "--time-zone", "Mars/Olympus", check=False)  # fmt: skip
    assert refused.returncode == 2
    assert "name:" in refused.stderr and "timeZone:" in refused.stderr
    assert (
        cli(config, "calendars", "update", "cal_nope", "--name", "x", check=False).returncode == 1
    )
    listed = cli_json(config, "calendars", "list", "--user", email)["calendars"]
    assert [(c["name"], c["timeZone"]) for c in listed] == [("Личное", "UTC"), ("Work", "UTC")]


def test_a_deletion_asks_first_and_without_a_terminal_needs_yes(config: Config) -> None:
    email, calendar_id, _ = _owner(config)
    asked = cli(config, "calendars", "delete", calendar_id, check=False)
    assert asked.returncode == 2
    assert "--yes" in asked.stderr
    listed = cli_json(config, "calendars", "list", "--user", email)["calendars"]
    assert calendar_id in {c["id"] for c in listed}


def test_a_deleted_calendar_takes_its_events_and_its_keys_stop_working(
    config: Config, server: RunningServer, api: httpx.Client
) -> None:
    email, calendar_id, secret = _owner(config)
    for day in (2, 3):
        made = api.post(
            EVENTS,
            json={"title": "T", "startsAt": f"2026-03-0{day}", "endsAt": f"2026-03-0{day}",
                  "allDay": True},
            headers=bearer(secret),
        )  # fmt: skip
        assert made.status_code == 201, made.text
    out = cli_json(config, "calendars", "delete", calendar_id, "--user", email, "--yes")
    assert out == {
        "id": calendar_id,
        "name": "Work",
        "timeZone": "UTC",
        "isDefault": False,
        "color": None,
        "readOnly": False,
        "deletedEvents": 2,
        "revokedKeys": 1,
        "revokedFeeds": 0,
    }
    refused = api.get(EVENTS, headers=bearer(secret))
    assert refused.status_code == 401
    assert refused.json()["code"] == "revoked_api_key"
    assert "the calendar it was limited to has been deleted" in refused.json()["detail"]
    [key] = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert (key["state"], key["revokedBy"], key["calendarId"]) == (
        "revoked",
        "calendar",
        calendar_id,
    )
    listed = cli_json(config, "calendars", "list", "--user", email)["calendars"]
    assert [c["name"] for c in listed] == ["Личное"]
    again = cli(config, "calendars", "delete", calendar_id, "--yes", check=False)
    assert again.returncode == 1 and "No calendar" in again.stderr


def test_the_default_calendar_cannot_be_deleted_from_the_cli(config: Config) -> None:
    email = f"cals-{uuid.uuid4().hex[:8]}@example.com"
    default = cli_json(config, "users", "create", email)["defaultCalendarId"]
    refused = cli(config, "calendars", "delete", default, "--yes", check=False)
    assert refused.returncode == 1
    assert "default calendar cannot be deleted" in refused.stderr
    as_json = cli(config, "calendars", "delete", default, "--yes", "--json", check=False)
    assert (as_json.returncode, as_json.stdout) == (1, "")
