"""Approvals over REST: a key whose writes wait answers 202 with a proposal, the key polls it
(``getProposal``), the owner approves or rejects it in the core (the pages and the CLI call
the same functions), conflicts fail, proposals expire (docs/changes.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import func, select

from calendar_service import keys
from calendar_service.changes import proposals
from calendar_service.changes.table import changes_t
from calendar_service.errors import NotFound, ProposalNotPending, ValidationFailed
from calendar_service.events import update_event
from calendar_service.events.approving import approve
from calendar_service.maintenance import purge_expired
from calendar_service.models import deliveries_t
from calendar_service.timeutil import utcnow
from tests.rest.conftest import EVENTS, create_event, event_body
from tests.rest.test_changes import WEEKLY, with_webhook
from tests.support import Factory, Owner, bearer

PROPOSALS = "/api/v1/calendar/proposals"


def change_count(factory: Factory, owner: Owner) -> int:
    return factory.db.call(  # type: ignore[no-any-return]
        lambda conn: conn.execute(
            select(func.count()).where(changes_t.c.user_id == owner.id)
        ).scalar_one()
    )


def approved(factory: Factory, owner: Owner, proposal_id: str, **options: Any) -> dict[str, Any]:
    return factory.db.call(  # type: ignore[no-any-return]
        approve,
        user_id=owner.id,
        proposal_id=proposal_id,
        now=options.get("now", utcnow()),
        transport="cli",
    )


def test_a_destructive_key_creates_at_once_and_its_update_waits_for_the_owner(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner, name="Careful agent", approval="destructive")
    event = create_event(api, secret)  # creates go through
    url = f"{EVENTS}/{event['id']}"
    before = change_count(factory, owner)
    answer = api.patch(url, json={"location": "Room 7"}, headers=bearer(secret))
    assert answer.status_code == 202, answer.text
    assert "calendar-change-id" not in answer.headers
    proposal = answer.json()
    assert proposal["id"].startswith("prop_")
    assert answer.headers["location"] == f"{PROPOSALS}/{proposal['id']}"
    assert proposal["status"] == "pending"
    assert proposal["kind"] == "updated"
    assert proposal["before"] == event
    assert proposal["after"]["location"] == "Room 7"
    assert proposal["actor"] == {"type": "key", "id": key_id, "name": "Careful agent"}
    assert proposal["operation"] == "updateCalendarEvent"
    assert proposal["requestId"] == answer.headers["request-id"]
    assert proposal["expiresAt"] > proposal["createdAt"]
    # Nothing changed yet: the event, the change log.
    assert api.get(url, headers=bearer(secret)).json() == event
    assert change_count(factory, owner) == before
    polled = api.get(answer.headers["location"], headers=bearer(secret))
    assert polled.status_code == 200 and polled.json() == proposal

    done = approved(factory, owner, proposal["id"])
    assert done["status"] == "approved" and len(done["changeIds"]) == 1
    shown = api.get(url, headers=bearer(secret)).json()
    assert shown["location"] == "Room 7"
    listed = api.get("/api/v1/calendar/changes", headers=bearer(secret)).json()["changes"]
    change = listed[0]
    assert change["id"] == done["changeIds"][0]
    assert change["actor"] == {"type": "key", "id": key_id, "name": "Careful agent"}
    assert change["transport"] == "cli"  # where the owner approved it
    assert change["requestId"] == answer.headers["request-id"]
    assert change["proposalId"] == proposal["id"]
    assert change["approvedBy"] == {"type": "owner", "id": owner.id, "name": owner.email}
    assert change["before"] == event and change["after"] == shown
    polled = api.get(answer.headers["location"], headers=bearer(secret)).json()
    assert polled["status"] == "approved" and polled["changeIds"] == done["changeIds"]
    # It is a change like any other: it undoes.
    undone = api.post(f"/api/v1/calendar/changes/{change['id']}/undo", headers=bearer(secret))
    assert undone.status_code == 202  # an undo that changes the event waits too
    assert approved(factory, owner, undone.json()["id"])["status"] == "approved"
    assert api.get(url, headers=bearer(secret)).json()["location"] is None


def test_an_all_key_waits_to_create_and_the_approval_creates_the_proposed_event(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="all")
    answer = api.post(EVENTS, json=event_body(title="Proposed"), headers=bearer(secret))
    assert answer.status_code == 202, answer.text
    proposal = answer.json()
    assert proposal["kind"] == "created" and proposal["before"] is None
    event_id = proposal["after"]["id"]
    assert api.get(f"{EVENTS}/{event_id}", headers=bearer(secret)).status_code == 404
    done = approved(factory, owner, proposal["id"])
    assert done["status"] == "approved"
    made = api.get(f"{EVENTS}/{event_id}", headers=bearer(secret)).json()
    assert made["title"] == "Proposed" and made["createdAt"] >= proposal["createdAt"]
    deleted = api.delete(f"{EVENTS}/{event_id}", headers=bearer(secret))
    assert deleted.status_code == 202 and deleted.json()["kind"] == "deleted"
    assert deleted.json()["after"] is None


def test_the_owner_rejects_and_a_decided_or_expired_proposal_is_a_409(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="destructive")
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    first = api.delete(url, headers=bearer(secret)).json()
    rejected = factory.db.call(
        proposals.reject, user_id=owner.id, proposal_id=first["id"], now=utcnow(), transport="cli"
    )
    assert rejected["status"] == "rejected" and "decidedAt" in rejected
    assert api.get(url, headers=bearer(secret)).status_code == 200
    for decide in (approved, _rejected):
        with pytest.raises(ProposalNotPending) as refused:
            decide(factory, owner, first["id"])
        assert refused.value.proposal_status == "rejected"
        assert refused.value.status == 409

    second = api.delete(url, headers=bearer(secret)).json()
    later = utcnow() + timedelta(days=8)
    with pytest.raises(ProposalNotPending) as expired:
        approved(factory, owner, second["id"], now=later)
    assert expired.value.proposal_status == "expired"
    assert "expired" in expired.value.message
    listed = factory.db.call(proposals.list_proposals, user_id=owner.id, now=later)
    assert [p["status"] for p in listed["proposals"]] == ["expired", "rejected"]
    assert api.get(url, headers=bearer(secret)).status_code == 200


def test_the_housekeeping_job_writes_expired_proposals_so(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="all")
    proposal = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    past = utcnow() - timedelta(seconds=1)

    def age(conn: Any) -> None:  # as if it were made a week ago
        table = proposals.proposals_t
        conn.execute(table.update().where(table.c.id == proposal["id"]).values(expires_at=past))

    factory.db.call(age)
    purged = factory.db.call(purge_expired, now=utcnow(), call_history_days=90)
    assert purged["proposalsExpired"] >= 1

    def stored(conn: Any) -> Any:
        table = proposals.proposals_t
        return conn.execute(select(table).where(table.c.id == proposal["id"])).one()

    row = factory.db.call(stored)
    assert row.status == "expired" and row.decided_at is not None
    polled = api.get(f"{PROPOSALS}/{proposal['id']}", headers=bearer(secret)).json()
    assert polled["status"] == "expired"


def _rejected(factory: Factory, owner: Owner, proposal_id: str) -> dict[str, Any]:
    return factory.db.call(  # type: ignore[no-any-return]
        proposals.reject, user_id=owner.id, proposal_id=proposal_id, now=utcnow(), transport="cli"
    )


def test_an_approval_fails_as_a_conflict_when_the_event_changed_since(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="destructive")
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    proposal = api.patch(url, json={"title": "Agent's title"}, headers=bearer(secret)).json()
    factory.db.call(
        update_event,
        principal=keys.owner_principal(owner.id),
        event_id=event["id"],
        body={"title": "Owner's title"},
        now=utcnow(),
    )
    before = change_count(factory, owner)
    done = approved(factory, owner, proposal["id"])
    assert done["status"] == "failed" and done["code"] == "conflict"
    assert event["id"] in done["reason"] and "nothing was changed" in done["reason"]
    assert api.get(url, headers=bearer(secret)).json()["title"] == "Owner's title"
    assert change_count(factory, owner) == before
    polled = api.get(f"{PROPOSALS}/{proposal['id']}", headers=bearer(secret)).json()
    assert polled["status"] == "failed" and polled["reason"] == done["reason"]


def test_only_the_key_that_proposed_reaches_its_proposal(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="all")
    _, other_key = factory.key(owner)
    _, stranger = factory.key(factory.owner())
    proposal = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
    for key in (other_key, stranger):
        answer = api.get(f"{PROPOSALS}/{proposal['id']}", headers=bearer(key))
        assert answer.status_code == 404, answer.text
        assert answer.json()["code"] == "not_found"
    unknown = api.get(f"{PROPOSALS}/prop_nope", headers=bearer(secret))
    assert unknown.status_code == 404
    with pytest.raises(NotFound):
        factory.db.call(
            approve,
            user_id=factory.owner().id,
            proposal_id=proposal["id"],
            now=utcnow(),
            transport="cli",
        )


def test_a_dry_run_says_the_write_would_wait_and_proposes_nothing(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="destructive")
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    dry = api.patch(url, params={"dryRun": "true"}, json={"title": "X"}, headers=bearer(secret))
    assert dry.status_code == 200, dry.text
    assert dry.json()["dryRun"] is True and dry.json()["awaitsApproval"] is True
    created = api.post(EVENTS, params={"dryRun": "true"}, json=event_body(), headers=bearer(secret))
    assert created.status_code == 200 and "awaitsApproval" not in created.json()
    listed = factory.db.call(proposals.list_proposals, user_id=owner.id, now=utcnow())
    assert listed == {"proposals": []}


def test_the_owners_webhook_hears_of_each_proposal(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    with_webhook(factory, owner)
    _, secret = factory.key(owner, approval="all")
    proposal = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()

    def read(conn: Any) -> list[tuple[str, dict[str, Any]]]:
        rows = conn.execute(
            select(deliveries_t.c.event_type, deliveries_t.c.payload).where(
                deliveries_t.c.user_id == owner.id
            )
        )
        return [(r.event_type, orjson.loads(r.payload)["data"]) for r in rows]

    assert factory.db.call(read) == [("calendar.proposal.created", {"proposal": proposal})]


def test_a_following_delete_waits_and_is_approved_as_one_change_that_undoes_whole(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, writer = factory.key(owner)
    _, careful = factory.key(owner, approval="destructive")
    series = create_event(api, writer, **WEEKLY)
    listed = api.get(
        EVENTS,
        params={"timeMin": "2026-03-01", "timeMax": "2026-04-30"},
        headers=bearer(writer),
    ).json()["events"]
    third = listed[2]["id"]
    answer = api.delete(f"{EVENTS}/{third}", params={"scope": "following"}, headers=bearer(careful))
    assert answer.status_code == 202, answer.text
    done = approved(factory, owner, answer.json()["id"])
    assert done["status"] == "approved"
    after = api.get(
        EVENTS, params={"timeMin": "2026-03-01", "timeMax": "2026-04-30"}, headers=bearer(writer)
    ).json()["events"]
    assert len(after) == 2
    undone = api.post(
        f"/api/v1/calendar/changes/{done['changeIds'][0]}/undo", headers=bearer(writer)
    )
    assert undone.status_code == 200, undone.text
    again = api.get(
        EVENTS, params={"timeMin": "2026-03-01", "timeMax": "2026-04-30"}, headers=bearer(writer)
    ).json()["events"]
    assert [e["id"] for e in again] == [e["id"] for e in listed]
    assert api.get(f"{EVENTS}/{series['id']}", headers=bearer(writer)).status_code == 200


def test_a_key_made_with_a_bad_approval_is_refused_naming_the_field(factory: Factory) -> None:
    owner = factory.owner()
    with pytest.raises(ValidationFailed) as refused:
        factory.key(owner, approval="sometimes")
    assert refused.value.errors[0]["field"] == "approval"


def _vevent(uid: str, summary: str, day: int) -> str:
    return (
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260301T120000Z\r\n"
        f"DTSTART:202603{day:02d}T090000Z\r\nDTEND:202603{day:02d}T100000Z\r\n"
        f"SUMMARY:{summary}\r\nEND:VEVENT\r\n"
    )


def test_an_import_that_would_update_waits_as_one_proposal_of_each_change(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, plain = factory.key(owner)
    _, careful = factory.key(owner, approval="destructive")
    head = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//EN\r\n"
    tail = "END:VCALENDAR\r\n"
    headers = {"Content-Type": "text/calendar"}
    first = head + _vevent("a@example.com", "Old A", 5) + tail
    assert (
        api.post(f"{EVENTS}/import", content=first, headers={**headers, **bearer(plain)}).json()[
            "created"
        ]
        == 1
    )
    # A new event alone goes through (a create), an update makes the whole import wait.
    second = head + _vevent("a@example.com", "New A", 5) + _vevent("b@example.com", "B", 6) + tail
    answer = api.post(f"{EVENTS}/import", content=second, headers={**headers, **bearer(careful)})
    assert answer.status_code == 202, answer.text
    proposal = answer.json()
    assert proposal["operation"] == "importCalendarEvents"
    assert sorted(c["kind"] for c in proposal["changes"]) == ["created", "updated"]
    listed = api.get(
        EVENTS, params={"timeMin": "2026-03-01", "timeMax": "2026-03-31"}, headers=bearer(plain)
    ).json()["events"]
    assert [e["title"] for e in listed] == ["Old A"]
    done = approved(factory, owner, proposal["id"])
    assert done["status"] == "approved" and len(done["changeIds"]) == 2
    listed = api.get(
        EVENTS, params={"timeMin": "2026-03-01", "timeMax": "2026-03-31"}, headers=bearer(plain)
    ).json()["events"]
    assert [e["title"] for e in listed] == ["New A", "B"]
    # Importing the same file again changes nothing, so nothing waits (the UIDs were kept).
    again = api.post(f"{EVENTS}/import", content=second, headers={**headers, **bearer(careful)})
    assert again.status_code == 200, again.text
    assert again.json()["skipped"] == 2
