"""``caldav-server-tester`` (the python-caldav project's compatibility checker, run by
``server_tester.py``) against the real server: every feature it finds short of full support
is one docs/caldav.md says is not supported (no MKCALENDAR or PROPPATCH, events only, no
scheduling or free-busy, filters on other properties, a cancelled occurrence kept as an
EXDATE...); everything else, the events' saving and loading, recurrences, time ranges,
expansion, text search, sync, ETags, is found fully supported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.caldav.support import app_account
from tests.support import Factory, RunningServer

TESTER = Path(__file__).with_name("server_tester.py")

# What the tester finds short of full support, each a gap docs/caldav.md names (or, for
# "unknown", one it could not probe because of such a gap: no calendar of its own to create).
KNOWN_GAPS = {
    "calendar-color", "calendar-color.name", "calendar-order",  # no PROPPATCH
    "create-calendar", "delete-calendar", "delete-calendar.free-namespace",  # no MKCALENDAR
    "synchronous-write.create-calendar", "synchronous-write.delete-calendar",
    "synchronous-write.proppatch", "url.encode-at.literal.collection",
    "save-load.todo", "save-load.journal", "search.time-range.todo",  # events only
    "search.time-range.todo.strict", "search.recurrences.expanded.todo",
    "search.recurrences.includes-implicit.todo",
    "search.recurrences.includes-implicit.todo.pending",
    "freebusy-query", "scheduling", "principal-search",  # no free-busy report, no RFC 6638
    "save-load.icalendar.related-to",  # an event here has no RELATED-TO (as an import)
    "save-load.event.recurrences.exception.cancelled",  # kept as an EXDATE
    "search.is-not-defined", "search.is-not-defined.category", "search.is-not-defined.class",
    "search.is-not-defined.dtend", "search.text.category", "search.time-range.alarm",
    "search.text.comp-type-optional", "search.time-range.comp-type-optional",  # filters
    "sync-token.limit",  # DAV:limit is not honoured: a sync answers every change
    "url.encode-at.identity", "url.encode-at.literal.principal", "well-known",
    "save", "save.etag", "search.combined-is-logical-and",  # not probed (no own calendar)
    "search.time-range.open", "search.time-range.open.start",
    "search.time-range.open.start.duration",
}  # fmt: skip


@pytest.mark.long
def test_caldav_server_tester_finds_what_we_claim(server: RunningServer, factory: Factory) -> None:
    app = app_account(factory)
    factory.calendar(app.owner, name="Tester")
    done = subprocess.run(
        [
            sys.executable, str(TESTER),
            "--caldav-url", server.url,
            "--caldav-username", app.owner.email,
            "--caldav-password", app.secret,
            "--caldav-calendar", "Tester",
            "--format", "json",
        ],
        capture_output=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = done.stdout.decode()
    report, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
    short = {
        name: found
        for name, found in report["features"].items()
        if found.get("support", "full") != "full"
    }
    assert set(short) <= KNOWN_GAPS, {k: v for k, v in short.items() if k not in KNOWN_GAPS}
    # Objects named by the client: its first object is not <UID>.ics, its second the same UID.
    assert "save.no-uid-conflict" in report["features"] and "save.no-uid-conflict" not in short
