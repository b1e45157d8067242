"""Reading over CalDAV: GET of one object (a series with its exceptions), calendar-query
with and without expand, calendar-multiget, sync-collection, ETags and the ctag."""

from __future__ import annotations

from typing import Any

import httpx
from icalendar import Calendar

from calendar_service.calendar import reminders
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.dav.support import (
    CS,
    App,
    C,
    D,
    app_account,
    dav,
    propfind,
    responses,
    sync_token_of,
)
from tests.rest.conftest import EVENTS, create_event
from tests.support import Factory, bearer

PROP_DATA = "<d:prop><d:getetag/><c:calendar-data/></d:prop>"


def _query(start: str, end: str, *, expand: bool = False) -> str:
    data = (
        f'<c:calendar-data><c:expand start="{start}" end="{end}"/></c:calendar-data>'
        if expand
        else "<c:calendar-data/>"
    )
    return (
        '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
        'xmlns:c="urn:ietf:params:xml:ns:caldav">'
        f"<d:prop><d:getetag/>{data}</d:prop>"
        '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
        f'<c:time-range start="{start}" end="{end}"/>'
        "</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
    )


def _setup(factory: Factory, api: httpx.Client) -> tuple[App, str, dict, dict]:
    app = app_account(factory)
    _, rest_key = factory.key(app.owner)
    single = create_event(
        api,
        rest_key,
        title="Dentist",
        startsAt="2026-03-03T09:00:00Z",
        endsAt="2026-03-03T10:00:00Z",
    )
    series = create_event(
        api,
        rest_key,
        title="Standup",
        startsAt="2026-03-02T08:00:00Z",
        endsAt="2026-03-02T08:15:00Z",
        recurrence=["RRULE:FREQ=DAILY;COUNT=10"],
    )
    return app, rest_key, single, series


def test_get_serves_one_object_per_event_with_its_etag(api: httpx.Client, factory: Factory) -> None:
    app, rest_key, _single, series = _setup(factory, api)
    # One occurrence changed: it stays in its series' object.
    occurrence = f"{series['id']}_20260304T080000Z"
    moved = api.patch(
        f"{EVENTS}/{occurrence}", json={"title": "Standup (long)"}, headers=bearer(rest_key)
    )
    assert moved.status_code == 200, moved.text
    answer = dav(api, app, "GET", app.calendar() + f"{series['id']}.ics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/calendar")
    etag = answer.headers["etag"]
    cal = Calendar.from_ical(answer.content)
    assert cal.get("METHOD") is None  # RFC 4791 §4.1
    vevents = [c for c in cal.walk("VEVENT")]
    assert {str(v["UID"]) for v in vevents} == {series["id"]}
    assert any("RRULE" in v for v in vevents)
    assert any(str(v.get("SUMMARY")) == "Standup (long)" and "RECURRENCE-ID" in v for v in vevents)
    again = dav(api, app, "GET", app.calendar() + f"{series['id']}.ics", If_None_Match=etag)
    assert again.status_code == 304
    for tags in (f'"other", W/{etag}', "*"):  # RFC 9110's weak comparison, and any
        weak = dav(api, app, "GET", app.calendar() + f"{series['id']}.ics", If_None_Match=tags)
        assert weak.status_code == 304, tags
    other = dav(api, app, "GET", app.calendar() + f"{series['id']}.ics", If_None_Match='"x"')
    assert other.status_code == 200
    missing = dav(api, app, "GET", app.calendar() + "nothing-here.ics")
    assert missing.status_code == 404


def test_propfind_depth_1_lists_the_objects_with_their_etags(
    api: httpx.Client, factory: Factory
) -> None:
    app, _, single, series = _setup(factory, api)
    found = responses(propfind(api, app, app.calendar(), "<d:getetag/>", depth="1"))
    one = found[app.calendar() + f"{single['id']}.ics"]["found"][f"{D}getetag"].text
    get = dav(api, app, "GET", app.calendar() + f"{single['id']}.ics")
    assert get.headers["etag"] == one
    assert app.calendar() + f"{series['id']}.ics" in found


def test_calendar_query_with_a_time_range(api: httpx.Client, factory: Factory) -> None:
    app, _, single, series = _setup(factory, api)
    answer = dav(
        api,
        app,
        "REPORT",
        app.calendar(),
        _query("20260303T000000Z", "20260304T000000Z"),
        Depth="1",
    )
    found = responses(answer)
    assert set(found) == {
        app.calendar() + f"{single['id']}.ics",
        app.calendar() + f"{series['id']}.ics",
    }
    later = responses(
        dav(
            api,
            app,
            "REPORT",
            app.calendar(),
            _query("20260320T000000Z", "20260321T000000Z"),
            Depth="1",
        )
    )
    assert later == {}  # the series ended on the 11th
    data = found[app.calendar() + f"{series['id']}.ics"]["found"][f"{C}calendar-data"].text
    assert "RRULE:FREQ=DAILY;COUNT=10" in data


def test_calendar_query_with_expand_gives_occurrences_in_utc(
    api: httpx.Client, factory: Factory
) -> None:
    app, _, _, series = _setup(factory, api)
    answer = dav(
        api,
        app,
        "REPORT",
        app.calendar(),
        _query("20260305T000000Z", "20260307T000000Z", expand=True),
        Depth="1",
    )
    found = responses(answer)
    data = found[app.calendar() + f"{series['id']}.ics"]["found"][f"{C}calendar-data"].text
    vevents = list(Calendar.from_ical(data).walk("VEVENT"))
    assert len(vevents) == 2
    assert all("RRULE" not in v for v in vevents)
    assert sorted(v.decoded("RECURRENCE-ID").isoformat() for v in vevents) == [
        "2026-03-05T08:00:00+00:00",
        "2026-03-06T08:00:00+00:00",
    ]


def test_calendar_multiget(api: httpx.Client, factory: Factory) -> None:
    app, _, single, _series = _setup(factory, api)
    base = app.calendar()
    body = (
        '<?xml version="1.0"?><c:calendar-multiget xmlns:d="DAV:" '
        'xmlns:c="urn:ietf:params:xml:ns:caldav">'
        f"{PROP_DATA}<d:href>{base}{single['id']}.ics</d:href><d:href>{base}gone.ics</d:href>"
        "</c:calendar-multiget>"
    )
    found = responses(dav(api, app, "REPORT", base, body, Depth="1"))
    assert "Dentist" in found[f"{base}{single['id']}.ics"]["found"][f"{C}calendar-data"].text
    assert " 404 " in found[f"{base}gone.ics"]["status"]


def _sync(api: httpx.Client, app: App, token: str) -> httpx.Response:
    body = (
        '<?xml version="1.0"?><d:sync-collection xmlns:d="DAV:">'
        f"<d:sync-token>{token}</d:sync-token><d:sync-level>1</d:sync-level>"
        "<d:prop><d:getetag/></d:prop></d:sync-collection>"
    )
    return dav(api, app, "REPORT", app.calendar(), body)


def test_sync_collection_follows_the_change_feed(api: httpx.Client, factory: Factory) -> None:
    app, rest_key, single, series = _setup(factory, api)
    first = _sync(api, app, "")
    assert set(responses(first)) == {
        app.calendar() + f"{single['id']}.ics",
        app.calendar() + f"{series['id']}.ics",
    }
    token = sync_token_of(first)
    assert token
    nothing = _sync(api, app, token)
    assert responses(nothing) == {}
    ctag = responses(propfind(api, app, app.calendar(), "<cs:getctag/>"))[app.calendar()]
    api.patch(
        f"{EVENTS}/{single['id']}", json={"title": "Dentist (moved)"}, headers=bearer(rest_key)
    )
    api.delete(f"{EVENTS}/{series['id']}", headers=bearer(rest_key))
    changed = responses(_sync(api, app, token))
    assert f"{D}getetag" in changed[app.calendar() + f"{single['id']}.ics"]["found"]
    assert " 404 " in changed[app.calendar() + f"{series['id']}.ics"]["status"]
    after = responses(propfind(api, app, app.calendar(), "<cs:getctag/>"))[app.calendar()]
    assert after["found"][f"{CS}getctag"].text != ctag["found"][f"{CS}getctag"].text


def test_a_sync_token_not_ours_is_refused(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    answer = _sync(api, app, "urn:x-calendar-service:sync:forged")
    assert answer.status_code == 403
    assert "valid-sync-token" in answer.text


def test_calendar_query_by_uid_or_summary_text(api: httpx.Client, factory: Factory) -> None:
    app, _, single, series = _setup(factory, api)

    def query(prop: str, text: str, collation: str = "i;ascii-casemap") -> set[str]:
        body = (
            '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
            'xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/></d:prop>'
            '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
            f'<c:prop-filter name="{prop}"><c:text-match collation="{collation}">{text}'
            "</c:text-match></c:prop-filter></c:comp-filter></c:comp-filter></c:filter>"
            "</c:calendar-query>"
        )
        return set(responses(dav(api, app, "REPORT", app.calendar(), body, Depth="1")))

    assert query("UID", single["id"]) == {app.calendar() + f"{single['id']}.ics"}
    assert query("SUMMARY", "standup") == {app.calendar() + f"{series['id']}.ics"}
    assert query("SUMMARY", "standup", "i;octet") == set()


def test_a_weeks_objects_are_answered_as_get_and_propfind_answer_them(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    """A time range's single events are answered from the list's page (``reports``): their
    ETags and texts are those GET and PROPFIND (which read the rows) give, in a zone with DST
    (a time in its autumn fold too), all day, with attendees and the owner's reminder, and a
    change shows at once."""
    owner = factory.owner(time_zone="Europe/Paris")
    app = app_account(factory, owner)
    _, rest_key = factory.key(owner)
    db.call(reminders.set_reminder, user_id=owner.id, minutes_before=15, now=utcnow())
    people = [{"email": "ana@example.com", "name": 'Ana "A", B; C'}, {"email": "bo@example.org"}]
    made = [
        create_event(api, rest_key, title="Dentist, then; lunch", startsAt="2026-10-20T09:00:00Z",
                     endsAt="2026-10-20T10:00:00Z", description="Line one\nline two " + "é" * 70),
        create_event(api, rest_key, title="Holiday", startsAt="2026-10-21", endsAt="2026-10-22",
                     allDay=True),
        create_event(api, rest_key, title="Review", startsAt="2026-10-22T13:00:00Z",
                     endsAt="2026-10-22T14:00:00Z", attendees=people, location="Room 1"),
        create_event(api, rest_key, title="In the fold", startsAt="2026-10-25T00:30:00Z",
                     endsAt="2026-10-25T01:00:00Z"),
    ]  # fmt: skip
    week = _query("20261019T000000Z", "20261026T000000Z")

    def report() -> dict[str, dict[str, Any]]:
        return responses(dav(api, app, "REPORT", app.calendar(), week, Depth="1"))

    found = report()
    assert set(found) == {app.calendar() + f"{e['id']}.ics" for e in made}
    listed = responses(propfind(api, app, app.calendar(), "<d:getetag/>", depth="1"))
    for href, entry in found.items():
        etag = entry["found"][f"{D}getetag"].text
        got = dav(api, app, "GET", href)
        assert got.headers["etag"] == etag == listed[href]["found"][f"{D}getetag"].text
        text = entry["found"][f"{C}calendar-data"].text
        assert text == got.text.replace("\r\n", "\n")  # XML reads a line end as LF
        vevent = next(iter(Calendar.from_ical(got.content).walk("VEVENT")))
        assert vevent.walk("VALARM"), href
    review = Calendar.from_ical(
        dav(api, app, "GET", app.calendar() + f"{made[2]['id']}.ics").content
    )
    attendees = next(iter(review.walk("VEVENT"))).get("ATTENDEE")
    assert {str(a) for a in attendees} == {"mailto:ana@example.com", "mailto:bo@example.org"}
    before = found[app.calendar() + f"{made[0]['id']}.ics"]["found"][f"{D}getetag"].text
    changed = api.patch(
        f"{EVENTS}/{made[0]['id']}", json={"title": "Dentist (moved)"}, headers=bearer(rest_key)
    )
    assert changed.status_code == 200, changed.text
    again = report()[app.calendar() + f"{made[0]['id']}.ics"]["found"]
    assert again[f"{D}getetag"].text != before
    assert "SUMMARY:Dentist (moved)" in again[f"{C}calendar-data"].text


def test_a_time_range_with_a_text_match(api: httpx.Client, factory: Factory) -> None:
    app, _, single, series = _setup(factory, api)
    body = (
        '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
        'xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/><c:calendar-data/>'
        '</d:prop><c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
        '<c:time-range start="20260302T000000Z" end="20260309T000000Z"/>'
        '<c:prop-filter name="SUMMARY"><c:text-match>{}</c:text-match></c:prop-filter>'
        "</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
    )

    def query(text: str) -> set[str]:
        return set(responses(dav(api, app, "REPORT", app.calendar(), body.format(text), Depth="1")))

    assert query("dentist") == {app.calendar() + f"{single['id']}.ics"}
    assert query("STANDUP") == {app.calendar() + f"{series['id']}.ics"}
    assert query("nothing like it") == set()


def test_a_time_range_open_at_one_end(api: httpx.Client, factory: Factory) -> None:
    """A time-range with only a start (or only an end): every object with time after it (or
    before it), a series whole (RFC 4791 §9.9)."""
    app, rest_key, single, series = _setup(factory, api)  # 3 March 09:00; daily from 2 March
    later = create_event(
        api, rest_key, title="Later", startsAt="2026-04-01T09:00:00Z", endsAt="2026-04-01T10:00:00Z"
    )

    def query(bounds: str) -> set[str]:
        body = (
            '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
            'xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/></d:prop>'
            '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
            f"<c:time-range {bounds}/></c:comp-filter></c:comp-filter></c:filter>"
            "</c:calendar-query>"
        )
        return set(responses(dav(api, app, "REPORT", app.calendar(), body, Depth="1")))

    def names(*events: dict) -> set[str]:
        return {app.calendar() + f"{e['id']}.ics" for e in events}

    assert query('start="20260315T000000Z"') == names(later)
    assert query('start="20260303T093000Z"') == names(single, series, later)
    assert query('end="20260302T120000Z"') == names(series)
    assert query('end="20260401T000000Z"') == names(single, series)
