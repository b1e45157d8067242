"""Firing the time triggers that fell due: each claimed once across every process and host,
and fanned out, in the same transaction, into one delivery for each endpoint that asked for
it (the outbox, ``webhook_deliveries``): the dispatcher sends them as it sends a change's.

``fire_due`` claims the plan's rows due by ``now`` (oldest first, at most ``limit``): one
``UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING`` moves each from
``planned`` to ``fired``, or to ``skipped`` when it is due more than the grace ago
(``CALENDAR_TRIGGER_GRACE``: an outage). On PostgreSQL concurrent claims never pick the same
row; on SQLite the one writer does the same. Claim and deliveries commit together or not at
all: a (endpoint, occurrence, offset) is queued once, whichever process fires it.

Who gets a row: the endpoints of its owner (the owner's own, their keys' subscriptions) that
take its type (``starting`` at that offset, or ``ended``), whose key is in force at the moment
it fires and reaches the event's calendar (and the subscription's ``calendarIds``). A disabled
endpoint's delivery is recorded failed (it can be re-sent once enabled, as a change's); a
skipped row's deliveries are recorded ``skipped``, never sent: the owner sees them counted in
the deliveries. ``data``: ``{event, minutesBefore, scheduledFor, late}`` (``late``: whole
seconds from ``scheduledFor`` to the first attempt's send, 0 when on time: written here for the
firing's instant, and set again by the dispatcher when it sends the first attempt,
``stamp_late``). A row's body is encoded once for all its
endpoints, each delivery's id (and the body's ``id``) made as a change's are
(``outbox.record_change``: the owner's the message id, a subscription's that, a dot and 13
characters of its own id), and the rows are inserted in batches of ``BATCH``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, case, delete, func, select, update

from calendar_service.access import keys
from calendar_service.delivery.triggers.kinds import ENDED, STARTING, loaded, wanted_triggers
from calendar_service.delivery.triggers.tables import FIRED, PLANNED, SKIPPED, plan_t
from calendar_service.journal.webhook_outbox import DISABLED_ERROR, build_payload, notify_committed
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import calendars_t, deliveries_t, endpoints_t, keys_t
from calendar_service.platform.models.webhooks import ENDPOINT_DELETED as DELETED
from calendar_service.platform.timeutil import format_utc

KEPT = timedelta(days=2)
"""How long fired and skipped rows are kept after they fell due (a re-plan within it keeps
them fired; none plans that far back)."""
DEFAULT_GRACE = timedelta(hours=1)
BATCH = 500
TYPES = {"starting": STARTING, "ended": ENDED}
ENDED_KIND = "ended"
_ID_AT = len('{"id":"')  # where a payload's message id starts (``outbox.build_payload``)
_PAYLOAD_START = '{"id":"'


_LATE_AT_END = re.compile(r'"scheduledFor":"([^"]+)","late":(\d+)\}\}\Z')
"""How a trigger's body ends (``data``'s last two fields, then the body's end): its due instant
and ``late``. Nothing else in a body can read so: a quote inside a JSON string is escaped."""


def stamp_late(payload: str, sent: datetime) -> str | None:
    """A time trigger's body with ``late`` set for a first attempt sent at ``sent``: the whole
    seconds from ``scheduledFor`` to ``sent`` (0 when on time). None when ``payload`` is not a
    time trigger's, or already says so."""
    found = _LATE_AT_END.search(payload, max(0, len(payload) - 96))
    if found is None:
        return None
    due = datetime.fromisoformat(found[1].replace("Z", "+00:00"))
    late = str(max(0, int((sent - due).total_seconds())))
    if late == found[2]:
        return None
    return f"{payload[: found.start(2)]}{late}}}}}"


@dataclass(frozen=True, slots=True)
class Fired:
    """What one claim did: rows fired and skipped, deliveries queued, and whether it took as
    many as it could (more may be due)."""

    fired: int
    skipped: int
    deliveries: int
    full: bool


def fire_due(
    conn: Connection, *, now: datetime, grace: timedelta = DEFAULT_GRACE, limit: int = BATCH
) -> Fired:
    """Claim the rows due by ``now`` and queue their deliveries (see the module's docstring),
    in the caller's transaction."""
    rows = _claimed(conn, now=now, cutoff=now - grace, limit=limit)
    if not rows:
        return Fired(0, 0, 0, False)
    endpoints = _endpoints(conn, {r.user_id for r in rows}, now)
    names = dict(
        conn.execute(
            select(calendars_t.c.id, calendars_t.c.name).where(
                calendars_t.c.id.in_({r.calendar_id for r in rows})
            )
        ).all()
    )
    deliveries = []
    for row in rows:
        takers = [e for e in endpoints.get(row.user_id, ()) if e.takes(row)]
        if takers:
            deliveries.extend(_deliveries(row, takers, names, now))
    for at in range(0, len(deliveries), BATCH):
        conn.execute(deliveries_t.insert(), deliveries[at : at + BATCH])
    if any(d["status"] == "pending" for d in deliveries):
        notify_committed(conn)
    skipped = sum(1 for r in rows if r.status == SKIPPED)
    return Fired(len(rows) - skipped, skipped, len(deliveries), len(rows) >= limit)


def _claimed(conn: Connection, *, now: datetime, cutoff: datetime, limit: int) -> list[Any]:
    """The rows due by ``now`` (at most ``limit``, the earliest first, none another worker
    holds), marked fired, or skipped when due before ``cutoff``."""
    due = (
        select(plan_t.c.id)
        .where(plan_t.c.status == PLANNED, plan_t.c.due_at <= now)
        .order_by(plan_t.c.due_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list(
        conn.execute(
            update(plan_t)
            .where(plan_t.c.id.in_(due))
            .values(
                status=case((plan_t.c.due_at < cutoff, SKIPPED), else_=FIRED),
                fired_at=now,
            )
            .returning(
                plan_t.c.user_id,
                plan_t.c.calendar_id,
                plan_t.c.kind,
                plan_t.c.minutes_before,
                plan_t.c.due_at,
                plan_t.c.status,
                plan_t.c.event,
            )
        ).all()
    )


def _deliveries(
    row: Any, takers: list[_Endpoint], names: dict[str, str], now: datetime
) -> list[dict[str, Any]]:
    """The delivery rows of one fired (or skipped) plan row, one per endpoint that takes it."""
    event = orjson.loads(row.event)
    if row.calendar_id in names:  # renamed since it was planned
        event["calendar"] = names[row.calendar_id]
    event_type = TYPES[row.kind]
    late = max(0, int((now - row.due_at).total_seconds()))
    data = {
        "event": event,
        "minutesBefore": row.minutes_before,
        "scheduledFor": format_utc(row.due_at),
        "late": late,
    }
    # One body a row, each endpoint's with its own message id (as a change's: the
    # owner's the message id, a subscription's that and 13 characters of its own id).
    message_id = new_id("evt")
    rest = build_payload(message_id=message_id, event_type=event_type, now=now, data=data)[
        _ID_AT + len(message_id) :
    ]
    status, error = "pending", None
    if row.status == SKIPPED:
        status = SKIPPED
        error = f"missed by {late} s, more than CALENDAR_TRIGGER_GRACE: not sent"
    deliveries = []
    for endpoint in takers:
        delivery_id = message_id + endpoint.suffix
        state, why = status, error
        if status == "pending" and not endpoint.active:
            state, why = "failed", DISABLED_ERROR
        deliveries.append(
            {
                "id": delivery_id,
                "user_id": row.user_id,
                "endpoint_id": endpoint.id,
                "event_type": event_type,
                "payload": _PAYLOAD_START + delivery_id + rest,
                "status": state,
                "attempts": 0,
                "next_attempt_at": now,
                "lease_until": None,
                "last_status_code": None,
                "last_error": why,
                "created_at": now,
                "completed_at": None if state == "pending" else now,
            }
        )
    return deliveries


@dataclass(frozen=True, slots=True)
class _Endpoint:
    """An endpoint that may take time triggers, as the firing matches rows against it."""

    id: str
    active: bool
    suffix: str  # what its deliveries' ids add to the message id ("" for the owner's own)
    offsets: frozenset[int]  # ``starting``'s (empty: it does not take ``starting``)
    ended: bool
    key_calendar_id: str | None  # a subscription's key's one calendar
    calendar_ids: frozenset[str] | None  # a subscription's ``calendarIds``
    subscription: bool

    def takes(self, row: Any) -> bool:
        """Whether it asked for the plan's ``row`` and reaches its calendar."""
        if row.kind == ENDED_KIND:
            if not self.ended:
                return False
        elif row.minutes_before not in self.offsets:
            return False
        if not self.subscription:
            return True
        if self.key_calendar_id is not None and self.key_calendar_id != row.calendar_id:
            return False
        return self.calendar_ids is None or row.calendar_id in self.calendar_ids


def _endpoints(conn: Connection, users: set[str], now: datetime) -> dict[str, list[_Endpoint]]:
    """The owners' endpoints that may take time triggers: their own, and their keys'
    subscriptions whose key is in force now (with the key's calendar)."""
    found: dict[str, list[_Endpoint]] = defaultdict(list)
    query = (
        select(
            endpoints_t.c.id,
            endpoints_t.c.user_id,
            endpoints_t.c.key_id,
            endpoints_t.c.status,
            endpoints_t.c.events,
            endpoints_t.c.calendar_ids,
            endpoints_t.c.minutes_before,
            keys_t.c.calendar_id.label("key_calendar_id"),
            keys_t.c.revoked_at,
            keys_t.c.expires_at,
        )
        .select_from(endpoints_t.outerjoin(keys_t, keys_t.c.id == endpoints_t.c.key_id))
        .where(
            endpoints_t.c.user_id.in_(users),
            endpoints_t.c.status != DELETED,
            endpoints_t.c.events.is_not(None),
        )
        .order_by(endpoints_t.c.created_at, endpoints_t.c.id)
    )
    for row in conn.execute(query):
        if row.key_id is not None and (
            keys.state_of(revoked_at=row.revoked_at, expires_at=row.expires_at, now=now)
            != keys.ACTIVE
        ):
            continue
        offsets, ended = wanted_triggers(row)
        chosen = loaded(row.calendar_ids)
        subscription = row.key_id is not None
        found[row.user_id].append(
            _Endpoint(
                id=row.id,
                active=row.status == "active",
                suffix="." + row.id[4:17] if subscription else "",
                offsets=frozenset(offsets),
                ended=ended,
                key_calendar_id=row.key_calendar_id,
                calendar_ids=None if chosen is None else frozenset(chosen),
                subscription=subscription,
            )
        )
    return found


def next_due(conn: Connection) -> datetime | None:
    """When the earliest planned row falls due (None: nothing planned)."""
    found: datetime | None = conn.execute(
        select(func.min(plan_t.c.due_at)).where(plan_t.c.status == PLANNED)
    ).scalar()
    return found


def skipped_count(conn: Connection, *, user_id: str, endpoint_ids: Sequence[str] = ()) -> int:
    """How many time-trigger deliveries of the owner were skipped (missed by more than the
    grace), kept as the deliveries are (of ``endpoint_ids`` only, when given)."""
    query = select(func.count()).where(
        deliveries_t.c.user_id == user_id, deliveries_t.c.status == SKIPPED
    )
    if endpoint_ids:
        query = query.where(deliveries_t.c.endpoint_id.in_(endpoint_ids))
    return int(conn.execute(query).scalar_one())


def purge_fired(conn: Connection, *, now: datetime) -> int:
    """Forget the plan's rows fired or skipped more than ``KEPT`` ago."""
    done = conn.execute(
        delete(plan_t).where(plan_t.c.status.in_((FIRED, SKIPPED)), plan_t.c.due_at < now - KEPT)
    )
    return int(done.rowcount or 0)
