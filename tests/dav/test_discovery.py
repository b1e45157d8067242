"""Discovery from the base address alone (RFC 6764, RFC 5397, RFC 4791 §6.2), and PROPFIND."""

from __future__ import annotations

import httpx

from tests.dav.support import CS, C, D, app_account, dav, error_condition, propfind, responses
from tests.support import Factory


def test_well_known_redirects_to_the_caldav_root(api: httpx.Client) -> None:
    for method in ("GET", "PROPFIND"):
        answer = api.request(method, "/.well-known/caldav")
        assert answer.status_code == 301
        assert answer.headers["location"].endswith("/caldav/")


def test_options_says_it_is_caldav(api: httpx.Client) -> None:
    answer = api.request("OPTIONS", "/caldav/")
    assert answer.status_code == 200
    assert "calendar-access" in answer.headers["dav"]
    assert "REPORT" in answer.headers["allow"]


def test_principal_and_home_are_found_from_the_root(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    root = responses(propfind(api, app, "/caldav/", "<d:current-user-principal/>"))
    principal = root["/caldav/"]["found"][f"{D}current-user-principal"].findtext(f"{D}href")
    assert principal == f"/caldav/principals/{app.owner.id}/"
    found = responses(
        propfind(api, app, principal, "<c:calendar-home-set/>", "<c:calendar-user-address-set/>")
    )[principal]["found"]
    assert found[f"{C}calendar-home-set"].findtext(f"{D}href") == app.home
    assert (
        found[f"{C}calendar-user-address-set"].findtext(f"{D}href") == f"mailto:{app.owner.email}"
    )


def test_each_calendar_the_key_reaches_is_a_collection(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    work = factory.calendar(app.owner, name="Work", time_zone="Europe/Berlin")
    answer = responses(
        propfind(
            api,
            app,
            app.home,
            "<d:resourcetype/>",
            "<d:displayname/>",
            "<cs:getctag/>",
            "<d:sync-token/>",
            "<c:supported-calendar-component-set/>",
            "<c:calendar-timezone/>",
            "<ical:calendar-color/>",
            depth="1",
        )
    )
    calendar = answer[app.calendar(work)]
    found = calendar["found"]
    assert found[f"{D}resourcetype"].find(f"{C}calendar") is not None
    assert found[f"{D}displayname"].text == "Work"
    assert found[f"{CS}getctag"].text
    assert found[f"{D}sync-token"].text.startswith("urn:")
    comps = found[f"{C}supported-calendar-component-set"].findall(f"{C}comp")
    assert [c.get("name") for c in comps] == ["VEVENT"]
    assert "TZID:Europe/Berlin" in found[f"{C}calendar-timezone"].text
    assert "{http://apple.com/ns/ical/}calendar-color" in calendar["missing"]  # none chosen
    assert app.calendar() in answer  # the default calendar too


def test_a_one_calendar_key_sees_its_calendar_only(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    app = app_account(factory, owner, calendar_id=work)
    listed = responses(propfind(api, app, app.home, "<d:displayname/>", depth="1"))
    assert set(listed) == {app.home, app.calendar(work)}
    other = propfind(api, app, app.calendar(), "<d:displayname/>")
    assert other.status_code == 403


def test_another_owners_paths_are_refused(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    stranger = factory.owner()
    path = f"/caldav/calendars/{stranger.id}/{stranger.default_calendar_id}/"
    answer = propfind(api, app, path, "<d:displayname/>")
    assert answer.status_code == 403
    assert "{DAV:}need-privileges" in error_condition(answer)


def test_unknown_properties_are_404_in_their_own_propstat(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    found = responses(
        propfind(api, app, app.calendar(), "<d:displayname/>", "<x:nope xmlns:x='urn:x'/>")
    )
    entry = found[app.calendar()]
    assert f"{D}displayname" in entry["found"]
    assert entry["missing"] == ["{urn:x}nope"]


def test_depth_infinity_is_refused(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    answer = propfind(api, app, app.home, "<d:displayname/>", depth="infinity")
    assert answer.status_code == 403
    assert error_condition(answer) == ["{DAV:}propfind-finite-depth"]


def test_an_empty_propfind_is_allprop(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    answer = dav(api, app, "PROPFIND", app.calendar(), Depth="0")
    found = responses(answer)[app.calendar()]["found"]
    assert f"{D}displayname" in found and f"{CS}getctag" in found
