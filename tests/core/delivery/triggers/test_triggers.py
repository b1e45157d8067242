"""Time triggers, planned and fired by the core with an injected clock on a database of their
own: each (endpoint, occurrence, offset) once, at its time; series with their changed and
cancelled occurrences and across DST; re-planned from the change feed when an event moves,
is deleted or its rule changes; after an outage, skipped and counted beyond the grace, sent
late within it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import select

from calendar_service.access import keys
from calendar_service.calendar import events
from calendar_service.delivery import subscriptions, webhook_targets
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.delivery.triggers import firing, planner
from calendar_service.delivery.triggers.tables import plan_t
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate, EventUpdate, deliveries_t
from tests.support import Factory, Owner
from tests.webhooks.support import make_owner

T0 = datetime(2027, 3, 20, 8, 0, tzinfo=UTC)  # a Saturday; Berlin moves its clocks on the 28th
GRACE = timedelta(hours=1)
URL = "http://127.0.0.1:9/hook"


def principal_of(db: Database, owner: Owner, **options: Any) -> keys.Principal:
    """A key of ``owner`` valid around ``T0`` (``options``: permission, calendar_id)."""
    record, _ = Factory(db).key_record(
        owner, now=T0 - timedelta(days=1), expires_at=T0 + timedelta(days=60), **options
    )
    return keys.Principal(
        key_id=record["id"],
        user_id=owner.id,
        permission=record["permission"],
        calendar_id=record["calendarId"],
        expires_at=T0 + timedelta(days=60),
    )


def subscribe(db: Database, principal: keys.Principal, **fields: Any) -> dict[str, Any]:
    target = webhook_targets.check_endpoint_url(
        URL, allow_local=True, resolve=webhook_targets.system_resolve
    )
    return db.call(
        subscriptions.create_subscription,
        principal=principal,
        body={"url": URL, **fields},
        target=target,
        now=T0 - timedelta(hours=1),
    )


def create(db: Database, owner: Owner, **fields: Any) -> dict[str, Any]:
    return db.call(
        events.create_event,
        principal=events.owner_principal(owner.id),
        data=EventCreate(**fields),
        now=T0 - timedelta(hours=1),
    )


def update(db: Database, owner: Owner, event_id: str, **fields: Any) -> dict[str, Any]:
    return db.call(
        events.update_event,
        principal=events.owner_principal(owner.id),
        event_id=event_id,
        body=EventUpdate(**fields).model_dump(by_alias=True, exclude_unset=True, mode="json"),
        now=T0,
    )


def tick(db: Database, at: datetime, *, grace: timedelta = GRACE) -> firing.Fired:
    """The job's tick at ``at``: plan, then fire what is due."""
    db.call(planner.plan, now=at, grace=grace)
    total = firing.Fired(0, 0, 0, True)
    while total.full:
        claim = db.call(firing.fire_due, now=at, grace=grace)
        total = firing.Fired(
            total.fired + claim.fired,
            total.skipped + claim.skipped,
            total.deliveries + claim.deliveries,
            claim.full,
        )
    return total


def sent(db: Database, endpoint_id: str) -> list[dict[str, Any]]:
    """The deliveries queued for an endpoint, oldest first, with their payloads."""
    rows = db.call(
        lambda conn: conn.execute(
            select(deliveries_t)
            .where(deliveries_t.c.endpoint_id == endpoint_id)
            .order_by(deliveries_t.c.created_at, deliveries_t.c.id)
        ).all()
    )
    return [
        {**orjson.loads(r.payload), "status": r.status, "lastError": r.last_error} for r in rows
    ]


def planned(db: Database, owner: Owner) -> list[tuple[str, str, int, datetime, str]]:
    rows = db.call(
        lambda conn: conn.execute(
            select(plan_t).where(plan_t.c.user_id == owner.id).order_by(plan_t.c.due_at)
        ).all()
    )
    return [(r.event_id, r.kind, r.minutes_before, r.due_at, r.status) for r in rows]


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_an_event_fires_starting_at_each_offset_and_ended_once_each(quiet_db: Database) -> None:
    owner = make_owner(quiet_db)
    sub = subscribe(
        quiet_db,
        principal_of(quiet_db, owner),
        events=["calendar.event.starting", "calendar.event.ended"],
        minutesBefore=[0, 15],
    )
    event = create(
        quiet_db, owner, title="Review", starts_at="2027-03-20T10:00:00Z",
        ends_at="2027-03-20T10:30:00Z",
    )  # fmt: skip
    assert tick(quiet_db, T0).deliveries == 0
    assert [(k, m, d) for _, k, m, d, _ in planned(quiet_db, owner)] == [
        ("starting", 15, at("2027-03-20T09:45:00Z")),
        ("starting", 0, at("2027-03-20T10:00:00Z")),
        ("ended", 0, at("2027-03-20T10:30:00Z")),
    ]
    assert tick(quiet_db, at("2027-03-20T09:44:59Z")).deliveries == 0
    assert tick(quiet_db, at("2027-03-20T09:45:00Z")).deliveries == 1
    assert tick(quiet_db, at("2027-03-20T09:45:00Z")).deliveries == 0  # once
    assert tick(quiet_db, at("2027-03-20T10:00:00.2Z")).deliveries == 1
    assert tick(quiet_db, at("2027-03-20T10:31:00Z")).deliveries == 1
    assert tick(quiet_db, at("2027-03-20T12:00:00Z")).deliveries == 0
    starting, now, ended = sent(quiet_db, sub["id"])
    assert starting["type"] == "calendar.event.starting" and starting["status"] == "pending"
    assert starting["data"] == {
        "event": event,
        "minutesBefore": 15,
        "scheduledFor": "2027-03-20T09:45:00Z",
        "late": 0,
    }
    assert now["data"]["minutesBefore"] == 0 and now["data"]["late"] == 0
    assert ended["type"] == "calendar.event.ended"
    assert ended["data"]["scheduledFor"] == "2027-03-20T10:30:00Z"
    assert ended["data"]["late"] == 60 and ended["data"]["minutesBefore"] == 0


def test_a_series_fires_for_each_occurrence_with_its_changes_and_cancellations_across_dst(
    quiet_db: Database,
) -> None:
    owner = make_owner(quiet_db)
    factory = Factory(quiet_db)
    berlin = factory.calendar(owner, name="Berlin", time_zone="Europe/Berlin")
    sub = subscribe(quiet_db, principal_of(quiet_db, owner), events=["calendar.event.starting"])
    series = create(
        quiet_db, owner, title="Stand-up", calendar_id=berlin,
        starts_at="2027-03-24T09:30:00", ends_at="2027-03-24T09:45:00",
        recurrence=["RRULE:FREQ=DAILY;COUNT=6"],
    )  # fmt: skip
    moved = f"{series['id']}_20270326T083000Z"
    update(quiet_db, owner, moved, starts_at="2027-03-26T11:00:00", ends_at="2027-03-26T11:15:00")
    cancelled = f"{series['id']}_20270327T083000Z"
    quiet_db.call(
        events.delete_event,
        principal=events.owner_principal(owner.id),
        event_id=cancelled,
        now=T0,
    )
    start = at("2027-03-24T00:00:00Z")
    for hour in range(24 * 7):
        tick(quiet_db, start + timedelta(hours=hour))
    deliveries = sent(quiet_db, sub["id"])
    assert {d["status"] for d in deliveries} == {"pending"}  # hourly ticks: within the grace
    fired = [d["data"] for d in deliveries]
    assert [(d["event"]["id"], d["scheduledFor"]) for d in fired] == [
        (f"{series['id']}_20270324T083000Z", "2027-03-24T08:30:00Z"),
        (f"{series['id']}_20270325T083000Z", "2027-03-25T08:30:00Z"),
        (moved, "2027-03-26T10:00:00Z"),  # moved to 11:00 Berlin time
        (f"{series['id']}_20270328T073000Z", "2027-03-28T07:30:00Z"),  # summer time: 09:30
        (f"{series['id']}_20270329T073000Z", "2027-03-29T07:30:00Z"),
    ]
    assert fired[2]["event"]["startsAt"] == "2027-03-26T11:00:00+01:00"
    assert fired[3]["event"]["startsAt"] == "2027-03-28T09:30:00+02:00"
    assert [d["late"] for d in fired] == [1800, 1800, 0, 1800, 1800]


def test_moving_an_event_plans_it_again_and_deleting_it_means_never(quiet_db: Database) -> None:
    owner = make_owner(quiet_db)
    sub = subscribe(quiet_db, principal_of(quiet_db, owner), events=["calendar.event.starting"])
    moving = create(
        quiet_db, owner, title="Moving", starts_at="2027-03-20T10:00:00Z",
        ends_at="2027-03-20T10:30:00Z",
    )  # fmt: skip
    going = create(
        quiet_db, owner, title="Going", starts_at="2027-03-20T10:00:00Z",
        ends_at="2027-03-20T10:30:00Z",
    )  # fmt: skip
    tick(quiet_db, T0)
    update(quiet_db, owner, moving["id"], starts_at="2027-03-20T11:00:00Z",
           ends_at="2027-03-20T11:30:00Z")  # fmt: skip
    quiet_db.call(
        events.delete_event,
        principal=events.owner_principal(owner.id),
        event_id=going["id"],
        now=T0,
    )
    tick(quiet_db, T0 + timedelta(minutes=1))
    assert [(e, d) for e, _, _, d, _ in planned(quiet_db, owner)] == [
        (moving["id"], at("2027-03-20T11:00:00Z"))
    ]
    for minute in range(0, 240, 5):
        tick(quiet_db, T0 + timedelta(minutes=minute))
    [only] = sent(quiet_db, sub["id"])
    assert only["data"]["event"]["id"] == moving["id"]
    assert only["data"]["scheduledFor"] == "2027-03-20T11:00:00Z"


def test_a_change_of_a_series_rule_plans_its_occurrences_again(quiet_db: Database) -> None:
    owner = make_owner(quiet_db)
    sub = subscribe(quiet_db, principal_of(quiet_db, owner), events=["calendar.event.starting"])
    series = create(
        quiet_db, owner, title="Daily", starts_at="2027-03-20T09:00:00Z",
        ends_at="2027-03-20T09:15:00Z", recurrence=["RRULE:FREQ=DAILY"],
    )  # fmt: skip
    tick(quiet_db, T0)
    assert [d for _, _, _, d, _ in planned(quiet_db, owner)] == [at("2027-03-20T09:00:00Z")]
    update(quiet_db, owner, series["id"], recurrence=["RRULE:FREQ=DAILY;INTERVAL=2"],
           starts_at="2027-03-20T09:30:00Z", ends_at="2027-03-20T09:45:00Z")  # fmt: skip
    tick(quiet_db, T0 + timedelta(seconds=1))
    assert [d for _, _, _, d, _ in planned(quiet_db, owner)] == [at("2027-03-20T09:30:00Z")]
    for hour in range(1, 24 * 4):
        tick(quiet_db, T0 + timedelta(hours=hour))
    assert [d["data"]["scheduledFor"] for d in sent(quiet_db, sub["id"])] == [
        "2027-03-20T09:30:00Z",
        "2027-03-22T09:30:00Z",
    ]


def test_after_an_outage_triggers_beyond_the_grace_are_skipped_and_counted_and_the_rest_late(
    quiet_db: Database,
) -> None:
    owner = make_owner(quiet_db)
    sub = subscribe(quiet_db, principal_of(quiet_db, owner), events=["calendar.event.starting"])
    for hour in (9, 11):
        create(
            quiet_db, owner, title=f"At {hour}", starts_at=f"2027-03-20T{hour:02d}:00:00Z",
            ends_at=f"2027-03-20T{hour:02d}:30:00Z",
        )  # fmt: skip
    tick(quiet_db, T0)
    done = tick(quiet_db, at("2027-03-20T11:10:00Z"))  # down from 08:00 to 11:10
    assert (done.fired, done.skipped) == (1, 1)
    skipped, late = sorted(sent(quiet_db, sub["id"]), key=lambda d: d["data"]["scheduledFor"])
    assert skipped["status"] == "skipped" and "more than CALENDAR_TRIGGER_GRACE" in str(
        skipped["lastError"]
    )
    assert late["status"] == "pending" and late["data"]["late"] == 600
    assert quiet_db.call(firing.skipped_count, user_id=owner.id) == 1
    listed = quiet_db.call(
        webhook_config.list_deliveries, user_id=owner.id, endpoint_id=sub["id"], status="skipped"
    )
    assert len(listed) == 1


def test_a_new_subscription_fires_nothing_for_the_past_and_reach_is_checked_when_firing(
    quiet_db: Database,
) -> None:
    owner = make_owner(quiet_db)
    factory = Factory(quiet_db)
    work = factory.calendar(owner, name="Work")
    everything = principal_of(quiet_db, owner)
    only_work = principal_of(quiet_db, owner, calendar_id=work)
    create(quiet_db, owner, title="Early", starts_at="2027-03-20T07:59:00Z",
           ends_at="2027-03-20T08:30:00Z")  # fmt: skip
    create(quiet_db, owner, title="Home", starts_at="2027-03-20T09:00:00Z",
           ends_at="2027-03-20T09:30:00Z")  # fmt: skip
    create(quiet_db, owner, title="Office", starts_at="2027-03-20T09:00:00Z",
           ends_at="2027-03-20T09:30:00Z", calendar_id=work)  # fmt: skip
    all_sub = subscribe(quiet_db, everything, events=["calendar.event.starting"])
    work_sub = subscribe(quiet_db, only_work, events=["calendar.event.starting"])
    tick(quiet_db, T0)
    quiet_db.call(keys.revoke_key, user_id=owner.id, key_id=everything.key_id, now=T0)
    tick(quiet_db, at("2027-03-20T09:00:00Z"))
    assert sent(quiet_db, all_sub["id"]) == []  # revoked before it fired
    [office] = sent(quiet_db, work_sub["id"])
    assert office["data"]["event"]["title"] == "Office"


def test_the_owners_own_webhook_takes_time_triggers_at_its_minutes_before(
    quiet_db: Database,
) -> None:
    owner = make_owner(quiet_db)
    target = webhook_targets.check_endpoint_url(
        URL, allow_local=True, resolve=webhook_targets.system_resolve
    )
    endpoint, _ = quiet_db.call(
        webhook_config.set_endpoint, user_id=owner.id, target=target, now=T0
    )
    quiet_db.call(
        webhook_config.set_time_triggers,
        user_id=owner.id,
        minutes_before=[15, 60],
        ended=False,
        now=T0,
    )
    create(quiet_db, owner, title="Call", starts_at="2027-03-20T10:00:00Z",
           ends_at="2027-03-20T10:30:00Z")  # fmt: skip
    for minute in range(0, 180, 15):
        tick(quiet_db, T0 + timedelta(minutes=minute))
    timed = [d for d in sent(quiet_db, endpoint["id"]) if d["type"] == "calendar.event.starting"]
    assert [d["data"]["minutesBefore"] for d in timed] == [60, 15]
    changes = [d["type"] for d in sent(quiet_db, endpoint["id"]) if d not in timed]
    assert changes == ["calendar.event.created"]
