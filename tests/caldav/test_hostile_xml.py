"""Hostile XML: entities, external entities, huge and deeply nested bodies, malformed XML:
a clear 4xx, never a 5xx, nothing done."""

from __future__ import annotations

import httpx

from tests.caldav.support import app_account, dav
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
