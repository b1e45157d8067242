"""Object names a calendar app chooses (RFC 4791 §5.3.2: the client names the resource it
PUTs): kept as sent, and the object found, listed, fetched, changed and deleted there; one
UID at one name only (``no-uid-conflict``, with the href of the object that has it); a name
no path can hold refused with a clear 400."""

from __future__ import annotations

import base64
import http.client
from datetime import UTC, datetime
from urllib.parse import quote
from xml.etree.ElementTree import register_namespace

import caldav
import defusedxml.ElementTree as SafeET
import httpx
import pytest
from sqlalchemy import select

from calendar_service.dav import documents
from calendar_service.governance.proposals import proposals_t
from tests.dav.support import (
    App,
    C,
    app_account,
    dav,
    error_code,
    error_condition,
    hrefs,
    ics,
    propfind,
    put,
    responses,
    sync_token_of,
)
from tests.rest.conftest import EVENTS
from tests.rest.test_proposals import approved
from tests.support import Factory, RunningServer, bearer

PROP_DATA = "<d:prop><d:getetag/><c:calendar-data/></d:prop>"
WEEK = (
    '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
    f'xmlns:c="urn:ietf:params:xml:ns:caldav">{PROP_DATA}'
    '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
    '<c:time-range start="20260301T000000Z" end="20260308T000000Z"/>'
    "</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
)


def _path(app: App, name: str) -> str:
    return app.calendar() + quote(name, safe="@")


def _multiget(api: httpx.Client, app: App, *names: str) -> httpx.Response:
    refs = "".join(f"<d:href>{_path(app, n)}</d:href>" for n in names)
    body = (
        '<?xml version="1.0"?><c:calendar-multiget xmlns:d="DAV:" '
        f'xmlns:c="urn:ietf:params:xml:ns:caldav">{PROP_DATA}{refs}</c:calendar-multiget>'
    )
    return dav(api, app, "REPORT", app.calendar(), body, Depth="1")


def _sync(api: httpx.Client, app: App, token: str = "") -> httpx.Response:
    body = (
        '<?xml version="1.0"?><d:sync-collection xmlns:d="DAV:">'
        f"<d:sync-token>{token}</d:sync-token><d:sync-level>1</d:sync-level>"
        "<d:prop><d:getetag/></d:prop></d:sync-collection>"
    )
    return dav(api, app, "REPORT", app.calendar(), body)


def test_an_object_is_kept_at_the_name_the_app_put_it_under(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    rest = factory.key(app.owner)[1]
    made = api.post(
        EVENTS,
        json={
            "title": "Lunch",
            "startsAt": "2026-03-03T12:00:00Z",
            "endsAt": "2026-03-03T13:00:00Z",
        },
        headers=bearer(rest),
    ).json()
    name = "my appointment.ics"
    path = _path(app, name)
    before = _sync(api, app)
    created = put(api, app, path, ics("uid-of-the-appointment"), If_None_Match="*")
    assert created.status_code == 201, created.text
    got = dav(api, app, "GET", path)
    assert got.status_code == 200 and "UID:uid-of-the-appointment" in got.text
    assert dav(api, app, "GET", app.calendar() + "uid-of-the-appointment.ics").status_code == 404
    base = app.calendar()
    rest_name = f"{made['id']}.ics"  # an event made over REST keeps <UID>.ics
    listed = hrefs(propfind(api, app, base, "<d:getetag/>", depth="1"))
    assert listed == {base, base + name, base + rest_name}
    week = responses(dav(api, app, "REPORT", base, WEEK, Depth="1"))
    assert {href for href in week} == {path, base + rest_name}
    fetched = responses(_multiget(api, app, name, "uid-of-the-appointment.ics"))
    assert "Dentist" in fetched[path]["found"][f"{C}calendar-data"].text
    assert " 404 " in fetched[base + "uid-of-the-appointment.ics"]["status"]
    assert hrefs(_sync(api, app, sync_token_of(before))) == {base + name}

    etag = got.headers["etag"]
    moved = put(api, app, path, ics("uid-of-the-appointment", summary="Moved"), If_Match=etag)
    assert moved.status_code == 204, moved.text
    assert "SUMMARY:Moved" in dav(api, app, "GET", path).text
    token = sync_token_of(_sync(api, app))
    assert dav(api, app, "DELETE", path).status_code == 204
    assert dav(api, app, "GET", path).status_code == 404
    gone = responses(_sync(api, app, token))
    assert list(gone) == [path] and " 404 " in gone[path]["status"]
    assert [e["title"] for e in api.get(EVENTS, headers=bearer(rest)).json()["events"]] == ["Lunch"]


@pytest.mark.parametrize(
    "name",
    [
        "with spaces and a comma, too.ics",
        "Café ☕ 日本.ics",
        "no-suffix",
        "100% sure+plus@at.ics",
        "dots.in.the.middle..ics",
    ],
)
def test_names_with_unusual_but_legal_characters_round_trip(
    api: httpx.Client, factory: Factory, name: str
) -> None:
    app = app_account(factory)
    path = _path(app, name)
    assert put(api, app, path, ics("odd-name")).status_code == 201
    assert "UID:odd-name" in dav(api, app, "GET", path).text
    assert hrefs(propfind(api, app, app.calendar(), "<d:getetag/>", depth="1")) == {
        app.calendar(),
        app.calendar() + name,
    }
    assert put(api, app, path, ics("odd-name", summary="Again")).status_code == 204
    assert dav(api, app, "DELETE", path).status_code == 204


def test_a_uid_already_at_another_name_is_a_uid_conflict_naming_that_object(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    first = _path(app, "first one.ics")
    assert put(api, app, first, ics("shared-uid")).status_code == 201
    for other in ("second.ics", "shared-uid.ics"):
        answer = put(api, app, _path(app, other), ics("shared-uid", summary="Copy"))
        assert answer.status_code == 403, answer.text
        assert error_condition(answer) == [f"{C}no-uid-conflict"]
        assert answer.text.count("<d:href>") == 1 and f"<d:href>{first}</d:href>" in answer.text
    # An object's UID does not change under it either.
    changed = put(api, app, first, ics("another-uid"))
    assert changed.status_code == 403
    assert error_condition(changed) == [f"{C}valid-calendar-object-resource"]
    assert "SUMMARY:Dentist" in dav(api, app, "GET", first).text


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("x" * 256 + ".ics", "255"),
        ("a%2Fb.ics", "/"),
        ("..", ".."),
        ("%2E%2E", ".."),
        (".", "'.'"),
        ("bad%00name.ics", "control"),
        ("bad%01name.ics", "control"),
        ("tab%09name.ics", "control"),
    ],
)
def test_a_name_no_object_can_have_is_a_clear_400(
    server: RunningServer, api: httpx.Client, factory: Factory, raw: str, said: str
) -> None:
    app = app_account(factory)
    # Sent as written (httpx would take '..' out of the path): the raw request line.
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(
            "PUT",
            app.calendar() + raw,
            body=ics("hostile").encode(),
            headers={"Content-Type": "text/calendar", "Authorization": _basic(app)},
        )
        got = conn.getresponse()
        answer = httpx.Response(got.status, content=got.read())
    finally:
        conn.close()
    assert answer.status_code == 400, answer.text
    assert error_code(answer) == "dav_bad_name"
    assert said in answer.text
    assert hrefs(propfind(api, app, app.calendar(), "<d:getetag/>", depth="1")) == {app.calendar()}


def _basic(app: App) -> str:
    return "Basic " + base64.b64encode(f"{app.owner.email}:{app.secret}".encode()).decode()


def test_the_caldav_client_keeps_an_object_at_its_own_name(
    server: RunningServer, api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    with caldav.DAVClient(url=server.url, username=app.owner.email, password=app.secret) as client:
        calendar = client.principal().get_calendars()[0]
        url = calendar.url.join(quote("Réunion du lundi"))
        made = caldav.Event(client, url=url, data=ics("named-by-client"), parent=calendar)
        made.save()
        assert str(made.url) == str(url)
        (found,) = calendar.search(
            start=datetime(2026, 3, 2, tzinfo=UTC), end=datetime(2026, 3, 3, tzinfo=UTC), event=True
        )
        assert str(found.url) == str(url)
        loaded = calendar.event_by_url(url)
        loaded.load()
        assert str(loaded.icalendar_component["UID"]) == "named-by-client"
        loaded.icalendar_component["SUMMARY"] = "Moved"
        loaded.save()
        assert str(calendar.event_by_uid("named-by-client").url) == str(url)
        loaded.delete()
        assert calendar.events() == []


def test_a_named_object_that_waited_for_approval_is_at_its_name_once_approved(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory, approval="all")
    path = _path(app, "waited for you.ics")
    assert put(api, app, path, ics("waited")).status_code == 202
    assert dav(api, app, "GET", path).status_code == 404
    (proposal_id,) = factory.db.call(
        lambda conn: (
            conn.execute(select(proposals_t.c.id).where(proposals_t.c.key_id == app.key_id))
            .scalars()
            .all()
        )
    )
    assert approved(factory, app.owner, proposal_id)["status"] == "approved"
    assert "UID:waited" in dav(api, app, "GET", path).text
    assert hrefs(propfind(api, app, app.calendar(), "<d:getetag/>", depth="1")) == {
        app.calendar(),
        app.calendar() + "waited for you.ics",
    }


def test_a_dav_error_keeps_its_prefixes_whatever_a_library_beside_it_registers() -> None:
    # ElementTree's prefixes are the process's: a client library imported beside the server
    # (the caldav library, xandikos) registers its own. DAV:error is written with ours.
    register_namespace("Z", "DAV:")
    try:
        body = documents.error_body(
            f"{C}no-uid-conflict", "Taken <here>", "/dav/a b.ics", "dav_precondition"
        )
    finally:
        register_namespace("d", "DAV:")
    assert b"<cal:no-uid-conflict><d:href>/dav/a b.ics</d:href></cal:no-uid-conflict>" in body
    assert b"Taken &lt;here&gt;" in body and b"Z:" not in body
    assert SafeET.fromstring(body).tag == "{DAV:}error"
