"""The change log over REST: ``listChanges``, ``undoChange``, ``Calendar-Change-Id`` on every
write, ``?dryRun=true``, and who may see and undo what (docs/changes.md)."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from sqlalchemy import func, select

from calendar_service.access import call_history as history
from calendar_service.journal.change_table import changes_t
from calendar_service.platform.models import deliveries_t, event_sync_t, events_t, records_t
from tests.rest.conftest import EVENTS, create_event, event_body
from tests.support import Factory, Owner, bearer

CHANGES = "/api/v1/calendar/changes"
WEEKLY = {
    "title": "Stand-up",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T09:15:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=6"],
}


def changes(api: httpx.Client, secret: str, **params: Any) -> dict[str, Any]:
    answer = api.get(CHANGES, params=params, headers=bearer(secret))
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def undo(api: httpx.Client, secret: str, change_id: str, **params: Any) -> httpx.Response:
    return api.post(f"{CHANGES}/{change_id}/undo", params=params, headers=bearer(secret))


def counts(factory: Factory, owner: Owner) -> dict[str, int]:
    """What a write leaves behind, counted: events, changes, webhook deliveries, idempotency
    records and sync entries of the owner's default calendar."""

    def count(conn: Any) -> dict[str, int]:
        cal = owner.default_calendar_id
        one = conn.execute
        return {
            "events": one(select(func.count()).where(events_t.c.calendar_id == cal)).scalar_one(),
            "changes": one(
                select(func.count()).where(changes_t.c.user_id == owner.id)
            ).scalar_one(),
            "deliveries": one(
                select(func.count()).where(deliveries_t.c.user_id == owner.id)
            ).scalar_one(),
            "records": one(select(func.count()).select_from(records_t)).scalar_one(),
            "sync": one(select(func.count()).where(event_sync_t.c.calendar_id == cal)).scalar_one(),
        }

    return factory.db.call(count)  # type: ignore[no-any-return]


def with_webhook(factory: Factory, owner: Owner) -> None:
    """An active webhook endpoint, so that every change queues a delivery."""
    from calendar_service.platform.ids import new_id
    from calendar_service.platform.models import endpoints_t
    from calendar_service.platform.timeutil import utcnow

    def add(conn: Any) -> None:
        now = utcnow()
        conn.execute(
            endpoints_t.insert().values(
                id=new_id("whe"),
                user_id=owner.id,
                url="https://hooks.example/calendar",
                secret="whsec_" + "A" * 44,
                status="active",
                created_at=now,
                updated_at=now,
            )
        )

    factory.db.call(add)


def deliveries(factory: Factory, owner: Owner) -> list[tuple[str, dict[str, Any]]]:
    def read(conn: Any) -> list[tuple[str, dict[str, Any]]]:
        rows = conn.execute(
            select(deliveries_t.c.event_type, deliveries_t.c.payload)
            .where(deliveries_t.c.user_id == owner.id)
            .order_by(deliveries_t.c.created_at, deliveries_t.c.id)
        )
        return [(r.event_type, orjson.loads(r.payload)["data"]["event"]) for r in rows]

    return factory.db.call(read)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# The change id on every write, and the list


def test_every_write_answers_with_its_change_id_and_the_list_shows_it_newest_first(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner, name="Scheduling agent")
    made = api.post(EVENTS, json=event_body(), headers=bearer(secret))
    url = f"{EVENTS}/{made.json()['id']}"
    changed = api.patch(url, json={"location": "Room 7"}, headers=bearer(secret))
    deleted = api.delete(url, headers=bearer(secret))
    ids = [r.headers["calendar-change-id"] for r in (made, changed, deleted)]
    assert all(i.startswith("chg_") for i in ids) and len(set(ids)) == 3
    listed = changes(api, secret)["changes"]
    assert [c["id"] for c in listed] == ids[::-1]
    assert [c["kind"] for c in listed] == ["deleted", "updated", "created"]
    created = listed[2]
    assert created["before"] is None and created["after"] == made.json()
    assert listed[1]["before"] == made.json() and listed[1]["after"] == changed.json()
    assert listed[0]["before"] == changed.json() and listed[0]["after"] is None
    assert created["actor"] == {"type": "key", "id": key_id, "name": "Scheduling agent"}
    assert {c["transport"] for c in listed} == {"rest"}
    assert [c["requestId"] for c in listed] == [
        r.headers["request-id"] for r in (deleted, changed, made)
    ]
    calls = factory.db.call(history.list_calls, key_id=key_id)
    assert [c["requestId"] for c in calls[1:4]] == [c["requestId"] for c in listed]


def test_a_patch_that_sends_no_field_is_no_change_and_a_failed_write_leaves_none(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    event = create_event(api, secret)
    before = counts(factory, owner)
    same = api.patch(f"{EVENTS}/{event['id']}", json={}, headers=bearer(secret))
    assert same.status_code == 200 and "calendar-change-id" not in same.headers
    bad = api.patch(f"{EVENTS}/{event['id']}", json={"title": ""}, headers=bearer(secret))
    assert bad.status_code == 400 and "calendar-change-id" not in bad.headers
    busy = api.post(EVENTS, json=event_body(ifFree=True), headers=bearer(secret))
    assert busy.status_code == 409
    assert counts(factory, owner) == before


def test_the_list_pages_filters_and_refuses_what_it_does_not_take(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, secret = factory.key(owner)
    mine = [create_event(api, secret, title=f"E{n}")["id"] for n in range(3)]
    elsewhere = create_event(api, secret, calendarId=work)
    api.patch(f"{EVENTS}/{mine[0]}", json={"title": "E0 again"}, headers=bearer(secret))
    first = changes(api, secret, limit=2)
    assert len(first["changes"]) == 2
    rest = changes(api, secret, limit=2, pageToken=first["nextPageToken"])
    last = changes(api, secret, limit=2, pageToken=rest["nextPageToken"])
    assert "nextPageToken" not in last
    seen = [c["id"] for c in first["changes"] + rest["changes"] + last["changes"]]
    assert seen == [c["id"] for c in changes(api, secret)["changes"]] and len(seen) == 5
    assert [c["kind"] for c in changes(api, secret, eventId=mine[0])["changes"]] == [
        "updated",
        "created",
    ]
    [only] = changes(api, secret, calendarId=work)["changes"]
    assert only["eventId"] == elsewhere["id"]
    future = changes(api, secret, since="2200-01-01T00:00:00Z")
    assert future == {"changes": []}
    other_token = api.get(
        CHANGES, params={"limit": 2, "pageToken": first["nextPageToken"], "eventId": mine[1]},
        headers=bearer(secret),
    )  # fmt: skip
    assert other_token.status_code == 400
    assert other_token.json()["errors"][0]["field"] == "pageToken"
    unknown = api.get(CHANGES, params={"kind": "deleted"}, headers=bearer(secret))
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_parameter"
    bad_since = api.get(CHANGES, params={"since": "yesterday"}, headers=bearer(secret))
    assert bad_since.status_code == 400
    assert bad_since.json()["errors"][0]["field"] == "since"


# ---------------------------------------------------------------------------------------------
# Who sees what


def test_keys_see_the_changes_they_reach_and_a_free_busy_key_sees_none(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, everything = factory.key(owner)
    _, reader = factory.key(owner, permission="read")
    _, work_only = factory.key(owner, calendar_id=work)
    _, free_busy = factory.key(owner, permission="freebusy")
    _, stranger = factory.key(factory.owner())
    private = create_event(api, everything)
    at_work = create_event(api, work_only)
    assert {c["eventId"] for c in changes(api, reader)["changes"]} == {
        private["id"],
        at_work["id"],
    }
    assert [c["eventId"] for c in changes(api, work_only)["changes"]] == [at_work["id"]]
    assert changes(api, stranger) == {"changes": []}
    refused = api.get(CHANGES, headers=bearer(free_busy))
    assert refused.status_code == 401 and refused.json()["code"] == "insufficient_scope"
    other = api.get(
        CHANGES, params={"calendarId": owner.default_calendar_id}, headers=bearer(work_only)
    )
    assert other.status_code == 401 and other.json()["code"] == "insufficient_scope"


def test_a_change_out_of_reach_is_not_found_and_a_read_key_may_not_undo(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, everything = factory.key(owner)
    _, reader = factory.key(owner, permission="read")
    _, work_only = factory.key(owner, calendar_id=work)
    _, stranger = factory.key(factory.owner())
    made = api.post(EVENTS, json=event_body(), headers=bearer(everything))
    change_id = made.headers["calendar-change-id"]
    for secret in (stranger, work_only):
        answer = undo(api, secret, change_id)
        assert answer.status_code == 404 and answer.json()["code"] == "not_found", answer.text
    for made_up in ("chg_066133a21e8c4d5f3b2a1c0d9e8f7a6b", "nothing", "chg_zz"):
        assert undo(api, everything, made_up).status_code == 404
    refused = undo(api, reader, change_id)
    assert refused.status_code == 401 and refused.json()["code"] == "insufficient_scope"
    assert api.get(f"{EVENTS}/{made.json()['id']}", headers=bearer(everything)).status_code == 200


# ---------------------------------------------------------------------------------------------
# Undo


def test_undoing_a_create_an_update_and_a_delete_puts_each_back_with_its_webhook(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    with_webhook(factory, owner)
    _, secret = factory.key(owner)
    made = api.post(EVENTS, json=event_body(description="d"), headers=bearer(secret))
    event = made.json()
    url = f"{EVENTS}/{event['id']}"
    changed = api.patch(url, json={"title": "Moved", "location": "Room 7"}, headers=bearer(secret))
    back = undo(api, secret, changed.headers["calendar-change-id"])
    assert back.status_code == 200, back.text
    undone = back.json()
    assert back.headers["calendar-change-id"] == undone["id"]
    assert undone["kind"] == "updated" and undone["undoes"] == changed.headers["calendar-change-id"]
    restored = api.get(url, headers=bearer(secret)).json()
    assert {**restored, "updatedAt": None} == {**event, "updatedAt": None}
    assert restored["updatedAt"] > changed.json()["updatedAt"]
    assert undone["after"] == restored and undone["before"] == changed.json()
    deleted = api.delete(url, headers=bearer(secret))
    assert undo(api, secret, deleted.headers["calendar-change-id"]).status_code == 200
    assert {**api.get(url, headers=bearer(secret)).json(), "updatedAt": None} == {
        **event,
        "updatedAt": None,
    }
    create_change = made.headers["calendar-change-id"]
    api.patch(url, json={"title": "Moved again"}, headers=bearer(secret))
    refused = undo(api, secret, create_change)
    assert refused.status_code == 409 and refused.json()["code"] == "conflict"
    forced = undo(api, secret, create_change, force="true")
    assert forced.status_code == 200 and forced.json()["kind"] == "deleted"
    assert api.get(url, headers=bearer(secret)).status_code == 404
    assert [kind for kind, _ in deliveries(factory, owner)] == [
        "calendar.event.created",
        "calendar.event.updated",
        "calendar.event.updated",  # the undo of the update
        "calendar.event.deleted",
        "calendar.event.created",  # the undo of the delete
        "calendar.event.updated",
        "calendar.event.deleted",  # the forced undo of the create
    ]
    listed = {c["id"]: c for c in changes(api, secret)["changes"]}
    assert listed[changed.headers["calendar-change-id"]]["undoneBy"] == undone["id"]


def test_an_undo_is_refused_while_the_event_changed_since_naming_the_later_changes(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    first = api.patch(url, json={"title": "One"}, headers=bearer(secret))
    second = api.patch(url, json={"title": "Two"}, headers=bearer(secret))
    refused = undo(api, secret, first.headers["calendar-change-id"])
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["code"] == "conflict"
    later = second.headers["calendar-change-id"]
    assert [c["id"] for c in problem["changes"]] == [later]
    assert later in problem["detail"]
    assert undo(api, secret, later).status_code == 200  # newest first...
    assert undo(api, secret, first.headers["calendar-change-id"]).status_code == 200  # ...then
    assert api.get(url, headers=bearer(secret)).json()["title"] == event["title"]
    again = undo(api, secret, later)
    assert again.status_code == 409 and again.json()["code"] == "already_undone"
    assert again.json()["undoneBy"].startswith("chg_")


def test_undoing_an_undo_makes_the_change_again(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    deleted = api.delete(url, headers=bearer(secret)).headers["calendar-change-id"]
    restored = undo(api, secret, deleted).json()
    redone = undo(api, secret, restored["id"])
    assert redone.status_code == 200 and redone.json()["kind"] == "deleted"
    assert api.get(url, headers=bearer(secret)).status_code == 404
    listed = {c["id"]: c for c in changes(api, secret)["changes"]}
    assert "undoneBy" not in listed[deleted]  # in force again
    assert listed[restored["id"]]["undoneBy"] == redone.json()["id"]


def test_a_deleted_series_comes_back_whole_with_its_ids_and_sync_sees_it(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    series = create_event(api, secret, **WEEKLY)
    window = {"timeMin": "2026-03-01", "timeMax": "2026-05-01"}
    occurrences = api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"]
    moved, cancelled = occurrences[1]["id"], occurrences[2]["id"]
    api.patch(
        f"{EVENTS}/{moved}",
        json={"startsAt": "2026-03-09T10:00:00Z", "endsAt": "2026-03-09T10:15:00Z"},
        headers=bearer(secret),
    )
    api.delete(f"{EVENTS}/{cancelled}", headers=bearer(secret))
    before = api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"]
    token = api.get(EVENTS, headers=bearer(secret)).json()["nextSyncToken"]
    gone = api.delete(f"{EVENTS}/{series['id']}", headers=bearer(secret))
    [change] = [c for c in changes(api, secret)["changes"] if c["id"] == gone.headers[
        "calendar-change-id"]]  # fmt: skip
    assert change["kind"] == "deleted" and change["occurrences"] == 6
    assert api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"] == []
    assert undo(api, secret, change["id"]).status_code == 200
    after = api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"]
    assert [e["id"] for e in after] == [e["id"] for e in before]
    strip = [{**e, "updatedAt": None} for e in after]
    assert strip == [{**e, "updatedAt": None} for e in before]
    assert after[1]["startsAt"] == "2026-03-09T10:00:00Z" and cancelled not in {
        e["id"] for e in after
    }
    synced = api.get(EVENTS, params={"syncToken": token}, headers=bearer(secret)).json()
    assert series["id"] in {e["id"] for e in synced["events"]}


def test_a_split_is_one_change_recording_both_halves_and_undone_as_one(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    series = create_event(api, secret, **WEEKLY)
    window = {"timeMin": "2026-03-01", "timeMax": "2026-05-01"}
    before = api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"]
    third = before[2]["id"]
    split = api.patch(
        f"{EVENTS}/{third}", params={"scope": "following"}, json={"title": "Later stand-up"},
        headers=bearer(secret),
    )  # fmt: skip
    assert split.status_code == 200
    [change] = changes(api, secret, eventId=split.json()["id"])["changes"]
    assert change["id"] == split.headers["calendar-change-id"]
    assert (change["kind"], change["eventId"]) == ("updated", series["id"])
    assert change["before"] == series
    assert change["after"]["recurrence"] != series["recurrence"]  # ends before the third
    assert change["newSeries"] == split.json()
    assert change["occurrences"] == 4  # the third and the three after it
    assert undo(api, secret, change["id"]).status_code == 200
    after = api.get(EVENTS, params=window, headers=bearer(secret)).json()["events"]
    assert [(e["id"], e["title"]) for e in after] == [(e["id"], e["title"]) for e in before]
    gone = api.get(f"{EVENTS}/{split.json()['id']}", headers=bearer(secret))
    assert gone.status_code == 404


# ---------------------------------------------------------------------------------------------
# Dry runs


def test_a_dry_run_checks_everything_and_writes_nothing(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    with_webhook(factory, owner)
    key_id, secret = factory.key(owner)
    event = create_event(api, secret)
    series = create_event(api, secret, **WEEKLY)
    url = f"{EVENTS}/{event['id']}"
    before = counts(factory, owner)
    dry = {"dryRun": "true"}
    made = api.post(
        EVENTS, params=dry, json=event_body(title="Maybe"),
        headers={**bearer(secret), "Idempotency-Key": "dry-1"},
    )  # fmt: skip
    assert made.status_code == 200, made.text
    answer = made.json()
    assert (answer["dryRun"], answer["kind"], answer["before"]) == (True, "created", None)
    assert answer["after"]["title"] == "Maybe" and "location" not in made.headers
    assert "calendar-change-id" not in made.headers
    changed = api.patch(url, params=dry, json={"title": "Later"}, headers=bearer(secret))
    assert changed.status_code == 200
    assert changed.json()["before"] == event and changed.json()["after"]["title"] == "Later"
    deleted = api.delete(url, params=dry, headers=bearer(secret))
    assert deleted.status_code == 200
    assert (deleted.json()["kind"], deleted.json()["after"]) == ("deleted", None)
    whole = api.patch(
        f"{EVENTS}/{series['id']}", params=dry, json={"title": "Renamed"}, headers=bearer(secret)
    )
    assert whole.json()["occurrences"] == 6
    busy = api.post(EVENTS, params=dry, json=event_body(ifFree=True), headers=bearer(secret))
    assert busy.status_code == 409 and busy.json()["code"] == "conflict"
    invalid = api.patch(url, params=dry, json={"title": ""}, headers=bearer(secret))
    assert invalid.status_code == 400
    last = changes(api, secret)["changes"][0]["id"]
    undo_dry = undo(api, secret, last, dryRun="true")
    assert undo_dry.status_code == 200 and undo_dry.json()["undoes"] == last
    assert counts(factory, owner) == before
    calls = factory.db.call(history.list_calls, key_id=key_id, limit=8)
    assert [(c["operation"], c["status"], c["dryRun"]) for c in calls] == [
        ("undoChange", 200, True),
        ("listChanges", 200, False),
        ("updateCalendarEvent", 400, True),
        ("createCalendarEvent", 409, True),
        ("updateCalendarEvent", 200, True),
        ("deleteCalendarEvent", 200, True),
        ("updateCalendarEvent", 200, True),
        ("createCalendarEvent", 200, True),
    ]
    assert api.get(url, headers=bearer(secret)).json() == event
    wrong = api.post(EVENTS, params={"dryRun": "yes"}, json=event_body(), headers=bearer(secret))
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["field"] == "dryRun"
    refused = api.delete(url, params=dry, headers=bearer(factory.key(owner, permission="read")[1]))
    assert refused.status_code == 401 and refused.json()["code"] == "insufficient_scope"


def test_an_imports_dry_run_lists_the_changes_it_would_make_and_keeps_none(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    ics = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//EN\r\nBEGIN:VEVENT\r\n"
        "UID:dry@example.com\r\nDTSTAMP:20260301T120000Z\r\nDTSTART:20260305T090000Z\r\n"
        "DTEND:20260305T100000Z\r\nSUMMARY:Maybe\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    headers = {**bearer(secret), "Content-Type": "text/calendar"}
    before = counts(factory, owner)
    dry = api.post(f"{EVENTS}/import", params={"dryRun": "true"}, content=ics, headers=headers)
    assert dry.status_code == 200, dry.text
    answer = dry.json()
    assert (answer["dryRun"], answer["created"]) == (True, 1)
    [change] = answer["changes"]
    assert (change["kind"], change["after"]["title"]) == ("created", "Maybe")
    assert counts(factory, owner) == before
    real = api.post(f"{EVENTS}/import", content=ics, headers=headers)
    assert real.json()["created"] == 1 and "calendar-change-id" not in real.headers
    [listed] = changes(api, secret)["changes"]
    assert (listed["transport"], listed["requestId"]) == ("import", real.headers["request-id"])


def test_force_and_dry_run_are_true_or_false(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    made = api.post(EVENTS, json=event_body(), headers=bearer(secret))
    change_id = made.headers["calendar-change-id"]
    for params in ({"force": "1"}, {"dryRun": "maybe"}):
        refused = undo(api, secret, change_id, **params)
        assert refused.status_code == 400, refused.text
        assert refused.json()["errors"][0]["field"] == next(iter(params))
    assert api.get(f"{EVENTS}/{made.json()['id']}", headers=bearer(secret)).status_code == 200
