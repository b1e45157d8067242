"""Calendars made and deleted over CalDAV (RFC 4791 §5.3.1 MKCALENDAR, RFC 4918 §9.6 DELETE
of a collection): an app password that writes to all its owner's calendars makes one at a
name of its choosing under the calendar home, with the body's name, zone and component set;
it is one of the owner's calendars like any other (REST writes to it by name); refusals
are RFC 4791's (405 where something is, 409 outside the home, 403 for a key that may not)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from urllib.parse import quote

import caldav
import httpx

from tests.dav.support import (
    C,
    D,
    app_account,
    dav,
    error_code,
    error_condition,
    hrefs,
    ics,
    propfind,
    put,
    responses,
)
from tests.rest.conftest import EVENTS
from tests.support import Factory, RunningServer, bearer

BERLIN = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tests//EN\r\nBEGIN:VTIMEZONE\r\n"
    "TZID:Europe/Berlin\r\nBEGIN:STANDARD\r\nDTSTART:19701025T030000\r\nTZOFFSETFROM:+0200\r\n"
    "TZOFFSETTO:+0100\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\nEND:VCALENDAR\r\n"
)


def _mkcalendar(*props: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'
        f"<d:set><d:prop>{''.join(props)}</d:prop></d:set></c:mkcalendar>"
    )


def _components(*names: str) -> str:
    comps = "".join(f'<c:comp name="{n}"/>' for n in names)
    return f"<c:supported-calendar-component-set>{comps}</c:supported-calendar-component-set>"


def test_mkcalendar_makes_a_calendar_of_the_owner_at_the_name_asked(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    path = app.home + "work-2026/"
    body = _mkcalendar(
        "<d:displayname>Work 2026</d:displayname>",
        f"<c:calendar-timezone><![CDATA[{BERLIN}]]></c:calendar-timezone>",
        _components("VEVENT"),
    )
    made = dav(api, app, "MKCALENDAR", path, body)
    assert made.status_code == 201, made.text
    # The home lists it at that name, a calendar with its name and zone.
    assert path in hrefs(propfind(api, app, app.home, depth="1"))
    found = responses(propfind(api, app, path, "<d:displayname/>", "<c:calendar-timezone/>"))
    props = found[path]["found"]
    assert props[f"{D}displayname"].text == "Work 2026"
    assert "TZID:Europe/Berlin" in (props[f"{C}calendar-timezone"].text or "")
    # Events go in over CalDAV, and over REST by the calendar's name (the same calendar).
    assert put(api, app, path + "a.ics", ics("a@example.com")).status_code == 201
    rest = api.post(
        EVENTS,
        json={
            "calendar": "Work 2026",
            "title": "Review",
            "startsAt": "2026-03-03T09:00:00Z",
            "endsAt": "2026-03-03T10:00:00Z",
        },
        headers=bearer(app.secret),
    )
    assert rest.status_code == 201, rest.text
    listed = api.get(EVENTS, params={"calendarIds": "Work 2026"}, headers=bearer(app.secret))
    assert sorted(e["title"] for e in listed.json()["events"]) == ["Dentist", "Review"]


def test_mkcalendar_without_a_body_names_the_calendar_after_its_path(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    path = app.home + "csc_probe@example.com/"
    made = dav(api, app, "MKCALENDAR", path)
    assert made.status_code == 201, made.text
    encoded = app.home + quote("csc_probe@example.com", safe="") + "/"
    assert dav(api, app, "PROPFIND", encoded, Depth="0").status_code == 207
    found = responses(propfind(api, app, path, "<d:displayname/>"))
    assert [p["found"][f"{D}displayname"].text for p in found.values()] == ["csc_probe@example.com"]


def test_mkcalendar_takes_a_set_of_components_it_keeps_events_of(
    api: httpx.Client, factory: Factory
) -> None:
    """A set with VEVENT is what is stored; one of to-dos only (a client's task list) is made
    as an event calendar, and says so (its component set is VEVENT; a to-do PUT into it is
    refused, as everywhere here)."""
    app = app_account(factory)
    made = dav(api, app, "MKCALENDAR", app.home + "tasks/", _mkcalendar(_components("VTODO")))
    assert made.status_code == 201, made.text
    props = responses(
        propfind(api, app, app.home + "tasks/", "<c:supported-calendar-component-set/>")
    )
    comps = next(iter(props.values()))["found"][f"{C}supported-calendar-component-set"]
    assert [comp.get("name") for comp in comps] == ["VEVENT"]
    todo = ics("t@example.com").replace("VEVENT", "VTODO")
    refused = put(api, app, app.home + "tasks/t.ics", todo)
    assert refused.status_code == 403
    assert error_condition(refused) == [f"{C}supported-calendar-component"]


def test_mkcalendar_is_refused_where_something_is_or_outside_the_home(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    assert dav(api, app, "MKCALENDAR", app.home + "one/").status_code == 201
    again = dav(api, app, "MKCALENDAR", app.home + "one/")
    assert again.status_code == 405
    assert error_condition(again) == [f"{D}resource-must-be-null"]
    default = dav(api, app, "MKCALENDAR", app.calendar())
    assert default.status_code == 405
    inside = dav(api, app, "MKCALENDAR", app.home + "one/two/")
    assert inside.status_code == 409
    assert error_condition(inside) == [f"{C}calendar-collection-location-ok"]
    home = dav(api, app, "MKCALENDAR", app.home)
    assert home.status_code == 405
    other = factory.owner()
    elsewhere = dav(api, app, "MKCALENDAR", f"/caldav/calendars/{other.id}/mine/")
    assert elsewhere.status_code == 403
    assert error_condition(elsewhere) == [f"{D}need-privileges"]


def test_mkcalendar_refuses_a_name_taken_a_bad_zone_and_keys_that_may_not(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    taken_id = factory.calendar(app.owner, name="Taken")
    taken = dav(
        api, app, "MKCALENDAR", app.home + "x/", _mkcalendar("<d:displayname>Taken</d:displayname>")
    )
    assert taken.status_code == 403
    assert error_code(taken) == "dav_precondition"
    assert "displayname" in taken.text and "Taken" in taken.text
    zone = dav(
        api,
        app,
        "MKCALENDAR",
        app.home + "y/",
        _mkcalendar("<c:calendar-timezone>BEGIN:VCALENDAR</c:calendar-timezone>"),
    )
    assert zone.status_code == 403
    assert error_condition(zone) == [f"{C}valid-calendar-data"]
    assert "calendar-timezone" in zone.text
    bad = dav(api, app, "MKCALENDAR", app.home + "z/", "<not-xml")
    assert bad.status_code == 400
    for name in ("%01z", "z" * 256):
        badly = dav(api, app, "MKCALENDAR", app.home + name + "/")
        assert badly.status_code == 400 and error_code(badly) == "dav_bad_name"
        assert "calendar's name" in badly.text
    reader = app_account(factory, app.owner, permission="read")
    assert dav(api, reader, "MKCALENDAR", app.home + "r/").status_code == 403
    one = app_account(factory, app.owner, calendar_id=app.owner.default_calendar_id)
    narrow = dav(api, one, "MKCALENDAR", app.home + "n/")
    assert narrow.status_code == 403
    assert error_condition(narrow) == [f"{D}need-privileges"]
    waits = app_account(factory, app.owner, approval="all")
    held = dav(api, waits, "MKCALENDAR", app.home + "w/")
    assert held.status_code == 403 and "approval" in held.text
    # Nothing of these was made.
    listed = hrefs(propfind(api, app, app.home, depth="1"))
    assert listed == {app.home, app.calendar(), app.calendar(taken_id)}


def test_delete_of_a_calendar_deletes_it_and_frees_its_name(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    path = app.home + "trip/"
    assert (
        dav(
            api, app, "MKCALENDAR", path, _mkcalendar("<d:displayname>Trip</d:displayname>")
        ).status_code
        == 201
    )
    assert put(api, app, path + "a.ics", ics("a@example.com")).status_code == 201
    gone = dav(api, app, "DELETE", path)
    assert gone.status_code == 204, gone.text
    assert dav(api, app, "PROPFIND", path, Depth="0").status_code == 404
    assert path not in hrefs(propfind(api, app, app.home, depth="1"))
    listed = api.get(EVENTS, params={"calendarIds": "Trip"}, headers=bearer(app.secret))
    assert listed.status_code == 400
    # The name is free again: the same path and name make a new calendar.
    assert (
        dav(
            api, app, "MKCALENDAR", path, _mkcalendar("<d:displayname>Trip</d:displayname>")
        ).status_code
        == 201
    )
    # The default calendar is kept; a read key deletes nothing.
    kept = dav(api, app, "DELETE", app.calendar())
    assert kept.status_code == 409
    assert error_code(kept) == "default_calendar"
    reader = app_account(factory, app.owner, permission="read")
    assert dav(api, reader, "DELETE", path).status_code == 403
    waits = app_account(factory, app.owner, approval="destructive")
    assert dav(api, waits, "DELETE", path).status_code == 403
    assert path in hrefs(propfind(api, app, app.home, depth="1"))
    assert dav(api, app, "DELETE", app.home + "never/").status_code == 404


def test_the_caldav_client_makes_and_deletes_a_calendar(
    server: RunningServer, factory: Factory
) -> None:
    app = app_account(factory)
    with caldav.DAVClient(url=server.url, username=app.owner.email, password=app.secret) as client:
        principal = client.principal()
        made = principal.make_calendar(name="Holidays", cal_id="holidays")
        assert str(made.url).endswith(app.home + "holidays/")
        assert "Holidays" in [c.get_display_name() for c in principal.calendars()]
        made.save_event(
            dtstart=datetime(2026, 3, 2, 9, tzinfo=UTC),
            dtend=datetime(2026, 3, 2, 10, tzinfo=UTC),
            summary="Beach",
            uid="beach@example.com",
        )
        assert [e.component["summary"] for e in made.events()] == ["Beach"]
        made.delete()
        assert "Holidays" not in [c.get_display_name() for c in principal.calendars()]


def test_mkcalendars_at_one_path_at_once_make_one_calendar(
    server: RunningServer, factory: Factory
) -> None:
    app = app_account(factory)
    body = _mkcalendar("<d:displayname>Shared</d:displayname>")

    def make(n: int) -> int:
        path = app.home + ("same/" if n % 2 else f"other-{n}/")
        with httpx.Client(base_url=server.url, timeout=30) as client:
            return dav(client, app, "MKCALENDAR", path, body).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(make, range(8)))
    # One calendar named "Shared" at one path: the others are refused, none is an error.
    assert statuses.count(201) == 1 and set(statuses) <= {201, 403, 405}, statuses
