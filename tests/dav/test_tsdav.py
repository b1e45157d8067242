"""tsdav (npm devDependency, run with node: ``tests/dav/tsdav_client.mjs``) against the
real server: discover, fetch calendars and a week's events, create, update, a stale update
refused, delete."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.dav.support import app_account
from tests.rest.conftest import EVENTS
from tests.support import Factory, RunningServer, bearer

SCRIPT = Path(__file__).with_name("tsdav_client.mjs")


def test_tsdav_discovers_reads_and_writes(
    server: RunningServer, api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    work = factory.calendar(app.owner, name="Work")
    rest = factory.key(app.owner)[1]
    made = api.post(
        EVENTS,
        json={
            "title": "Review",
            "calendarId": work,
            "startsAt": "2026-03-03T10:00:00Z",
            "endsAt": "2026-03-03T11:00:00Z",
        },
        headers=bearer(rest),
    )
    assert made.status_code == 201, made.text
    done = subprocess.run(
        ["node", str(SCRIPT), server.url, app.owner.email, app.secret],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (
        f"{done.stderr.decode()}\n(tsdav is an npm devDependency: `make node` or `npm ci`)"
    )
    seen = json.loads(done.stdout)
    assert seen == {
        "calendars": ["Work", "Личное"],
        "before": ["Review"],
        "created": 201,
        "fetched": True,
        "updated": 204,
        "stale": 412,
        "deleted": 204,
        "after": ["Review"],
    }
