"""Proposals: a key's (or connected app's) write that waits for the owner's approval.

A key is made with ``approval`` (``keys.APPROVALS``): ``none``, ``destructive`` (its updates
and deletes wait; its creates go through) or ``all`` (every write waits). Whether a write
waits is decided by the change it would make (``waits``), so an undo or an import waits as
what it does: the gateway (``gateway.perform``) makes the write in a savepoint
(``db.tentative``), and when its change waits it reads what applying it later needs
(``items_of``), undoes the write and keeps a proposal instead (``propose``): the caller gets
202 and the proposal, the owner's webhook ``calendar.proposal.created``.

A proposal is pending until the owner approves it (``governance.approving.approve``: the change
is made then, only if the event is still as it was), rejects it (``reject``), or it expires
(``expires_at``, ``CALENDAR_PROPOSAL_TTL`` after it was made: read as expired at once, written
so by the housekeeping job, ``expire``). Decided proposals are kept as long as the call
history (``purge``).

Who reaches one: the key that made it (``GET /api/v1/calendar/proposals/{id}``) and its owner
(the *Pending* page, ``proposals list``); any other id is a 404, as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import (
    Column,
    Connection,
    Index,
    String,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlmodel import Field, SQLModel

from calendar_service.access.keys import APPROVAL_ALL, APPROVAL_DESTRUCTIVE, Principal
from calendar_service.calendar.events.changelog import read_rows
from calendar_service.journal.change_record import OWNER_KEY_ID, Unit, Via, instant_of
from calendar_service.journal.change_table import APP, DELETED, UPDATED, changes_t
from calendar_service.journal.webhook_outbox import record_notification
from calendar_service.platform.errors import NotFound, ProposalNotPending
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import UTCDateTime, ical_uids_t, keys_t
from calendar_service.platform.timeutil import format_utc

PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"
EXPIRED = "expired"
FAILED = "failed"  # approved, but the event had changed since: nothing was applied
STATUSES = (PENDING, APPROVED, REJECTED, EXPIRED, FAILED)

CREATED_HOOK = "calendar.proposal.created"  # the owner's webhook, when a write waits
LIST_LIMIT = 200


class Proposal(SQLModel, table=True):
    """One write that waits for the owner (migration 0016)."""

    __tablename__ = "proposals"
    __table_args__ = (
        Index("ix_proposals_user_created", "user_id", "created_at"),
        Index("ix_proposals_status_expires", "status", "expires_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(max_length=40)  # the owner
    key_id: str = Field(max_length=40)  # the key or connected app that asked
    status: str = Field(max_length=16)  # STATUSES
    operation: str = Field(max_length=40)  # as in the call history
    transport: str = Field(max_length=16)
    request_id: str | None = Field(default=None, max_length=64)
    kind: str = Field(max_length=16)  # the (first) change's
    event_id: str = Field(max_length=64)
    calendar_id: str = Field(max_length=40)
    before: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # JSON
    after: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # JSON
    # JSON: each change the write would make, as ``items_of`` keeps it (what approval applies).
    items: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    expires_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    decided_at: datetime | None = Field(
        default=None, sa_column=Column(UTCDateTime(), nullable=True)
    )
    decided_via: str | None = Field(default=None, sa_column=Column(String(16), nullable=True))
    # JSON: approved, the changes made ({changeIds}); failed, why ({code, reason}).
    outcome: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


def _table() -> Any:
    return Proposal.__table__  # type: ignore[attr-defined]


proposals_t = _table()


# ---------------------------------------------------------------------------------------------
# Whether a write waits


def may_wait(approval: str) -> bool:
    """Whether any write of a key with ``approval`` may wait (``none``: never)."""
    return approval in (APPROVAL_DESTRUCTIVE, APPROVAL_ALL)


def waits(approval: str, made: Sequence[dict[str, Any]]) -> bool:
    """Whether a write that made the changes ``made`` waits for the owner: with ``all``,
    whenever it changes anything; with ``destructive``, when it updates or deletes an event
    (a create goes through; an undo or an import waits as what it does)."""
    if approval == APPROVAL_ALL:
        return bool(made)
    if approval == APPROVAL_DESTRUCTIVE:
        return any(change["kind"] in (UPDATED, DELETED) for change in made)
    return False


_PUBLIC_PARTS = ("kind", "eventId", "recurringEventId", "calendarId", "before", "after")
_DETAIL_PARTS = ("occurrences", "newSeries", "undoes")


def items_of(
    conn: Connection, *, user_id: str, made: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """What applying the changes ``made`` needs, read before the write is undone: each as the
    API shows it, with the rows it touched before and after (``journal.change_record.Unit``), the
    series it started, if any, and the iCalendar UIDs an import recorded for its events
    (``uids``: importing the same file again then finds them)."""
    ids = [change["id"] for change in made]
    instants = [at for at in (instant_of(i) for i in ids) if at is not None]
    found = {
        row.id: row
        for row in conn.execute(
            select(changes_t.c.id, changes_t.c.rows, changes_t.c.new_series_id).where(
                changes_t.c.user_id == user_id,
                changes_t.c.at >= min(instants),
                changes_t.c.at <= max(instants),
                changes_t.c.id.in_(ids),
            )
        )
    }
    items = []
    for change in made:
        row = found[change["id"]]
        item = {name: change[name] for name in _PUBLIC_PARTS if name in change}
        item["detail"] = {name: change[name] for name in _DETAIL_PARTS if name in change}
        item["newSeriesId"] = row.new_series_id
        unit = Unit.decoded(row.rows)
        if unit.after is None:  # a create keeps no rows (``record.CREATED_UNIT``): read them
            unit.after = read_rows(conn, unit.ids, unit.series)
        item["rows"] = unit.encoded()
        item["uids"] = [
            dict(r._mapping)
            for r in conn.execute(
                select(
                    ical_uids_t.c.calendar_id,
                    ical_uids_t.c.uid_hash,
                    ical_uids_t.c.uid,
                    ical_uids_t.c.event_id,
                    ical_uids_t.c.object_name,
                ).where(ical_uids_t.c.event_id.in_(unit.ids))
            )
        ]
        items.append(item)
    return items


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def propose(
    conn: Connection,
    *,
    principal: Principal,
    via: Via,
    operation: str,
    items: Sequence[dict[str, Any]],
    now: datetime,
    ttl: timedelta,
    if_free: bool = False,
    rule_violations: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """Keep the write that waits (``items``: ``items_of`` the changes it would have made) as a
    pending proposal of the key ``principal``, expiring ``ttl`` from ``now``; queue
    ``calendar.proposal.created`` for the owner's webhook. Returns the proposal.

    ``if_free``: the write (a create) asked for its time to be free (``ifFree``); the approval
    checks that again (``governance.approving``). ``rule_violations``: the owner's rules for
    agents it breaks (``calendar.rule_check``; ``onViolation: ask``), shown with it: approving
    it is the owner's yes to them."""
    if if_free:
        items = [{**items[0], "ifFree": True}, *items[1:]]
    if rule_violations:
        items = [{**items[0], "ruleViolations": list(rule_violations)}, *items[1:]]
    first = items[0]
    proposal_id = new_id("prop")
    conn.execute(
        insert(proposals_t).values(
            id=proposal_id,
            user_id=principal.user_id,
            key_id=principal.key_id,
            status=PENDING,
            operation=operation,
            transport=via.transport,
            request_id=via.request_id,
            kind=first["kind"],
            event_id=first["eventId"],
            calendar_id=first["calendarId"],
            before=_json(first["before"]),
            after=_json(first["after"]),
            items=orjson.dumps(list(items)).decode(),
            created_at=now,
            expires_at=now + ttl,
        )
    )
    proposal = get_proposal(conn, principal=principal, proposal_id=proposal_id, now=now)
    record_notification(
        conn,
        user_id=principal.user_id,
        event_type=CREATED_HOOK,
        data={"proposal": proposal},
        now=now,
    )
    return proposal


# ---------------------------------------------------------------------------------------------
# Reading


def _with_key() -> Any:
    return select(
        proposals_t, keys_t.c.name.label("key_name"), keys_t.c.kind.label("key_kind")
    ).select_from(proposals_t.outerjoin(keys_t, keys_t.c.id == proposals_t.c.key_id))


def status_of(row: Any, now: datetime) -> str:
    """The proposal's status now: a pending one past its expiry is expired, whether or not
    the housekeeping job has written it so yet."""
    if row.status == PENDING and row.expires_at <= now:
        return EXPIRED
    return str(row.status)


def proposal_public(row: Any, *, now: datetime) -> dict[str, Any]:
    """A proposal as the API shows it, from a row of ``_with_key``."""
    status = status_of(row, now)
    proposal: dict[str, Any] = {
        "id": row.id,
        "status": status,
        "kind": row.kind,
        "eventId": row.event_id,
        "calendarId": row.calendar_id,
        "before": None if row.before is None else orjson.loads(row.before),
        "after": None if row.after is None else orjson.loads(row.after),
        "createdAt": format_utc(row.created_at),
        "expiresAt": format_utc(row.expires_at),
        "operation": row.operation,
        "actor": {
            "type": APP if row.key_kind == APP else "key",
            "id": row.key_id,
            "name": row.key_name or row.key_id,
        },
        "transport": row.transport,
    }
    if row.request_id is not None:
        proposal["requestId"] = row.request_id
    items = orjson.loads(row.items)
    if len(items) > 1:  # an import: every change it would make
        proposal["changes"] = [_item_public(item) for item in items]
    else:
        proposal.update(items[0]["detail"])
    if items[0].get("ruleViolations"):  # the owner's rules it breaks: the owner decides
        proposal["ruleViolations"] = items[0]["ruleViolations"]
    if status == EXPIRED:
        proposal["decidedAt"] = format_utc(row.decided_at or row.expires_at)
    elif row.decided_at is not None:
        proposal["decidedAt"] = format_utc(row.decided_at)
    if row.outcome is not None:
        proposal.update(orjson.loads(row.outcome))
    return proposal


def _item_public(item: dict[str, Any]) -> dict[str, Any]:
    shown = {name: item[name] for name in _PUBLIC_PARTS if name in item}
    shown.update(item["detail"])
    return shown


def _in_reach(principal: Principal) -> Any:
    mine = proposals_t.c.user_id == principal.user_id
    if principal.key_id == OWNER_KEY_ID:
        return mine
    return mine & (proposals_t.c.key_id == principal.key_id)


def _not_found(proposal_id: str) -> NotFound:
    return NotFound(f"No proposal {proposal_id!r} among those this key can reach.")


def get_proposal(
    conn: Connection, *, principal: Principal, proposal_id: str, now: datetime
) -> dict[str, Any]:
    """One proposal: the key's own (a key polls what it proposed), or any of the owner's for
    the owner in person (``keys.owner_principal``); 404 otherwise."""
    row = conn.execute(
        _with_key().where(_in_reach(principal), proposals_t.c.id == proposal_id)
    ).first()
    if row is None:
        raise _not_found(proposal_id)
    return proposal_public(row, now=now)


def list_proposals(
    conn: Connection,
    *,
    user_id: str,
    now: datetime,
    status: str | None = None,
    key_id: str | None = None,
    limit: int = LIST_LIMIT,
) -> dict[str, Any]:
    """``{proposals: [...]}``: the owner's proposals, newest first (at most ``limit``), those
    of one ``status`` (as ``status_of`` reads it) or one key."""
    query = _with_key().where(proposals_t.c.user_id == user_id)
    if status == PENDING:
        query = query.where(proposals_t.c.status == PENDING, proposals_t.c.expires_at > now)
    elif status == EXPIRED:
        query = query.where(
            (proposals_t.c.status == EXPIRED)
            | ((proposals_t.c.status == PENDING) & (proposals_t.c.expires_at <= now))
        )
    elif status is not None:
        query = query.where(proposals_t.c.status == status)
    if key_id is not None:
        query = query.where(proposals_t.c.key_id == key_id)
    query = query.order_by(proposals_t.c.created_at.desc(), proposals_t.c.id).limit(limit)
    return {"proposals": [proposal_public(row, now=now) for row in conn.execute(query)]}


def count_pending(conn: Connection, *, user_id: str, now: datetime) -> int:
    """How many of the owner's proposals wait (the settings pages' *Pending* count)."""
    found = conn.execute(
        select(func.count()).where(
            proposals_t.c.user_id == user_id,
            proposals_t.c.status == PENDING,
            proposals_t.c.expires_at > now,
        )
    ).scalar()
    return int(found or 0)


# ---------------------------------------------------------------------------------------------
# Deciding


def owner_of(conn: Connection, *, proposal_id: str) -> str:
    """The owner of the proposal ``proposal_id``, whoever it is (the operator's CLI: 404 if
    there is no such proposal)."""
    found = conn.execute(
        select(proposals_t.c.user_id).where(proposals_t.c.id == proposal_id)
    ).scalar()
    if found is None:
        raise NotFound(f"No proposal {proposal_id!r}.")
    return str(found)


# A decided proposal's status, as a refusal to decide it again says it.
_DECIDED = {
    APPROVED: "was already approved",
    REJECTED: "was already rejected",
    FAILED: "has already failed (the event had changed when it was approved)",
}


def pending_row(conn: Connection, *, user_id: str, proposal_id: str, now: datetime) -> Any:
    """The owner's proposal ``proposal_id``, locked until the transaction ends, if it is
    still pending: 404 if it is not theirs, 409 ``proposal_not_pending`` if it was decided or
    has expired."""
    query = _with_key().where(proposals_t.c.user_id == user_id, proposals_t.c.id == proposal_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(of=proposals_t)
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(f"No proposal {proposal_id!r}.")
    status = status_of(row, now)
    if status == EXPIRED:
        raise ProposalNotPending(
            f"Proposal {proposal_id} expired at {format_utc(row.expires_at)}: nothing was "
            "changed, and it can no longer be approved. The key may ask again.",
            EXPIRED,
        )
    if status != PENDING:
        when = f" at {format_utc(row.decided_at)}" if row.decided_at is not None else ""
        decided = _DECIDED.get(status, f"is {status}")
        raise ProposalNotPending(
            f"Proposal {proposal_id} {decided}{when}: it can be decided once.", status
        )
    return row


def decide(
    conn: Connection,
    *,
    row: Any,
    status: str,
    now: datetime,
    transport: str,
    outcome: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the owner's decision on the pending proposal ``row`` (``pending_row``); returns
    the proposal as it is now."""
    conn.execute(
        update(proposals_t)
        .where(proposals_t.c.id == row.id)
        .values(status=status, decided_at=now, decided_via=transport, outcome=_json(outcome))
    )
    found = conn.execute(_with_key().where(proposals_t.c.id == row.id)).one()
    return proposal_public(found, now=now)


def reject(
    conn: Connection, *, user_id: str, proposal_id: str, now: datetime, transport: str
) -> dict[str, Any]:
    """The owner rejects the pending proposal: nothing is changed."""
    row = pending_row(conn, user_id=user_id, proposal_id=proposal_id, now=now)
    return decide(conn, row=row, status=REJECTED, now=now, transport=transport)


# ---------------------------------------------------------------------------------------------
# Housekeeping


def expire(conn: Connection, *, now: datetime) -> int:
    """Write as expired the pending proposals past their expiry (they read so already); how
    many."""
    done = conn.execute(
        update(proposals_t)
        .where(proposals_t.c.status == PENDING, proposals_t.c.expires_at <= now)
        .values(status=EXPIRED, decided_at=proposals_t.c.expires_at)
    )
    return int(done.rowcount or 0)


def purge(conn: Connection, *, now: datetime, keep_days: int) -> int:
    """Delete the decided (or expired) proposals made before the retention (the call
    history's); how many went."""
    done = conn.execute(
        delete(proposals_t).where(
            proposals_t.c.status != PENDING,
            proposals_t.c.created_at < now - timedelta(days=keep_days),
        )
    )
    return int(done.rowcount or 0)


__all__ = [
    "APPROVED",
    "EXPIRED",
    "FAILED",
    "PENDING",
    "REJECTED",
    "STATUSES",
    "Proposal",
    "count_pending",
    "decide",
    "expire",
    "get_proposal",
    "items_of",
    "list_proposals",
    "may_wait",
    "owner_of",
    "pending_row",
    "proposals_t",
    "propose",
    "purge",
    "reject",
    "status_of",
    "waits",
]
