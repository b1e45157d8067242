"""Three outside readers agree with the list on a feed's occurrences next to a DST change
(issue 24, item 2): ``recurring-ical-events`` (Python), ``ical.js`` and ``node-ical`` (npm
devDependencies, run with node: ``tests/rest/ical/readers.mjs``), for occurrences in the autumn
fold, in the spring gap, spanning a change, and a cancelled one in the fold; and a series in
another zone than its calendar's, read back by the import occurrence for occurrence."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import httpx
from icalendar import Calendar

from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS
from tests.rest.ical.support import (
    ICS,
    IMPORT,
    Occurrence,
    expanded,
    fetch,
    listed_occurrences,
    make_feed,
)
from tests.rest.recurrence_support import Cal, calendar_in, create, listed
from tests.support import Factory

ROOT = Path(__file__).resolve().parents[3]
WINDOW = (datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))

Seen = list[tuple[str, str, str]]


def _texts(occurrences: list[Occurrence]) -> Seen:
    def text(value: datetime) -> str:
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    return sorted((title, text(start), text(end)) for title, start, end, _ in occurrences)


def _javascript(body: bytes) -> dict[str, Seen]:
    """What ical.js and node-ical make of the feed, over ``WINDOW``."""
    done = subprocess.run(
        ["node", str(ROOT / "tests/rest/ical/readers.mjs"), *(w.isoformat() for w in WINDOW)],
        input=body,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (
        f"{done.stderr.decode()}\n(the readers are npm devDependencies: `make node` or `npm ci`)"
    )
    found = json.loads(done.stdout)
    return {name: sorted(map(tuple, found[name])) for name in ("icaljs", "nodeical")}


def _night_series(api: httpx.Client, cal: Cal) -> None:
    """Daily series in New York at the times readers used to read otherwise."""
    create(api, cal, title="Fold", startsAt="2026-10-30T01:30", endsAt="2026-10-30T02:00",
           recurrence=["RRULE:FREQ=DAILY;COUNT=5"])  # fmt: skip
    create(api, cal, title="Gap", startsAt="2026-03-06T02:30", endsAt="2026-03-06T03:15",
           recurrence=["RRULE:FREQ=DAILY;COUNT=4"])  # fmt: skip
    create(api, cal, title="Across", startsAt="2026-10-30T00:30", endsAt="2026-10-30T02:00",
           recurrence=["RRULE:FREQ=DAILY;COUNT=4"])  # fmt: skip
    cancelled = create(api, cal, title="Cancelled in the fold", startsAt="2026-10-31T01:15",
                       endsAt="2026-10-31T01:45",
                       recurrence=["RRULE:FREQ=DAILY;COUNT=3"])  # fmt: skip
    # 1 November 01:15 New York is 05:15Z (the first of the two 01:15s, EDT).
    gone = api.delete(f"{EVENTS}/{cancelled['id']}_20261101T051500Z", headers=cal.headers)
    assert gone.status_code == 204, gone.text


def test_three_outside_readers_read_the_fold_and_the_gap_as_the_list_does(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "America/New_York")
    _night_series(api, cal)
    body = fetch(make_feed(db, config, cal.owner, cal.id)["url"]).content

    ours = _texts(listed_occurrences(api, cal, *WINDOW))
    # The occurrences RFC 5545 means: the first of the two 01:30s, 02:30 read as 03:30, each
    # lasting its exact length.
    assert ("Fold", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z") in ours
    assert ("Gap", "2026-03-08T07:30:00Z", "2026-03-08T08:15:00Z") in ours
    assert ("Across", "2026-11-01T04:30:00Z", "2026-11-01T06:00:00Z") in ours
    assert [o for o in ours if o[0] == "Cancelled in the fold"] == [
        ("Cancelled in the fold", "2026-10-31T05:15:00Z", "2026-10-31T05:45:00Z"),
        ("Cancelled in the fold", "2026-11-02T06:15:00Z", "2026-11-02T06:45:00Z"),
    ]
    assert len([o for o in ours if o[0] == "Gap"]) == 4  # COUNT=4, the gap's one included

    assert _texts(expanded(Calendar.from_ical(body), *WINDOW)) == ours
    javascript = _javascript(body)
    assert javascript["icaljs"] == ours
    assert javascript["nodeical"] == ours


def test_the_feed_of_the_fold_and_the_gap_imports_back_occurrence_for_occurrence(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    source = calendar_in(factory, "America/New_York")
    _night_series(api, source)
    body = fetch(make_feed(db, config, source.owner, source.id)["url"]).content
    target = calendar_in(factory, "America/New_York")
    answer = api.post(IMPORT, content=body, headers={**target.headers, **ICS})
    assert answer.status_code == 200, answer.text
    # The DST-edge exceptions change nothing: read as the occurrences they are, not stored.
    assert answer.json() == {"created": 4, "updated": 0, "skipped": 0, "errors": [],
                             "warnings": []}  # fmt: skip
    assert listed_occurrences(api, target, *WINDOW) == listed_occurrences(api, source, *WINDOW)
    changed = [e for e in listed(api, target, singleEvents="false") if "recurrence" not in e]
    assert changed == []


def test_a_series_in_another_zone_than_its_calendar_reads_the_same_everywhere(
    api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    series = create(api, cal, title="New York sync", startsAt="2026-03-02T10:00",
                    endsAt="2026-03-02T10:30", timeZone="America/New_York",
                    recurrence=["RRULE:FREQ=DAILY;COUNT=40"])  # fmt: skip
    moved = api.patch(f"{EVENTS}/{series['id']}_20260310T140000Z",
                      json={"startsAt": "2026-03-10T13:00", "endsAt": "2026-03-10T13:30"},
                      headers=cal.headers)  # fmt: skip
    assert moved.status_code == 200, moved.text
    gone = api.delete(f"{EVENTS}/{series['id']}_20260312T140000Z", headers=cal.headers)
    assert gone.status_code == 204
    body = fetch(make_feed(db, config, cal.owner, cal.id)["url"]).content
    assert b"DTSTART;TZID=America/New_York:20260302T100000" in body

    ours = _texts(listed_occurrences(api, cal, *WINDOW))
    assert ("New York sync", "2026-03-09T14:00:00Z", "2026-03-09T14:30:00Z") in ours
    assert ("New York sync", "2026-03-10T17:00:00Z", "2026-03-10T17:30:00Z") in ours
    assert _texts(expanded(Calendar.from_ical(body), *WINDOW)) == ours
    javascript = _javascript(body)
    assert javascript["icaljs"] == ours
    assert javascript["nodeical"] == ours

    target = calendar_in(factory, "Europe/Berlin")
    answer = api.post(IMPORT, content=body, headers={**target.headers, **ICS})
    assert answer.json()["created"] == 1, answer.text
    assert _texts(listed_occurrences(api, target, *WINDOW)) == ours
    (copy,) = [e for e in listed(api, target, singleEvents="false") if "recurrence" in e]
    assert copy["timeZone"] == "America/New_York"
