"""Writing over CalDAV: PUT and DELETE through the core (change log with transport caldav,
REST sees it), ETag preconditions, CalDAV preconditions, approval; nothing stored when
refused."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from calendar_service.platform.db import Database
from tests.dav.support import App, app_account, dav, error_condition, ics, put
from tests.rest.conftest import EVENTS
from tests.rest.recurrence_support import watch
from tests.support import Factory, RunningServer, bearer, queued

CHANGES = "/api/v1/calendar/changes"


def _events(api: httpx.Client, secret: str) -> list[dict]:
    listed = api.get(
        EVENTS,
        params={
            "timeMin": "2026-01-01T00:00:00Z",
            "timeMax": "2027-01-01T00:00:00Z",
            "singleEvents": "false",
        },
        headers=bearer(secret),
    )
    assert listed.status_code == 200, listed.text
    return listed.json()["events"]  # type: ignore[no-any-return]


def _app_with_rest(factory: Factory, **options: object) -> tuple[App, str]:
    app = app_account(factory, **options)
    return app, factory.key(app.owner)[1]


def test_put_creates_an_event_through_the_core(api: httpx.Client, factory: Factory) -> None:
    app, rest = _app_with_rest(factory)
    answer = put(api, app, app.calendar() + "dentist-1.ics", ics("dentist-1"), If_None_Match="*")
    assert answer.status_code == 201, answer.text
    (event,) = _events(api, rest)
    assert event["title"] == "Dentist"
    changes = api.get(
        CHANGES, params={"since": "2026-01-01T00:00:00Z"}, headers=bearer(rest)
    ).json()
    assert [c["transport"] for c in changes["changes"]] == ["caldav"]
    got = dav(api, app, "GET", app.calendar() + "dentist-1.ics")
    assert got.status_code == 200 and "UID:dentist-1" in got.text


def test_puts_to_one_new_name_at_once_are_one_creation_then_replacements(
    server: RunningServer, factory: Factory
) -> None:
    """Created (201) or replaced (204) is the answer of the PUT's own transaction, not a read
    before it: of eight PUTs at once to one new name, exactly one created the object."""
    app, rest = _app_with_rest(factory)
    path = app.calendar() + "race.ics"

    def write(n: int) -> int:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            return put(client, app, path, ics("race", summary=f"Take {n}")).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(write, range(8)))
    assert statuses == [201] + [204] * 7, statuses
    with httpx.Client(base_url=server.url, timeout=30) as client:
        (event,) = _events(client, rest)
    assert event["title"].startswith("Take ")


def test_put_updates_with_a_matching_etag_and_refuses_a_stale_one(
    api: httpx.Client, factory: Factory
) -> None:
    app, rest = _app_with_rest(factory)
    path = app.calendar() + "dentist-2.ics"
    assert put(api, app, path, ics("dentist-2")).status_code == 201
    etag = dav(api, app, "GET", path).headers["etag"]
    again = put(api, app, path, ics("dentist-2"), If_None_Match="*")
    assert again.status_code == 412
    moved = put(api, app, path, ics("dentist-2", summary="Dentist (moved)"), If_Match=etag)
    assert moved.status_code == 204, moved.text
    stale = put(api, app, path, ics("dentist-2", summary="Lost update"), If_Match=etag)
    assert stale.status_code == 412
    (event,) = _events(api, rest)
    assert event["title"] == "Dentist (moved)"


def test_put_of_an_event_made_over_rest_changes_that_event(
    api: httpx.Client, factory: Factory
) -> None:
    app, rest = _app_with_rest(factory)
    made = api.post(
        EVENTS,
        json={
            "title": "Lunch",
            "startsAt": "2026-03-02T12:00:00Z",
            "endsAt": "2026-03-02T13:00:00Z",
        },
        headers=bearer(rest),
    ).json()
    path = app.calendar() + f"{made['id']}.ics"
    text = dav(api, app, "GET", path).text.replace("SUMMARY:Lunch", "SUMMARY:Long lunch")
    assert put(api, app, path, text).status_code == 204
    (event,) = _events(api, rest)
    assert event["id"] == made["id"] and event["title"] == "Long lunch"


def test_delete_removes_the_event_and_honours_if_match(api: httpx.Client, factory: Factory) -> None:
    app, rest = _app_with_rest(factory)
    path = app.calendar() + "gone.ics"
    assert put(api, app, path, ics("gone")).status_code == 201
    assert dav(api, app, "DELETE", path, If_Match='"stale"').status_code == 412
    assert dav(api, app, "DELETE", path).status_code == 204
    assert _events(api, rest) == []
    assert dav(api, app, "DELETE", path).status_code == 404


def test_a_write_that_waits_for_approval_is_202_and_stores_nothing(
    api: httpx.Client, factory: Factory
) -> None:
    app, rest = _app_with_rest(factory, approval="all")
    answer = put(api, app, app.calendar() + "waits.ics", ics("waits"))
    assert answer.status_code == 202
    assert _events(api, rest) == []


def test_refused_objects_store_nothing(api: httpx.Client, factory: Factory) -> None:
    app, rest = _app_with_rest(factory)
    base = app.calendar()
    cases = {
        "not-ical.ics": ("this is not iCalendar", "valid-calendar-data"),
        "todo.ics": (
            ics("todo").replace("VEVENT", "VTODO"),
            "supported-calendar-component",
        ),
        "hostile.ics": (
            ics("hostile", extra="RRULE:FREQ=SECONDLY;BYSECOND=0,1,2,3,4,5,6,7,8,9"),
            "valid-calendar-data",
        ),
        "huge-interval.ics": (
            ics("huge-interval", extra="RRULE:FREQ=DAILY;INTERVAL=999999999"),
            "valid-calendar-data",
        ),
        "every-minute.ics": (
            ics(
                "every-minute",
                extra="RRULE:FREQ=DAILY;BYHOUR="
                + ",".join(map(str, range(24)))
                + ";BYMINUTE="
                + ",".join(map(str, range(60))),
            ),
            "valid-calendar-data",
        ),
        "two.ics": (
            ics(
                "two",
                more="BEGIN:VEVENT\r\nUID:other\r\nDTSTAMP:20260101T000000Z\r\n"
                "DTSTART:20260302T090000Z\r\nSUMMARY:x\r\nEND:VEVENT",
            ),
            "valid-calendar-object-resource",
        ),
    }
    for name, (text, condition) in cases.items():
        answer = put(api, app, base + name, text)
        assert answer.status_code == 403, (name, answer.status_code, answer.text)
        assert f"{{urn:ietf:params:xml:ns:caldav}}{condition}" in error_condition(answer), name
    wrong_type = dav(api, app, "PUT", base + "x.ics", ics("x"), Content_Type="application/json")
    assert wrong_type.status_code == 403
    assert _events(api, rest) == []


def test_a_uid_kept_under_another_name_is_a_uid_conflict(
    api: httpx.Client, factory: Factory
) -> None:
    app, _ = _app_with_rest(factory)
    assert put(api, app, app.calendar() + "kept.ics", ics("kept")).status_code == 201
    answer = put(api, app, app.calendar() + "elsewhere.ics", ics("kept"))
    assert answer.status_code == 403
    assert "{urn:ietf:params:xml:ns:caldav}no-uid-conflict" in error_condition(answer)


def test_put_into_another_owners_or_an_unreached_calendar_is_refused(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    app = app_account(factory, owner, calendar_id=work)
    stranger = factory.owner()
    theirs = f"/caldav/calendars/{stranger.id}/{stranger.default_calendar_id}/x.ics"
    assert put(api, app, theirs, ics("x")).status_code == 403
    assert put(api, app, app.calendar() + "x.ics", ics("x")).status_code == 403  # not Work
    assert put(api, app, app.calendar("cal_nope") + "x.ics", ics("x")).status_code == 403
    rest = factory.key(owner)[1]
    assert _events(api, rest) == []


def test_a_body_over_the_limit_is_413(api: httpx.Client, factory: Factory) -> None:
    app, _ = _app_with_rest(factory)
    big = ics("big", extra="DESCRIPTION:" + "x" * (1024 * 1024))
    assert put(api, app, app.calendar() + "big.ics", big).status_code == 413


def test_a_large_put_is_signed_in_again_in_its_write(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    """A body over 16 KiB is read only once its app is signed in; the write signs in again in
    its own transaction, so a key revoked while the body was on its way writes nothing (401),
    and the same PUT by a live key is written (201)."""
    import threading
    from collections.abc import Iterator

    from sqlalchemy import event

    from calendar_service.access import keys
    from calendar_service.platform.timeutil import utcnow

    app, rest = _app_with_rest(factory)
    large = ics("large", extra="DESCRIPTION:" + "x" * (20 * 1024)).encode()
    signed_in = threading.Event()

    def reading_keys(conn: object, cursor: object, statement: str, *rest: object) -> None:
        if "api_keys" in statement:
            signed_in.set()

    def body() -> Iterator[bytes]:  # chunked: the app signs in before it reads the body
        yield large[:1024]
        assert signed_in.wait(30)
        db.call(keys.revoke_key, user_id=app.owner.id, key_id=app.key_id, now=utcnow())
        yield large[1024:]

    event.listen(db.engine, "before_cursor_execute", reading_keys)
    try:
        refused = api.put(
            app.calendar() + "large.ics",
            content=body(),
            headers={"Content-Type": "text/calendar"},
            auth=app.auth,
        )
    finally:
        event.remove(db.engine, "before_cursor_execute", reading_keys)
    assert refused.status_code == 401, refused.text
    assert _events(api, rest) == []

    live = app_account(factory, owner=app.owner)
    assert put(api, live, live.calendar() + "large.ics", large.decode()).status_code == 201
    assert [e["description"] for e in _events(api, rest)] == ["x" * (20 * 1024)]


def test_changes_over_caldav_queue_webhooks_and_can_wait_for_approval(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    app, rest = _app_with_rest(factory)
    watch(db, app.owner)
    path = app.calendar() + "hooked.ics"
    assert put(api, app, path, ics("hooked")).status_code == 201
    assert put(api, app, path, ics("hooked", summary="Hooked (moved)")).status_code == 204
    assert dav(api, app, "DELETE", path).status_code == 204
    assert [kind for kind, _ in queued(db, app.owner)] == [
        "calendar.event.created",
        "calendar.event.updated",
        "calendar.event.deleted",
    ]
    waits = app_account(factory, app.owner, approval="destructive")
    assert put(api, waits, path, ics("hooked")).status_code == 201  # creates go through
    assert dav(api, waits, "DELETE", path).status_code == 202  # deletes wait
    proposals = api.get(CHANGES, params={"since": "2026-01-01T00:00:00Z"}, headers=bearer(rest))
    assert {c["transport"] for c in proposals.json()["changes"]} == {"caldav"}
    assert [e["title"] for e in _events(api, rest)] == ["Dentist"]  # still there


def test_put_answers_if_match_and_if_none_match_before_looking_at_the_body(
    api: httpx.Client, factory: Factory
) -> None:
    """RFC 9110 §13.2.2: the preconditions first (412), then what the body says (403)."""
    app, rest = _app_with_rest(factory)
    base = app.calendar()
    todo = ics("todo").replace("VEVENT", "VTODO")
    bodies = {  # each refused for what it holds, once the preconditions hold
        "not iCalendar": ("this is not iCalendar", "text/calendar"),
        "a to-do": (todo, "text/calendar"),
        "two UIDs": (
            ics(
                "two",
                more="BEGIN:VEVENT\r\nUID:other\r\nDTSTAMP:20260101T000000Z\r\n"
                "DTSTART:20260302T090000Z\r\nSUMMARY:x\r\nEND:VEVENT",
            ),
            "text/calendar",
        ),
        "not text/calendar": (ics("exists"), "application/json"),
    }
    assert put(api, app, base + "exists.ics", ics("exists")).status_code == 201
    etag = dav(api, app, "GET", base + "exists.ics").headers["etag"]
    for what, (text, media) in bodies.items():
        for name, headers in (
            ("missing.ics", {"If-Match": '"no-such-version"'}),
            ("missing.ics", {"If-Match": "*"}),
            ("exists.ics", {"If-Match": '"stale"'}),
            ("exists.ics", {"If-None-Match": "*"}),
            ("exists.ics", {"If-None-Match": etag}),
        ):
            answer = api.request(
                "PUT", base + name, content=text, auth=app.auth,
                headers={"Content-Type": media, **headers},
            )  # fmt: skip
            assert answer.status_code == 412, (what, name, headers, answer.text)
        for name, headers in (
            ("missing.ics", {"If-None-Match": "*"}),
            ("exists.ics", {"If-Match": etag}),
            ("exists.ics", {"If-Match": "*"}),
        ):
            answer = api.request(
                "PUT", base + name, content=text, auth=app.auth,
                headers={"Content-Type": media, **headers},
            )  # fmt: skip
            assert answer.status_code == 403, (what, name, headers, answer.text)
    assert [e["title"] for e in _events(api, rest)] == ["Dentist"]
    made = put(api, app, base + "missing.ics", ics("missing"), If_None_Match="*")
    assert made.status_code == 201
    kept = put(api, app, base + "exists.ics", ics("exists", summary="Kept"), If_Match=etag)
    assert kept.status_code == 204


def test_delete_answers_if_match_and_if_none_match_first(
    api: httpx.Client, factory: Factory
) -> None:
    app, rest = _app_with_rest(factory)
    path = app.calendar() + "kept.ics"
    missing = app.calendar() + "missing.ics"
    assert put(api, app, path, ics("kept")).status_code == 201
    etag = dav(api, app, "GET", path).headers["etag"]
    assert dav(api, app, "DELETE", missing, If_Match='"any"').status_code == 412
    assert dav(api, app, "DELETE", missing, If_Match="*").status_code == 412
    assert dav(api, app, "DELETE", missing, If_None_Match="*").status_code == 404
    assert dav(api, app, "DELETE", missing).status_code == 404
    assert dav(api, app, "DELETE", path, If_None_Match="*").status_code == 412
    assert dav(api, app, "DELETE", path, If_None_Match=etag).status_code == 412
    assert dav(api, app, "DELETE", path, If_Match='"stale"').status_code == 412
    assert [e["title"] for e in _events(api, rest)] == ["Dentist"]
    assert dav(api, app, "DELETE", path, If_None_Match='"other"', If_Match=etag).status_code == 204
    assert _events(api, rest) == []
