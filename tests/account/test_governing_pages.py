"""The pages where the owner governs what keys did (docs/changes.md, docs/settings.md):
*Pending* (approve, reject), *Activity* (every change, filters, undo, an event's history), a
key's page (its approval, undoing its work with or without revoking it), and the approval
choice on the keys page. Over HTTP; the browser tests are in test_governing_browser.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import httpx

from calendar_service.access import keys
from calendar_service.governance import proposals
from calendar_service.journal.change_table import changes_t
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings, text_of
from tests.rest.conftest import EVENTS, create_event
from tests.support import Factory, bearer, wait_for

CHANGES = "/api/v1/calendar/changes"


def _changes(api: httpx.Client, secret: str) -> list[dict[str, Any]]:
    return api.get(CHANGES, headers=bearer(secret)).json()["changes"]  # type: ignore[no-any-return]


def test_a_key_made_on_the_keys_page_waits_for_approval_as_chosen(
    settings: Settings, factory: Factory
) -> None:
    page = text_of(settings.get("/keys").text)
    assert "Wait for my approval" in page and "For changes and deletions" in page
    form = {"name": "Careful", "permission": "write", "expires": "30d", "calendar": ""}
    made = settings.post("/keys", {**form, "approval": "destructive"})
    assert made.status_code == 201, made.text
    listed = factory.db.call(keys.list_keys, user_id=settings.owner.id, now=utcnow())
    assert [k["approval"] for k in listed if k["name"] == "Careful"] == ["destructive"]
    refused = settings.post("/keys", {**form, "approval": "sometimes"})
    assert refused.status_code == 400 and 'id="approval-error"' in refused.text


def test_the_pending_page_shows_the_change_and_approving_makes_it(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(settings.owner, name="Travel agent", approval="destructive")
    event = create_event(api, secret, title="Flight to Lisbon", location="Gate 12")
    proposal = api.patch(
        f"{EVENTS}/{event['id']}", json={"location": "Gate 31"}, headers=bearer(secret)
    ).json()
    page = settings.get("/pending")
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Flight to Lisbon" in text and "Travel agent" in text
    assert "Gate 12" in text and "Gate 31" in text  # before and after, side by side
    done = settings.post(f"/pending/{proposal['id']}/approve")
    assert done.status_code == 303
    assert done.headers["location"] == "/settings/pending?notice=approved"
    assert "the change is made" in settings.get("/pending?notice=approved").text
    shown = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
    assert shown["location"] == "Gate 31"
    change = _changes(api, secret)[0]
    assert change["transport"] == "settings" and change["proposalId"] == proposal["id"]
    again = settings.post(f"/pending/{proposal['id']}/approve")
    assert again.status_code == 409 and "was already approved" in text_of(again.text)


def test_rejecting_on_the_pending_page_changes_nothing_and_a_failed_approval_says_why(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(settings.owner, approval="destructive")
    event = create_event(api, secret, title="Dentist")
    url = f"{EVENTS}/{event['id']}"
    deleted = api.delete(url, headers=bearer(secret)).json()
    assert settings.post(f"/pending/{deleted['id']}/reject").status_code == 303
    assert api.get(url, headers=bearer(secret)).status_code == 200
    moved = api.patch(url, json={"title": "Dentist (agent)"}, headers=bearer(secret)).json()
    edit = settings.get(f"/events/{event['id']}/edit")
    assert "History of this event" in edit.text
    factory.db.call(
        _owner_renames, user_id=settings.owner.id, event_id=event["id"], title="Dentist (mine)"
    )
    failed = settings.post(f"/pending/{moved['id']}/approve")
    assert failed.headers["location"] == "/settings/pending?notice=failed"
    page = text_of(settings.get("/pending?notice=failed").text)
    assert "Not made: the event changed since" in page and "Failed" in page
    assert "Rejected" in page
    assert api.get(url, headers=bearer(secret)).json()["title"] == "Dentist (mine)"


def _owner_renames(conn: Any, *, user_id: str, event_id: str, title: str) -> None:
    from calendar_service.calendar.events import update_event

    update_event(
        conn,
        principal=keys.owner_principal(user_id),
        event_id=event_id,
        body={"title": title},
        now=utcnow(),
    )


def test_the_activity_page_lists_filters_and_undoes_changes(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    agent_id, agent = factory.key(settings.owner, name="Booking bot")
    _, other = factory.key(settings.owner, name="Other bot")
    booked = create_event(api, agent, title="Haircut")
    create_event(api, other, title="Gym")
    page = text_of(settings.get("/activity").text)
    assert "Haircut" in page and "Gym" in page and "Booking bot" in page
    mine = text_of(settings.get(f"/activity?key={agent_id}").text)
    assert "Haircut" in mine and "Gym" not in mine
    history = text_of(settings.get(f"/activity?event={booked['id']}").text)
    assert "History of an event" in history and "Gym" not in history
    later = text_of(settings.get("/activity?since=2090-01-01").text)
    assert "No changes match these filters" in later
    bad = settings.get("/activity?since=yesterday")
    assert bad.status_code == 200 and 'role="alert"' in bad.text

    created = _changes(api, agent)[-1]
    assert created["eventId"] == booked["id"] or created["kind"] == "created"
    [change] = [c for c in _changes(api, agent) if c["eventId"] == booked["id"]]
    undone = settings.post(f"/activity/{change['id']}/undo", {"key": agent_id})
    assert undone.status_code == 303
    assert undone.headers["location"] == f"/settings/activity?key={agent_id}&notice=undone"
    assert api.get(f"{EVENTS}/{booked['id']}", headers=bearer(agent)).status_code == 404
    latest = _changes(api, agent)[0]
    assert latest["undoes"] == change["id"]
    assert latest["actor"]["type"] == "owner" and latest["transport"] == "settings"
    again = text_of(settings.get("/activity").text)
    assert "Undone" in again


def test_an_undo_of_an_event_changed_since_asks_before_forcing_it(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    _, agent = factory.key(settings.owner)
    event = create_event(api, agent, title="Review")
    url = f"{EVENTS}/{event['id']}"
    api.patch(url, json={"title": "Review (1)"}, headers=bearer(agent))
    api.patch(url, json={"title": "Review (2)"}, headers=bearer(agent))
    first = [c for c in _changes(api, agent) if c["kind"] == "updated"][-1]
    refused = settings.post(f"/activity/{first['id']}/undo")
    assert refused.status_code == 409
    assert "Undo anyway" in refused.text and "changed since" in text_of(refused.text)
    forced = settings.post(f"/activity/{first['id']}/undo", {"force": "true"})
    assert forced.status_code == 303
    assert api.get(url, headers=bearer(agent)).json()["title"] == "Review"


def test_the_key_page_shows_what_undoing_its_work_does_then_revokes_and_undoes(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    key_id, agent = factory.key(settings.owner, name="Rogue agent")
    _, assistant = factory.key(settings.owner, name="Good assistant")
    kept = create_event(api, assistant, title="Kept meeting")
    api.patch(f"{EVENTS}/{kept['id']}", json={"title": "Renamed"}, headers=bearer(agent))
    api.delete(f"{EVENTS}/{kept['id']}", headers=bearer(agent))
    made = create_event(api, agent, title="Spam event")
    calls = text_of(settings.get(f"/keys/{key_id}/calls").text)
    assert "Undo its work" in calls
    confirm = settings.get(f"/keys/{key_id}/undo")
    text = text_of(confirm.text)
    assert confirm.status_code == 200
    assert "Will be undone: 3 changes" in text and "Spam event" in text and "Renamed" in text
    # The preview changed nothing.
    assert api.get(f"{EVENTS}/{made['id']}", headers=bearer(agent)).status_code == 200
    since = re.search(r'name="since" value="([^"]+)"', confirm.text)
    assert since is not None
    begun = settings.post(f"/keys/{key_id}/undo", {"since": since.group(1), "revoke": "yes"})
    assert begun.status_code == 303  # at once, to the job's page
    job_page = begun.headers["location"]
    assert job_page.startswith(f"/settings/keys/{key_id}/undo/undo_")

    def finished() -> httpx.Response | None:
        page = settings.client.get(job_page)
        return page if "is undone" in page.text else None

    done = wait_for(finished, what="the job to end")
    assert "3 changes undone" in text_of(done.text) and "The key is revoked" in done.text
    assert api.get(EVENTS, headers=bearer(agent)).status_code == 401
    _, reader = factory.key(settings.owner, permission="read")
    assert api.get(f"{EVENTS}/{made['id']}", headers=bearer(reader)).status_code == 404
    back = api.get(f"{EVENTS}/{kept['id']}", headers=bearer(reader))
    assert back.status_code == 200 and back.json()["title"] == "Kept meeting"


def test_a_keys_approval_is_changed_on_its_page(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    key_id, agent = factory.key(settings.owner)
    saved = settings.post(f"/keys/{key_id}/approval", {"approval": "all"})
    assert saved.headers["location"] == f"/settings/keys/{key_id}/calls?notice=approval-saved"
    assert "its writes wait as chosen" in settings.client.get(saved.headers["location"]).text
    waits = api.post(EVENTS, json={"title": "x", "startsAt": "2031-01-01", "endsAt": "2031-01-01",
                                   "allDay": True}, headers=bearer(agent))  # fmt: skip
    assert waits.status_code == 202
    listed = factory.db.call(
        proposals.list_proposals, user_id=settings.owner.id, now=utcnow(), status="pending"
    )
    assert [p["id"] for p in listed["proposals"]] == [waits.json()["id"]]


def test_another_owners_proposal_change_and_key_are_not_found(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    stranger = factory.owner()
    key_id, secret = factory.key(stranger, approval="all")
    proposal = api.post(
        EVENTS, json={"title": "x", "startsAt": "2031-01-01", "endsAt": "2031-01-01",
                      "allDay": True}, headers=bearer(secret),
    ).json()  # fmt: skip
    _, writer = factory.key(stranger)
    create_event(api, writer)
    change = _changes(api, writer)[0]
    for answer in (
        settings.post(f"/pending/{proposal['id']}/approve"),
        settings.post(f"/pending/{proposal['id']}/reject"),
        settings.post(f"/activity/{change['id']}/undo"),
        settings.get(f"/keys/{key_id}/undo"),
        settings.post(f"/keys/{key_id}/undo", {"since": "2020-01-01"}),
        settings.post(f"/keys/{key_id}/approval", {"approval": "none"}),
    ):
        assert answer.status_code == 404, answer.text
    assert "x" not in text_of(settings.get("/pending").text).split()


def test_the_activity_page_filters_by_days_from_and_to(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    _, agent = factory.key(settings.owner, name="Day bot")
    old = create_event(api, agent, title="In January")
    create_event(api, agent, title="Made today")
    [change] = [c for c in _changes(api, agent) if c["eventId"] == old["id"]]

    def back_date(conn: Any) -> None:  # as if made on 10 January at noon
        at = datetime(2026, 1, 10, 12, tzinfo=UTC)
        conn.execute(changes_t.update().where(changes_t.c.id == change["id"]).values(at=at))

    factory.db.call(back_date)
    both = text_of(settings.get("/activity?since=2026-01-10&until=2026-01-10").text)
    assert "In January" in both and "Made today" not in both
    before = text_of(settings.get("/activity?until=2026-01-09").text)
    assert "No changes match these filters" in before
    since = text_of(settings.get("/activity?since=2026-01-11").text)
    assert "Made today" in since and "In January" not in since
    bad = settings.get("/activity?until=soon")
    assert bad.status_code == 200 and 'role="alert"' in bad.text
    assert "To: must be a day" in text_of(bad.text)
    form = text_of(settings.get("/activity").text)
    assert "From" in form and "To" in form
