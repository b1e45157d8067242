"""``calendar-service import``: an .ics file into a calendar; the same file twice changes
nothing; what cannot be read is said, never a traceback."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from calendar_service.platform.config import Config
from tests.cli.support import cli, cli_json
from tests.rest.conftest import EVENTS
from tests.support import bearer

FILE = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Apple Inc.//macOS 14.0//EN
BEGIN:VEVENT
UID:3F1A-yoga@icloud.com
DTSTART;TZID=Europe/Berlin:20260303T180000
DTEND;TZID=Europe/Berlin:20260303T190000
RRULE:FREQ=WEEKLY;UNTIL=20260331T170000Z
SUMMARY:Yoga
END:VEVENT
BEGIN:VEVENT
UID:no-start@icloud.com
SUMMARY:When?
END:VEVENT
END:VCALENDAR
"""


def _owner(config: Config) -> tuple[str, str]:
    email = f"import-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    cal = cli_json(config, "calendars", "create", "--user", email, "--name", "Home",
                   "--time-zone", "Europe/Berlin")  # fmt: skip
    return email, cal["id"]


def test_import_reports_what_came_in_and_a_second_run_changes_nothing(
    config: Config, tmp_path: Path, api: httpx.Client
) -> None:
    email, calendar_id = _owner(config)
    path = tmp_path / "apple.ics"
    path.write_text(FILE)
    args = ("import", str(path), "--user", email, "--calendar", calendar_id)
    report = cli_json(config, *args)
    assert (report["created"], report["updated"], report["skipped"]) == (1, 0, 0)
    assert report["errors"] == [
        {"uid": "no-start@icloud.com", "message": "it has no DTSTART (when it starts)"}
    ]
    again = cli_json(config, *args)
    assert (again["created"], again["updated"], again["skipped"]) == (0, 0, 1)
    text = cli(config, *args).stdout
    assert "0 created, 0 updated, 1 unchanged, 1 not imported" in text
    assert "no-start@icloud.com" in text

    key = cli_json(config, "keys", "create", "--user", email, "--name", "r", "--calendar",
                   calendar_id)  # fmt: skip
    events = api.get(EVENTS, headers=bearer(key["secret"])).json()["events"]
    assert [e["startsAt"] for e in events] == [
        "2026-03-03T18:00:00+01:00",
        "2026-03-10T18:00:00+01:00",
        "2026-03-17T18:00:00+01:00",
        "2026-03-24T18:00:00+01:00",
        "2026-03-31T18:00:00+02:00",
    ]


def test_a_file_that_is_not_icalendar_or_not_there_is_refused_plainly(
    config: Config, tmp_path: Path
) -> None:
    email, calendar_id = _owner(config)
    path = tmp_path / "notes.ics"
    path.write_text("Dear diary,\n")
    refused = cli(config, "import", str(path), "--user", email, "--calendar", calendar_id,
                  check=False)  # fmt: skip
    assert refused.returncode == 2
    assert "error: Line 1 is outside any component" in refused.stderr
    assert "file:" in refused.stderr and "Traceback" not in refused.stderr

    missing = cli(config, "import", str(tmp_path / "nope.ics"), "--user", email,
                  "--calendar", calendar_id, check=False)  # fmt: skip
    assert missing.returncode == 2 and "cannot read" in missing.stderr

    other = cli(config, "import", str(path), "--user", email, "--calendar", "cal_nope",
                check=False)  # fmt: skip
    assert other.returncode == 2 and "Traceback" not in other.stderr
