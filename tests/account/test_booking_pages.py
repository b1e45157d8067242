"""A scheduling link's page over HTTP, without JavaScript: the week's slots in a zone the form
picks, booking with the double-submit CSRF token, hostile input, the confirmation page with
its reschedule and cancel forms, gone links, and the per-link budget."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import csrf_from, text_of
from tests.conftest import make_config
from tests.support import (
    Factory,
    RunningServer,
    bearer,
    fresh_database_url,
    migrated_database,
    own_server,
)

LINKS = "/api/v1/calendar/schedulingLinks"
_SLOT = re.compile(r'name="slot" value="([^"]+)"')


def make_link(api: httpx.Client, secret: str, **fields: Any) -> str:
    """A link over tomorrow's 09:00 to 12:00 UTC; returns its page's path."""
    day = (utcnow() + timedelta(days=1)).astimezone(UTC).date().isoformat()
    body = {
        "title": "Intro call",
        "durationMinutes": 30,
        "timeMin": f"{day}T09:00:00Z",
        "timeMax": f"{day}T12:00:00Z",
        **fields,
    }
    made = api.post(LINKS, json=body, headers=bearer(secret))
    assert made.status_code == 201, made.text
    return "/book/" + str(made.json()["url"]).rsplit("/", 1)[1]


@pytest.fixture
def guest(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def test_the_page_lists_slots_in_the_zone_asked_and_books_one(
    guest: httpx.Client, api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    path = make_link(api, secret, description="<b>Bring questions</b>")
    page = guest.get(path, params={"timeZone": "Asia/Tokyo"})
    assert page.status_code == 200
    assert "no-store" in page.headers["cache-control"]
    assert "Intro call" in page.text
    assert "&lt;b&gt;Bring questions&lt;/b&gt;" in page.text  # escaped
    slots = _SLOT.findall(page.text)
    assert slots and all(s.endswith("+09:00") for s in slots)
    assert '<option value="Asia/Tokyo" selected>' in page.text
    answer = guest.post(
        path,
        data={
            "csrf_token": csrf_from(page.text),
            "slot": slots[0],
            "name": "Dana Scully",
            "email": "dana@example.com",
            "timeZone": "Asia/Tokyo",
        },
    )
    assert answer.status_code == 303
    manage = answer.headers["location"]
    assert manage.startswith("/book/manage/") and manage.endswith("timeZone=Asia/Tokyo")
    confirmation = guest.get(manage)
    assert confirmation.status_code == 200
    text = text_of(confirmation.text)
    assert "You are booked" in text and "Dana Scully" in text and "(Asia/Tokyo)" in text
    assert "Cancel this booking" in text and "Move my booking" in text
    events = api.get("/api/v1/calendar/events", headers=bearer(secret)).json()["events"]
    assert [e["title"] for e in events] == ["Intro call with Dana Scully"]
    # The link is used up (one use): its page says so.
    gone = guest.get(path)
    assert gone.status_code == 410 and "used as many times" in gone.text


def test_a_post_without_the_cookie_s_token_is_refused(
    guest: httpx.Client, api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    path = make_link(api, secret)
    page = guest.get(path)
    slot = _SLOT.findall(page.text)[0]
    form = {"slot": slot, "name": "Eve", "email": "eve@example.com"}
    forged = guest.post(path, data={**form, "csrf_token": "x" * 43})
    assert forged.status_code == 403 and "expired" in forged.text
    with httpx.Client(base_url=str(guest.base_url), timeout=30) as stranger:  # no cookie
        assert (
            stranger.post(path, data={**form, "csrf_token": csrf_from(page.text)}).status_code
            == 403
        )
    cross = guest.post(
        path,
        data={**form, "csrf_token": csrf_from(page.text)},
        headers={"sec-fetch-site": "cross-site"},
    )
    assert cross.status_code == 403
    assert api.get("/api/v1/calendar/events", headers=bearer(secret)).json()["events"] == []


def test_hostile_names_and_emails_are_refused_on_the_page(
    guest: httpx.Client, api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    path = make_link(api, secret)
    page = guest.get(path)
    slot = _SLOT.findall(page.text)[0]
    for name, email, field in (
        ("Eve\r\nBcc: all@example.com", "eve@example.com", "name-error"),
        ("<img src=x onerror=alert(1)>", "eve@example.com", "name-error"),
        ("Eve", "eve@example.com\nBcc: x@example.com", "email-error"),
    ):
        refused = guest.post(
            path,
            data={"csrf_token": csrf_from(page.text), "slot": slot, "name": name, "email": email},
        )
        assert refused.status_code == 400
        assert f'id="{field}"' in refused.text
        assert "<img src=x" not in refused.text


def test_the_guest_moves_then_cancels_from_the_confirmation_page(
    guest: httpx.Client, api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    path = make_link(api, secret)
    page = guest.get(path)
    slots = _SLOT.findall(page.text)
    booked = guest.post(
        path,
        data={
            "csrf_token": csrf_from(page.text),
            "slot": slots[0],
            "name": "Dana",
            "email": "dana@example.com",
        },
    )
    manage = booked.headers["location"].split("?")[0]
    confirmation = guest.get(manage)
    moved = guest.post(
        manage + "/reschedule", data={"csrf_token": csrf_from(confirmation.text), "slot": slots[3]}
    )
    assert moved.status_code == 303, moved.text
    events = api.get("/api/v1/calendar/events", headers=bearer(secret)).json()["events"]
    assert [e["startsAt"] for e in events] == [slots[3]]
    cancelled = guest.post(manage + "/cancel", data={"csrf_token": csrf_from(confirmation.text)})
    assert cancelled.status_code == 200 and "Booking cancelled" in cancelled.text
    assert api.get("/api/v1/calendar/events", headers=bearer(secret)).json()["events"] == []
    assert guest.get(manage).status_code == 410


def test_an_unknown_link_is_a_404_page(guest: httpx.Client) -> None:
    missing = guest.get("/book/" + "A" * 32)
    assert missing.status_code == 404 and "no scheduling link" in missing.text


def test_each_link_and_address_has_a_budget(tmp_path: Path) -> None:
    with fresh_database_url(tmp_path) as url:
        config = make_config(url, booking_rate_limit=(5, 60))
        with migrated_database(config) as db:
            factory = Factory(db)
            owner = factory.owner()
            _, secret = factory.key(owner)
            with (
                own_server(config) as server,
                httpx.Client(base_url=server.url, timeout=30) as api,
            ):
                path = make_link(api, secret)
                other = make_link(api, secret)
                assert [api.get(path).status_code for _ in range(6)] == [200] * 5 + [429]
                # This address has spent its budget: a fresh link is refused to it too.
                limited = api.get("/api/v1/book/" + other.rsplit("/", 1)[1] + "/slots")
                assert limited.status_code == 429
                assert limited.json()["code"] == "rate_limited"
                assert int(limited.headers["Retry-After"]) >= 1


def test_the_public_api_answers_say_what_is_left_of_the_budget(tmp_path: Path) -> None:
    with fresh_database_url(tmp_path) as url:
        config = make_config(url, booking_rate_limit=(5, 60))
        with migrated_database(config) as db:
            _, secret = Factory(db).key(Factory(db).owner())
            with (
                own_server(config) as server,
                httpx.Client(base_url=server.url, timeout=30) as api,
            ):
                slots = "/api/v1" + make_link(api, secret) + "/slots"
                answers = [api.get(slots) for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    assert {a.headers["RateLimit-Limit"] for a in answers} == {"5"}
    # The budget nearer its end (the link's and the address's are spent alike here).
    assert [int(a.headers["RateLimit-Remaining"]) for a in answers] == [4, 3, 2]


def test_the_owner_sees_and_revokes_every_link(
    settings: Any, api: httpx.Client, factory: Factory, guest: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, name="Assistant")
    path = make_link(api, secret, title="Coffee chat")
    page = settings.get("/links")
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Coffee chat" in text and "Assistant" in text and "1 of 1" in text
    link_id = re.search(r"/settings/links/(link_[A-Za-z0-9]+)/revoke", page.text)
    assert link_id
    revoked = settings.post(f"/links/{link_id.group(1)}/revoke")
    assert revoked.status_code == 303
    assert "Link revoked" in text_of(settings.client.get(revoked.headers["location"]).text)
    assert guest.get(path).status_code == 410
    # Another owner's link is not this owner's to see or revoke.
    other = factory.owner()
    _, theirs = factory.key(other)
    make_link(api, theirs, title="Not yours")
    assert "Not yours" not in settings.get("/links").text
