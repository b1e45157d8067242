"""``caldav-server-tester`` (the python-caldav project's compatibility checker) against the
real server, as a user runs it: the plain CLI with the server's address, an email and an app
password, nothing else (no configuration, no calendar named). It makes its own calendars
(MKCALENDAR), runs every check to the end and deletes them again; every feature it finds
short of full support is one docs/caldav.md says is not supported (events only, no
scheduling or free-busy, filters on other properties, a cancelled occurrence kept as an
EXDATE...); everything else, the calendars' making and deleting, the events' saving and
loading, recurrences, time ranges, expansion, text search, sync, ETags, is found fully
supported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.dav.support import app_account, hrefs, propfind
from tests.support import Factory, RunningServer

TESTER = Path(sys.executable).with_name("caldav-server-tester")

# What the tester finds short of full support, each a gap docs/caldav.md names (or, for
# "unknown", one it could not probe because of such a gap).
KNOWN_GAPS = {
    "calendar-color", "calendar-color.name", "calendar-order",  # no PROPPATCH
    "synchronous-write.proppatch",
    "create-calendar.with-supported-component-types",  # a calendar keeps events whatever set
    "save-load.todo", "save-load.journal", "search.time-range.todo",  # events only
    "search.time-range.todo.strict", "search.recurrences.expanded.todo",
    "search.recurrences.includes-implicit.todo",
    "search.recurrences.includes-implicit.todo.pending",
    "freebusy-query", "scheduling", "principal-search",  # no free-busy report, no RFC 6638
    "principal-search.by-name.self", "principal-search.list-all",
    "save-load.icalendar.related-to",  # an event here has no RELATED-TO (as an import)
    "save-load.event.recurrences.exception.cancelled",  # kept as an EXDATE
    "search.is-not-defined", "search.is-not-defined.category", "search.is-not-defined.class",
    "search.is-not-defined.dtend", "search.text.category", "search.time-range.alarm",
    "search.text.comp-type-optional", "search.time-range.comp-type-optional",  # filters
    "sync-token.limit", "sync-token.limit.initial-sync",  # DAV:limit is not honoured
    "url.encode-at.identity",  # a second object of the other spelling is refused
    "url.encode-at.literal.principal", "well-known",  # not probed (localhost, principal)
    "save.etag", "search.combined-is-logical-and",  # not probed (see docs/caldav.md)
    "search.time-range.open", "search.time-range.open.start",
    "search.time-range.open.start.duration", "search.time-range.open.end",
}  # fmt: skip

_FOUND = re.compile(r"^## (\S+)\nFeature support level found: (\S+)", re.MULTILINE)


@pytest.mark.long
def test_the_plain_caldav_server_tester_runs_to_the_end_and_finds_only_known_gaps(
    server: RunningServer, api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    done = subprocess.run(
        [
            str(TESTER),
            "--caldav-url", server.url,
            "--caldav-username", app.owner.email,
            "--caldav-password", app.secret,
        ],
        capture_output=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "unexpected exception" not in err, err[-3000:]
    # Its report (text, as a user reads it) lists what it found other than its defaults.
    found = dict(_FOUND.findall(out))
    assert found, out[-3000:]
    short = {name: support for name, support in found.items() if support != "full"}
    assert set(short) <= KNOWN_GAPS, {k: v for k, v in short.items() if k not in KNOWN_GAPS}
    made = {
        "create-calendar", "create-calendar.set-displayname", "create-calendar.stable-url",
        "delete-calendar", "delete-calendar.free-namespace", "save.duplicate-uid.cross-calendar",
        "synchronous-write.create-calendar", "synchronous-write.delete-calendar",
    }  # fmt: skip
    assert not made & set(short), {name: short[name] for name in made & set(short)}
    assert found.get("save.no-uid-conflict") == "full"
    # It made its calendars and deleted them again: the owner has what it had.
    assert hrefs(propfind(api, app, app.home, depth="1")) == {app.home, app.calendar()}
