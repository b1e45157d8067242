"""Scheduling links over REST: made, listed and deleted by write keys; the public booking API
(slots, booking, reschedule, cancel) over a real server; the races, the limits and hostile
guests."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
from sqlalchemy import select

from calendar_service.access import call_history, keys
from calendar_service.asgi.boundary import loggable_path
from calendar_service.delivery import subscriptions, webhook_targets
from calendar_service.platform.db import Database
from calendar_service.platform.models import deliveries_t, endpoints_t
from calendar_service.platform.models.links import links_t
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.dav.support import app_account, dav, propfind, responses
from tests.support import Factory, Owner, RunningServer, bearer, own_server
from tests.webhooks.support import set_webhook

LINKS = "/api/v1/calendar/schedulingLinks"
EVENTS = "/api/v1/calendar/events"


def _day(days: int = 2) -> datetime:
    """A UTC midnight ``days`` from today (always in the future)."""
    today = utcnow().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today + timedelta(days=days)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_link(api: httpx.Client, secret: str, *, hours: int = 4, **fields: Any) -> dict[str, Any]:
    start = _day().replace(hour=9)
    body = {
        "title": "Intro call",
        "durationMinutes": 30,
        "timeMin": _iso(start),
        "timeMax": _iso(start + timedelta(hours=hours)),
        **fields,
    }
    made = api.post(LINKS, json=body, headers=bearer(secret))
    assert made.status_code == 201, made.text
    return made.json()  # type: ignore[no-any-return]


def token_of(link: dict[str, Any]) -> str:
    return str(link["url"]).rsplit("/", 1)[1]


def guest(start: str, **fields: Any) -> dict[str, Any]:
    return {"startsAt": start, "name": "Dana Scully", "email": "dana@example.com", **fields}


def test_a_write_key_makes_lists_and_deletes_its_links(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    link = make_link(api, secret, uses=3)
    assert link["id"].startswith("link_")
    assert link["usesLeft"] == 3 and link["status"] == "active"
    assert link["url"].startswith("http") and "/book/" in link["url"]
    assert len(token_of(link)) >= 32  # 192 bits, base64url
    assert link["expiresAt"] == link["timeMax"]
    listed = api.get(LINKS, headers=bearer(secret)).json()["schedulingLinks"]
    assert [found["id"] for found in listed] == [link["id"]]
    assert "url" not in listed[0]  # the token is shown once
    _, other = factory.key(owner)
    assert api.get(LINKS, headers=bearer(other)).json() == {"schedulingLinks": []}
    assert api.delete(f"{LINKS}/{link['id']}", headers=bearer(other)).status_code == 404
    assert api.delete(f"{LINKS}/{link['id']}", headers=bearer(secret)).status_code == 204
    gone = api.get(f"/api/v1/book/{token_of(link)}/slots")
    assert gone.status_code == 410 and gone.json()["code"] == "link_gone"


def test_read_and_freebusy_keys_cannot_make_links(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    for permission in ("read", "freebusy"):
        _, secret = factory.key(owner, permission=permission)
        refused = api.post(LINKS, json={}, headers=bearer(secret))
        assert refused.status_code == 401
        assert refused.json()["code"] == "insufficient_scope"
        assert api.get(LINKS, headers=bearer(secret)).status_code == 401


def test_bad_link_fields_are_each_named(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    body = {
        "title": "",
        "durationMinutes": 0,
        "timeMin": "tomorrow",
        "timeMax": "2020-01-01T00:00:00Z",
        "uses": 101,
        "guest": {"email": "not an email", "name": "Eve\r\nBcc: all@example.com"},
        "colour": "red",
    }
    refused = api.post(LINKS, json=body, headers=bearer(secret))
    assert refused.status_code == 400
    fields = {e["field"] for e in refused.json()["errors"]}
    assert fields == {
        "title",
        "durationMinutes",
        "timeMin",
        "uses",
        "guest.email",
        "guest.name",
        "colour",
    }


def test_a_one_calendar_key_cannot_link_another_calendar(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, secret = factory.key(owner, calendar_id=work)
    refused = api.post(
        LINKS,
        json={
            "title": "x",
            "durationMinutes": 30,
            "timeMin": _iso(_day()),
            "timeMax": _iso(_day(3)),
            "calendarId": owner.default_calendar_id,
        },
        headers=bearer(secret),
    )
    assert refused.status_code == 401
    assert refused.json()["code"] == "insufficient_scope"
    assert make_link(api, secret)["calendarId"] == work


def test_slots_are_find_free_time_s_in_the_guests_zone(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    link = make_link(api, secret, hours=2)
    start = _day().replace(hour=9)
    busy = {"title": "busy", "startsAt": _iso(start), "endsAt": _iso(start + timedelta(hours=1))}
    assert api.post(EVENTS, json=busy, headers=bearer(secret)).status_code == 201
    found = api.get(
        f"/api/v1/book/{token_of(link)}/slots", params={"timeZone": "Asia/Kolkata"}
    ).json()
    assert found["title"] == "Intro call" and found["durationMinutes"] == 30
    assert found["timeZone"] == "Asia/Kolkata"
    expected = api.post(
        "/api/v1/calendar/freeTime",
        json={
            "timeMin": _iso(start),
            "timeMax": _iso(start + timedelta(hours=2)),
            "durationMinutes": 30,
            "timeZone": "Asia/Kolkata",
            "limit": 100,
        },
        headers=bearer(secret),
    ).json()["slots"]
    assert found["slots"] == expected
    assert [s["startsAt"][11:] for s in found["slots"]] == [
        "15:30:00+05:30",
        "15:45:00+05:30",
        "16:00:00+05:30",
    ]
    bad = api.get(f"/api/v1/book/{token_of(link)}/slots", params={"timeZone": "Mars/Base"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "timeZone"
    unknown = api.get(f"/api/v1/book/{token_of(link)}/slots", params={"zone": "UTC"})
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_parameter"
    assert api.get("/api/v1/book/nonsense/slots").status_code == 404


def test_a_booking_is_one_event_made_by_the_guest_through_the_link(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    link = make_link(api, secret)
    token = token_of(link)
    first = api.get(f"/api/v1/book/{token}/slots").json()["slots"][0]
    made = api.post(f"/api/v1/book/{token}", json=guest(first["startsAt"]))
    assert made.status_code == 201, made.text
    booked = made.json()["booking"]
    assert booked["startsAt"] == first["startsAt"] and booked["endsAt"] == first["endsAt"]
    assert "/book/manage/" in booked["manageUrl"]
    event = api.get(f"{EVENTS}/{booked['eventId']}", headers=bearer(secret)).json()
    assert event["title"] == "Intro call with Dana Scully"
    assert [a["email"] for a in event["attendees"]] == ["dana@example.com"]
    changes = api.get("/api/v1/calendar/changes", headers=bearer(secret)).json()["changes"]
    assert changes[0]["actor"] == {"type": "guest", "id": link["id"], "name": "guest"}
    assert changes[0]["transport"] == "link"
    assert changes[0]["eventId"] == booked["eventId"]
    # In the key's call history, under the path's template: never the token.
    calls = db.call(call_history.list_calls, key_id=key_id)
    booking_call = next(c for c in calls if c["operation"] == "bookSchedulingLink")
    assert booking_call["transport"] == "link" and booking_call["status"] == 201
    assert booking_call["path"] == "/api/v1/book/{token}"
    assert all(token not in str(c) for c in calls)
    # Used up: uses defaults to 1.
    again = api.post(f"/api/v1/book/{token}", json=guest(first["startsAt"]))
    assert again.status_code == 410 and again.json()["code"] == "link_gone"
    listed = api.get(LINKS, headers=bearer(secret)).json()["schedulingLinks"]
    assert listed[0]["usesLeft"] == 0 and listed[0]["status"] == "used"
    calls = api.get(f"/api/v1/book/{token}/slots")
    assert calls.status_code == 410


def test_a_slot_taken_by_a_meeting_meanwhile_is_refused_with_fresh_slots(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    token = token_of(make_link(api, secret, uses=5))
    first = api.get(f"/api/v1/book/{token}/slots").json()["slots"][0]
    meeting = {"title": "meanwhile", "startsAt": first["startsAt"], "endsAt": first["endsAt"]}
    assert api.post(EVENTS, json=meeting, headers=bearer(secret)).status_code == 201
    refused = api.post(f"/api/v1/book/{token}", json=guest(first["startsAt"]))
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["code"] == "slot_taken"
    assert problem["slots"] and first["startsAt"] not in [s["startsAt"] for s in problem["slots"]]
    off_grid = datetime.fromisoformat(first["startsAt"]) + timedelta(minutes=7)
    assert api.post(f"/api/v1/book/{token}", json=guest(off_grid.isoformat())).status_code == 409
    outside = _day(30).isoformat()
    assert api.post(f"/api/v1/book/{token}", json=guest(outside)).status_code == 409


def test_hostile_guest_names_and_emails_are_refused_by_field(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    token = token_of(make_link(api, secret))
    start = api.get(f"/api/v1/book/{token}/slots").json()["slots"][0]["startsAt"]
    for name, email in (
        ("Eve\r\nBcc: everyone@example.com", "eve@example.com"),
        ("<script>alert(1)</script>", "eve@example.com"),
        ("x" * 101, "eve@example.com"),
        ("Eve", "eve@example.com\r\nBcc: everyone@example.com"),
        ("Eve", "<b>@example.com"),
        ("Eve", "e" * 330 + "@example.com"),
    ):
        refused = api.post(f"/api/v1/book/{token}", json=guest(start, name=name, email=email))
        assert refused.status_code == 400, (name, email)
        field = refused.json()["errors"][0]["field"]
        assert field == ("name" if email == "eve@example.com" else "email")
    assert api.post(f"/api/v1/book/{token}", json=guest(start)).status_code == 201


def test_a_revoked_key_s_links_stop_at_once(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    token = token_of(make_link(api, secret))
    assert api.get(f"/api/v1/book/{token}/slots").status_code == 200
    factory.db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    gone = api.get(f"/api/v1/book/{token}/slots")
    assert gone.status_code == 410 and gone.json()["code"] == "link_gone"


def test_an_expired_link_is_gone(api: httpx.Client, factory: Factory, db: Database) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    link = make_link(api, secret, expiresAt=_iso(utcnow() + timedelta(minutes=5)))
    db.call(
        lambda conn: conn.execute(
            links_t.update()
            .where(links_t.c.id == link["id"])
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    )
    gone = api.get(f"/api/v1/book/{token_of(link)}/slots")
    assert gone.status_code == 410 and "expired" in gone.json()["detail"]


def test_the_guest_reschedules_and_cancels_with_the_manage_link(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    token = token_of(make_link(api, secret))
    slots = api.get(f"/api/v1/book/{token}/slots").json()["slots"]
    booked = api.post(f"/api/v1/book/{token}", json=guest(slots[0]["startsAt"])).json()["booking"]
    manage = "/api/v1/book/manage/" + booked["manageUrl"].rsplit("/", 1)[1]
    shown = api.get(manage).json()
    assert shown["startsAt"] == slots[0]["startsAt"] and shown["name"] == "Dana Scully"
    moved = api.post(manage + "/reschedule", json={"startsAt": slots[1]["startsAt"]})
    assert moved.status_code == 200, moved.text
    new_id = moved.json()["booking"]["eventId"]
    assert api.get(f"{EVENTS}/{booked['eventId']}", headers=bearer(secret)).status_code == 404
    event = api.get(f"{EVENTS}/{new_id}", headers=bearer(secret)).json()
    assert event["startsAt"] == slots[1]["startsAt"]
    cancelled = api.post(manage + "/cancel")
    assert cancelled.status_code == 200 and cancelled.json() == {"cancelled": True}
    assert api.get(f"{EVENTS}/{new_id}", headers=bearer(secret)).status_code == 404
    kinds = [
        (c["kind"], c["actor"]["type"])
        for c in api.get("/api/v1/calendar/changes", headers=bearer(secret)).json()["changes"]
    ]
    assert kinds == [
        ("deleted", "guest"),
        ("created", "guest"),
        ("deleted", "guest"),
        ("created", "guest"),
    ]
    assert api.get(manage).status_code == 410
    # The use is given back: the link takes a booking again.
    assert api.post(f"/api/v1/book/{token}", json=guest(slots[2]["startsAt"])).status_code == 201


def _subscribe(db: Database, key_id: str, **body: Any) -> str:
    target = webhook_targets.check_endpoint_url(
        "http://127.0.0.1:9/hook", allow_local=True, resolve=webhook_targets.system_resolve
    )
    principal = db.call(
        lambda conn: keys.authorize(keys.key_row_by_id(conn, key_id=key_id), now=utcnow())
    )
    made = db.call(
        subscriptions.create_subscription,
        principal=principal,
        body={"url": "http://127.0.0.1:9/hook", **body},
        target=target,
        now=utcnow(),
    )
    return str(made["id"])


def test_a_booking_notifies_the_owner_and_the_key_s_subscriptions(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    other_id, _ = factory.key(owner)
    set_webhook(db, owner, "http://127.0.0.1:9/owner")
    mine = _subscribe(db, key_id, events=["calendar.booking.created"])
    _subscribe(db, key_id, events=["calendar.event.deleted"])  # does not take it
    _subscribe(db, other_id)  # another key's: every type, but not its link
    token = token_of(make_link(api, secret))
    start = api.get(f"/api/v1/book/{token}/slots").json()["slots"][0]["startsAt"]
    booked = api.post(f"/api/v1/book/{token}", json=guest(start)).json()["booking"]
    sent = _deliveries(db, owner, "calendar.booking.created")
    owners = db.call(
        lambda conn: conn.execute(
            select(endpoints_t.c.id).where(
                endpoints_t.c.user_id == owner.id, endpoints_t.c.key_id.is_(None)
            )
        ).scalar_one()
    )
    assert sorted(endpoint for endpoint, _ in sent) == sorted([mine, owners])
    data = sent[0][1]
    assert data["booking"]["eventId"] == booked["eventId"]
    assert data["booking"]["guest"] == {"name": "Dana Scully", "email": "dana@example.com"}
    assert data["event"]["id"] == booked["eventId"]
    assert "manageUrl" not in data["booking"]


def _deliveries(db: Database, owner: Owner, event_type: str) -> list[tuple[str, Any]]:
    rows = db.call(
        lambda conn: conn.execute(
            select(deliveries_t.c.endpoint_id, deliveries_t.c.payload).where(
                deliveries_t.c.user_id == owner.id, deliveries_t.c.event_type == event_type
            )
        ).all()
    )
    return [(r.endpoint_id, orjson.loads(r.payload)["data"]) for r in rows]


def test_two_guests_on_one_slot_make_one_booking(server: RunningServer, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    with httpx.Client(base_url=server.url, timeout=30) as api:
        token = token_of(make_link(api, secret, uses=10, hours=8))
        slots = api.get(f"/api/v1/book/{token}/slots").json()["slots"]
    for round_ in range(4):
        start = slots[round_ * 4]["startsAt"]
        answers: list[httpx.Response] = []
        barrier = threading.Barrier(2)

        def book(
            start: str = start,
            answers: list[httpx.Response] = answers,
            barrier: threading.Barrier = barrier,
        ) -> None:
            with httpx.Client(base_url=server.url, timeout=30) as client:
                barrier.wait(timeout=10)
                answers.append(client.post(f"/api/v1/book/{token}", json=guest(start)))

        threads = [threading.Thread(target=book) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(a.status_code for a in answers) == [201, 409]
        lost = next(a for a in answers if a.status_code == 409).json()
        assert lost["code"] == "slot_taken"
        assert start not in [s["startsAt"] for s in lost["slots"]]


def _race(urls: list[str], path: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """POST ``bodies[i]`` to ``urls[i]`` + ``path`` at once; the answers in that order."""
    answers: list[httpx.Response | None] = [None] * len(urls)
    barrier = threading.Barrier(len(urls))

    def post(i: int) -> None:
        with httpx.Client(base_url=urls[i], timeout=30) as client:
            barrier.wait(timeout=10)
            answers[i] = client.post(path, json=bodies[i])

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(a is not None for a in answers)
    return [a for a in answers if a is not None]


def test_two_hosts_keep_uses_and_slots_exact(database_url: str, factory: Factory) -> None:
    config = make_config(database_url)
    owner = factory.owner()
    _, secret = factory.key(owner)
    with own_server(config) as one, own_server(config) as two:
        urls = [one.url, two.url]
        with httpx.Client(base_url=one.url, timeout=30) as api:
            for round_ in range(3):
                # One use left, two guests on two hosts, two different slots: one booking.
                token = token_of(make_link(api, secret, hours=8))
                slots = api.get(f"/api/v1/book/{token}/slots").json()["slots"]
                bodies = [guest(slots[0]["startsAt"]), guest(slots[8]["startsAt"])]
                answers = _race(urls, f"/api/v1/book/{token}", bodies)
                assert sorted(a.status_code for a in answers) == [201, 410], round_
                listed = api.get(LINKS, headers=bearer(secret)).json()["schedulingLinks"]
                assert listed[0]["usesLeft"] == 0
                # Uses to spare, one slot, two hosts: one booking, the other sees fresh slots.
                token = token_of(make_link(api, secret, hours=8, uses=5))
                free = api.get(f"/api/v1/book/{token}/slots").json()["slots"]
                assert len(free) > 16, (round_, free)
                slot = free[len(free) - 1 - round_]
                answers = _race(urls, f"/api/v1/book/{token}", [guest(slot["startsAt"])] * 2)
                assert sorted(a.status_code for a in answers) == [201, 409], round_
                lost = next(a for a in answers if a.status_code == 409).json()
                assert lost["code"] == "slot_taken"
                assert slot["startsAt"] not in [s["startsAt"] for s in lost["slots"]]


def test_sync_and_caldav_see_a_booking(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    _, secret = factory.key(app.owner)
    before = api.get(EVENTS, headers=bearer(secret)).json()["nextSyncToken"]
    token = token_of(make_link(api, secret))
    start = api.get(f"/api/v1/book/{token}/slots").json()["slots"][0]["startsAt"]
    booked = api.post(f"/api/v1/book/{token}", json=guest(start)).json()["booking"]
    synced = api.get(EVENTS, params={"syncToken": before}, headers=bearer(secret)).json()
    assert [e["id"] for e in synced["events"]] == [booked["eventId"]]
    listing = propfind(api, app, app.calendar(), "<d:getetag/>", depth="1")
    hrefs = [href for href in responses(listing) if href.endswith(".ics")]
    assert len(hrefs) == 1
    ics = dav(api, app, "GET", hrefs[0])
    assert ics.status_code == 200 and "dana@example.com" in ics.text.lower()


def test_a_link_s_token_is_never_a_logged_path() -> None:
    for path in ("/book/{}", "/book/manage/{}/cancel", "/api/v1/book/{}/slots"):
        secret = "3q2Fv8Lk0pZ7mN4sR1tW9xY6bC5dE8gH"
        assert secret not in loggable_path(path.format(secret))
        assert "<token>" in loggable_path(path.format(secret))
