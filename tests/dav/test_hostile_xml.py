"""Hostile XML: entities, external entities, huge and deeply nested bodies, malformed XML:
a clear 4xx, never a 5xx, nothing done."""

from __future__ import annotations

import httpx

from tests.dav.support import app_account, dav
from tests.support import Factory

LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
    '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname>&lol3;</d:displayname></d:prop></d:propfind>'
)
EXTERNAL = (
    '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname>&xxe;</d:displayname></d:prop></d:propfind>'
)


def test_hostile_xml_bodies_are_clear_4xx(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    nested = '<d:propfind xmlns:d="DAV:">' + "<d:x>" * 10_000 + "</d:x>" * 10_000 + "</d:propfind>"
    cases = {
        "entity expansion": (LAUGHS, 400),
        "external entity": (EXTERNAL, 400),
        "10,000 nested elements": (nested, 400),
        "malformed": ("<d:propfind xmlns:d='DAV:'><d:prop>", 400),
        "10 MB": ('<d:propfind xmlns:d="DAV:">' + " " * (10 * 1024 * 1024) + "</d:propfind>", 413),
    }
    for name, (body, status) in cases.items():
        for method in ("PROPFIND", "REPORT"):
            answer = dav(api, app, method, app.calendar(), body, Depth="0")
            assert answer.status_code == status, (name, method, answer.status_code)
            assert "passwd" not in answer.text and "root:" not in answer.text


def test_an_unknown_report_is_refused(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    body = '<?xml version="1.0"?><x:mine xmlns:x="urn:x"/>'
    answer = dav(api, app, "REPORT", app.calendar(), body)
    assert answer.status_code == 403
    assert "supported-report" in answer.text


def test_unsupported_filters_are_refused(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    body = (
        '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
        'xmlns:c="urn:ietf:params:xml:ns:caldav">'
        '<d:prop><d:getetag/></d:prop><c:filter><c:comp-filter name="VCALENDAR">'
        '<c:comp-filter name="VEVENT"><c:prop-filter name="ATTENDEE"><c:text-match>x</c:text-match>'
        "</c:prop-filter></c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
    )
    answer = dav(api, app, "REPORT", app.calendar(), body)
    assert answer.status_code == 403
    assert "supported-filter" in answer.text


def test_what_a_document_asks_is_refused_once_the_resource_is_found(
    api: httpx.Client, factory: Factory
) -> None:
    """The front reads what a document asks (``dav.asking``); what cannot be answered is
    raised by the core after it found the path: an unsupported filter is 403 on a calendar,
    404 where there is no calendar."""
    app = app_account(factory)
    body = (
        '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
        'xmlns:c="urn:ietf:params:xml:ns:caldav"><c:filter><c:comp-filter name="VCALENDAR">'
        '<c:comp-filter name="VEVENT"><c:time-range start="2026" end="20260101T000000Z"/>'
        "</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
    )
    on_calendar = dav(api, app, "REPORT", app.calendar(), body)
    assert on_calendar.status_code == 403 and "valid-filter" in on_calendar.text
    missing = app.calendar().rstrip("/") + "-gone/"
    assert dav(api, app, "REPORT", missing, body).status_code == 404
    proppatch = dav(api, app, "PROPPATCH", missing, "<d:nope xmlns:d='DAV:'/>")
    assert proppatch.status_code == 404


def test_odd_requests_get_a_clear_4xx_never_a_5xx(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    cal = app.calendar()
    query = (
        '<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'
        '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
        '<c:time-range start="nonsense" end="20260101T000000Z"/></c:comp-filter>'
        "</c:comp-filter></c:filter></c:calendar-query>"
    )
    cases = [
        ("PROPFIND", "/caldav/calendars/x/y/z/w/v", None, {"Depth": "0"}),
        ("PROPFIND", cal, "<d:nope xmlns:d='DAV:'/>", {"Depth": "0"}),
        ("PROPFIND", cal, None, {"Depth": "2"}),
        ("GET", cal, None, {}),
        ("GET", app.home, None, {}),
        ("REPORT", app.home, query, {}),
        ("REPORT", cal, query, {}),
        ("REPORT", cal, None, {}),
        ("REPORT", cal, "<c:calendar-query xmlns:c='urn:ietf:params:xml:ns:caldav'/>", {}),
        ("PUT", app.home + "x.ics", "x", {"Content-Type": "text/calendar"}),
        ("PUT", cal, "x", {"Content-Type": "text/calendar"}),
        ("DELETE", cal, None, {}),
        ("DELETE", cal + "nothing.ics", None, {}),
        ("PROPPATCH", cal, "<x/>", {}),
        ("MKCALENDAR", cal + "new/", None, {}),
        ("GET", cal + "bad%00name.ics", None, {}),
        ("REPORT", cal, '<c:calendar-multiget xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:'
         'caldav"><d:href>/caldav/%00.ics</d:href><d:href>http://x/y</d:href>'
         "</c:calendar-multiget>", {}),
    ]  # fmt: skip
    for method, path, body, headers in cases:
        answer = dav(api, app, method, path, body, **headers)
        assert 400 <= answer.status_code < 500 or answer.status_code == 207, (
            method,
            path,
            answer.status_code,
            answer.text,
        )
    odd = {"Authorization": "Basic " + "\u00ff\u00fe".encode("latin-1").hex(), "Depth": "0"}
    assert api.request("PROPFIND", "/caldav/", headers=odd).status_code == 401
