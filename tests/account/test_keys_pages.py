"""The API keys page over HTTP: creating (secret once), listing, validation, revoking."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
from sqlalchemy import update

from calendar_service.access import keys
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings
from tests.support import Factory, bearer, delete_all

EVENTS = "/api/v1/calendar/events"
FREE_BUSY = "/api/v1/calendar/freeBusy"


def _secret(html: str) -> str:
    match = re.search(r'id="secret" class="secret" value="(calsk_[0-9A-Za-z]+)"', html)
    assert match, "no secret on the page"
    return match.group(1)


def test_a_key_made_in_the_page_shows_its_secret_once_and_works_on_the_api(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    work = factory.calendar(settings.owner, name="Work")
    created = settings.post(
        "/keys",
        {
            "name": "Work reader",
            "permission": "read",
            "expires": "custom",
            "expires_on": "2031-12-31",
            "calendar": work,
        },
    )
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    assert "it is shown only this once" in created.text
    secret = _secret(created.text)

    listing = settings.get("/keys").text
    assert secret not in listing
    assert secret[:12] in listing  # the prefix identifies it
    [record] = factory.db.call(keys.list_keys, user_id=settings.owner.id, now=utcnow())
    assert record["expiresAt"] == "2032-01-01T00:00:00Z"  # works through the chosen day
    assert record["calendarId"] == work and record["permission"] == "read"
    row = re.search(
        r"<tr>\s*<th scope=\"row\" data-label=\"Name\">Work reader</th>.*?</tr>", listing, re.S
    )
    assert row is not None
    assert "Read only" in row.group(0) and ">Work<" in row.group(0) and "Never" in row.group(0)

    answer = api.get(EVENTS, headers=bearer(secret))
    assert answer.status_code == 200
    assert [c["id"] for c in answer.json()["calendars"]] == [work]


def test_a_free_busy_key_made_in_the_page_sees_busy_times_only_and_its_history_says_so(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    form = {"name": "Scheduler", "permission": "freebusy", "expires": "30d", "calendar": ""}
    created = settings.post("/keys", form)
    assert created.status_code == 201
    assert "Free/busy only" in created.text
    secret = _secret(created.text)
    [record] = [
        k
        for k in factory.db.call(keys.list_keys, user_id=settings.owner.id, now=utcnow())
        if k["name"] == "Scheduler"
    ]
    assert record["permission"] == "freebusy" and record["scopes"] == ["calendar:freebusy"]
    window = {"timeMin": "2031-06-02T00:00Z", "timeMax": "2031-06-03T00:00Z"}
    assert api.post(FREE_BUSY, json=window, headers=bearer(secret)).status_code == 200
    refused = api.get(EVENTS, params=window, headers=bearer(secret))
    assert refused.status_code == 401 and refused.json()["code"] == "insufficient_scope"
    row = re.search(
        r"<tr>\s*<th scope=\"row\" data-label=\"Name\">Scheduler</th>.*?</tr>",
        settings.get("/keys").text,
        re.S,
    )
    assert row is not None and "Free/busy only" in row.group(0)
    calls = settings.get(f"/keys/{record['id']}/calls").text
    assert "Free/busy only" in calls
    assert "queryFreeBusy" in calls and "listCalendarEvents" in calls


def test_the_key_form_names_each_bad_field(settings: Settings) -> None:
    answer = settings.post(
        "/keys",
        {"name": "  ", "permission": "admin", "expires": "custom", "expires_on": "2001-01-01"},
    )
    assert answer.status_code == 400
    assert 'id="name-error">must be 1 to 200 characters<' in answer.text
    assert (
        'id="permission-error">must be &#39;read&#39;, &#39;write&#39; or &#39;freebusy&#39;<'
        in answer.text
    )
    assert 'id="expires-error">must be in the future<' in answer.text
    assert 'value="custom" selected' in answer.text  # the form keeps what was typed
    bad_date = settings.post(
        "/keys", {"name": "x", "permission": "read", "expires": "custom", "expires_on": "soon"}
    )
    assert bad_date.status_code == 400
    assert "choose a date such as 2026-12-31" in bad_date.text


def test_a_key_ending_within_the_hour_is_refused_as_the_cli_refuses_it(
    settings: Settings,
) -> None:
    soon = (utcnow() + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    answer = settings.post(
        "/keys", {"name": "x", "permission": "read", "expires": "custom", "expires_on": soon}
    )
    assert answer.status_code == 400
    assert 'id="expires-error">is less than an hour from now (' in answer.text
    assert "choose a later date" in answer.text


def test_revoking_asks_first_then_the_api_refuses_the_key(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    key_id, secret = factory.key(settings.owner, name="Old integration")
    confirm = settings.get(f"/keys/{key_id}/revoke")
    assert confirm.status_code == 200
    assert "Revoke “Old integration”?" in confirm.text
    assert (
        factory.db.call(keys.get_key, user_id=settings.owner.id, key_id=key_id)["revoked_at"]
        is None
    )

    done = settings.post(f"/keys/{key_id}/revoke")
    assert done.status_code == 303
    assert done.headers["location"] == "/settings/keys?notice=key-revoked"
    assert "The key is revoked" in settings.get("/keys?notice=key-revoked").text
    assert api.get(EVENTS, headers=bearer(secret)).status_code == 401

    again = settings.post(f"/keys/{key_id}/revoke")  # harmless, keeps the first time
    assert again.status_code == 303
    assert "was already revoked" in settings.get(f"/keys/{key_id}/revoke").text


def test_the_list_tells_active_expired_and_revoked_keys_apart(
    settings: Settings, factory: Factory
) -> None:
    active, _ = factory.key(settings.owner, name="Still good")
    expired, _ = factory.key(settings.owner, name="Ran out")
    revoked, _ = factory.key(settings.owner, name="Pulled")

    def age(conn: object) -> None:
        conn.execute(  # type: ignore[attr-defined]
            update(keys.keys_t)
            .where(keys.keys_t.c.id == expired)
            .values(expires_at=utcnow() - timedelta(days=1))
        )

    factory.db.call(age)
    factory.db.call(keys.revoke_key, user_id=settings.owner.id, key_id=revoked, now=utcnow())
    page = settings.get("/keys").text
    states = dict(
        re.findall(
            r'data-label="Name">([^<]+)</th>.*?<span class="badge state-\w+">(\w+)</span>',
            page,
            re.S,
        )
    )
    assert states == {"Still good": "Active", "Ran out": "Expired", "Pulled": "Revoked"}
    assert f"/keys/{revoked}/revoke" not in page  # nothing left to revoke
    assert f"/keys/{active}/revoke" in page


def test_a_call_the_key_was_refused_is_not_its_last_use_on_the_pages(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    key_id, secret = factory.key(settings.owner, name="Reader only", permission="read")
    refused = api.post(EVENTS, json={}, headers=bearer(secret))  # a read key writes
    assert refused.json()["code"] == "insufficient_scope", refused.text
    row = re.search(r"Reader only</th>.*?</tr>", settings.get("/keys").text, re.S)
    assert row is not None and "Never" in row.group(0)
    confirm = settings.get(f"/keys/{key_id}/revoke").text
    assert re.search(r"<dt>Last used</dt><dd>Never</dd>", confirm)

    assert api.get(EVENTS, headers=bearer(secret)).status_code == 200
    row = re.search(r"Reader only</th>.*?</tr>", settings.get("/keys").text, re.S)
    assert row is not None and "Never" not in row.group(0)
    confirm = settings.get(f"/keys/{key_id}/revoke").text
    assert not re.search(r"<dt>Last used</dt><dd>Never</dd>", confirm)


def test_a_revoked_key_says_who_revoked_it_and_one_of_a_deleted_calendar_names_it_so(
    settings: Settings, factory: Factory
) -> None:
    work = factory.calendar(settings.owner, name="Work")
    factory.key(settings.owner, name="Work sync", calendar_id=work)
    pulled, _ = factory.key(settings.owner, name="Pulled")
    factory.db.call(keys.revoke_key, user_id=settings.owner.id, key_id=pulled, now=utcnow())
    delete_all(factory.db, settings.owner, work)
    page = settings.get("/keys").text
    rows = dict(
        re.findall(r'data-label="Name">([^<]+)</th>(.*?)</tr>', page, re.S),
    )
    assert "(deleted calendar)" in rows["Work sync"]
    assert "All calendars" not in rows["Work sync"]
    assert 'Revoked</span> <span class="small muted">with its calendar</span>' in rows["Work sync"]
    assert 'Revoked</span> <span class="small muted">by you</span>' in rows["Pulled"]
