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

from calendar_service.access import keys
from calendar_service.calendar.events import update_event
from calendar_service.governance import proposals
from calendar_service.governance.approving import approve
from calendar_service.journal.change_table import changes_t
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.errors import NotFound, ProposalNotPending, ValidationFailed
from calendar_service.platform.models import deliveries_t
from calendar_service.platform.timeutil import utcnow
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


def test_a_create_that_waits_keeps_its_idempotency_key(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="all")
    headers = {**bearer(secret), "Idempotency-Key": "book-planning-1"}
    first = api.post(EVENTS, json=event_body(title="Once"), headers=headers)
    assert first.status_code == 202, first.text
    assert "idempotent-replayed" not in first.headers
    proposal = first.json()
    again = api.post(EVENTS, json=event_body(title="Once"), headers=headers)
    assert again.status_code == 202, again.text
    assert again.json() == proposal  # the same proposal, not a second one
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["location"] == first.headers["location"]
    listed = factory.db.call(proposals.list_proposals, user_id=owner.id, now=utcnow())
    assert [p["id"] for p in listed["proposals"]] == [proposal["id"]]
    # The same key with another body: 422, as for any create; a dry run proposes nothing.
    other = api.post(EVENTS, json=event_body(title="Twice"), headers=headers)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    dry = api.post(
        EVENTS, params={"dryRun": "true"}, json=event_body(title="Once"), headers=headers
    )
    assert dry.status_code == 200, dry.text
    assert dry.json()["kind"] is None and dry.json()["awaitsApproval"] is True
    # Once approved, a retry answers the proposal as it is now: approved, with its change.
    done = approved(factory, owner, proposal["id"])
    late = api.post(EVENTS, json=event_body(title="Once"), headers=headers)
    assert late.status_code == 202 and late.json() == done
    assert late.json()["status"] == "approved"
    listed = factory.db.call(proposals.list_proposals, user_id=owner.id, now=utcnow())
    assert len(listed["proposals"]) == 1
    event_id = proposal["after"]["id"]
    assert api.get(f"{EVENTS}/{event_id}", headers=bearer(secret)).json()["title"] == "Once"


def test_if_free_is_checked_again_when_the_owner_approves(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="all")
    _, writer = factory.key(owner)
    body = event_body(title="Only if free", ifFree=True)
    waiting = api.post(EVENTS, json=body, headers=bearer(secret))
    assert waiting.status_code == 202, waiting.text
    # Another booking takes the time meanwhile (a key without approval: made at once).
    taken = create_event(
        api, writer, title="Booked since", startsAt="2026-03-02T09:30:00Z",
        endsAt="2026-03-02T11:00:00Z",
    )  # fmt: skip
    before = change_count(factory, owner)
    done = approved(factory, owner, waiting.json()["id"])
    assert done["status"] == "failed" and done["code"] == "conflict"
    assert "ifFree" in done["reason"] and "not free" in done["reason"]
    assert taken["title"] in done["reason"] or "09:30" in done["reason"]
    assert change_count(factory, owner) == before  # nothing was created
    event_id = waiting.json()["after"]["id"]
    assert api.get(f"{EVENTS}/{event_id}", headers=bearer(secret)).status_code == 404
    # Still free at approval: it is created.
    free = api.post(
        EVENTS, json=event_body(startsAt="2026-03-03T09:00:00Z", endsAt="2026-03-03T10:00:00Z",
                                ifFree=True), headers=bearer(secret),
    )  # fmt: skip
    assert free.status_code == 202, free.text
    assert approved(factory, owner, free.json()["id"])["status"] == "approved"


def test_every_refusal_of_the_change_log_and_approvals_has_its_code(
    api: httpx.Client, factory: Factory
) -> None:
    """Issue 26, item 8, as one table: each refusal's status and machine-readable code."""
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, writer = factory.key(owner)
    _, reader = factory.key(owner, permission="read")
    _, free_busy = factory.key(owner, permission="freebusy")
    _, work_only = factory.key(owner, calendar_id=work)
    _, careful = factory.key(owner, approval="all")
    _, stranger = factory.key(factory.owner())
    made = api.post(EVENTS, json=event_body(), headers=bearer(writer))
    change_id = made.headers["calendar-change-id"]
    proposal_id = api.post(EVENTS, json=event_body(), headers=bearer(careful)).json()["id"]
    undo_url = f"/api/v1/calendar/changes/{change_id}/undo"
    cases: list[tuple[str, str, str, dict[str, Any], int, str]] = [
        ("unknown change", "POST", "/api/v1/calendar/changes/chg_nope/undo", {}, 404, "not_found"),
        ("another owner's change", "POST", undo_url, {"key": stranger}, 404, "not_found"),
        ("another calendar's change", "POST", undo_url, {"key": work_only}, 404, "not_found"),
        ("a read key undoing", "POST", undo_url, {"key": reader}, 401, "insufficient_scope"),
        ("a free/busy key undoing", "POST", undo_url, {"key": free_busy}, 401,
         "insufficient_scope"),
        ("a free/busy key listing", "GET", "/api/v1/calendar/changes", {"key": free_busy}, 401,
         "insufficient_scope"),
        ("a one-calendar key naming another", "GET", "/api/v1/calendar/changes",
         {"key": work_only, "params": {"calendarId": owner.default_calendar_id}}, 401,
         "insufficient_scope"),
        ("unknown proposal", "GET", f"{PROPOSALS}/prop_nope", {}, 404, "not_found"),
        ("another key's proposal", "GET", f"{PROPOSALS}/{proposal_id}", {}, 404, "not_found"),
        ("another owner's proposal", "GET", f"{PROPOSALS}/{proposal_id}", {"key": stranger},
         404, "not_found"),
        ("a free/busy key's proposal", "GET", f"{PROPOSALS}/{proposal_id}", {"key": free_busy},
         401, "insufficient_scope"),
        ("force not a flag", "POST", undo_url, {"params": {"force": "yes"}}, 400,
         "validation_error"),
        ("a filter it does not take", "GET", "/api/v1/calendar/changes",
         {"params": {"actorId": "x"}}, 400, "unknown_parameter"),
    ]  # fmt: skip
    for name, method, url, options, status, code in cases:
        answer = api.request(
            method, url, params=options.get("params"), headers=bearer(options.get("key", writer))
        )
        assert (answer.status_code, answer.json()["code"]) == (status, code), (name, answer.text)
        assert answer.json()["detail"], name  # and says what to do, in words
    # The owner's refusals (settings pages and CLI call the same core): a decided or expired
    # proposal is a 409 proposal_not_pending naming its status; another owner's is a 404.
    assert _rejected(factory, owner, proposal_id)["status"] == "rejected"
    later = api.post(EVENTS, json=event_body(), headers=bearer(careful)).json()["id"]
    for decide, which, when, status in (
        (approved, proposal_id, utcnow(), "rejected"),
        (approved, later, utcnow() + timedelta(days=8), "expired"),
    ):
        with pytest.raises(ProposalNotPending) as refused:
            decide(factory, owner, which, now=when)
        assert (refused.value.status, refused.value.code) == (409, "proposal_not_pending")
        assert refused.value.proposal_status == status
    with pytest.raises(NotFound) as unknown:
        approved(factory, factory.owner(), later)
    assert (unknown.value.status, unknown.value.code) == (404, "not_found")
