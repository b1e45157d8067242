"""Approving a proposal (``governance.proposals``): the write a key asked for, made when the owner
says so, exactly as the owner saw it.

The proposal keeps the rows the write would have touched, before and after
(``journal.change_record.Unit``). Approving checks that they are still as they were before (field
for field but ``updated_at``: ``same_content``); if any is not, nothing is applied and the
proposal is ``failed``, saying why (the owner sees the event as it is now and may ask the key
again). Otherwise the rows are made what the write would have made (as an undo restores
them: ``governance.restoring``), each change recorded with its webhook: its actor the key that
asked, its transport where the owner approved it (``settings``, ``cli``), its ``requestId`` the
key's request (in the key's call history, answered 202), with ``proposalId`` and
``approvedBy`` (the owner). An event the approval creates is created at the approval; an
import's UIDs are recorded as the import would have (one imported since under the same UID is
a conflict too). A create that asked for a free time (``ifFree``) is checked again: a busy
event made since in that time fails it as a conflict, naming the overlap. The owner's rules
for agents bind an approval as the key's own write (``calendar.rule_check``): one that breaks
them now fails (``rule_violation``, naming them), but for a proposal made because it broke
them (``onViolation: ask``), whose approval is the owner's yes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, insert, select, update

from calendar_service.access.keys import Principal, key_row_by_id, owner_principal
from calendar_service.calendar.calendars import get_calendar_row
from calendar_service.calendar.events.changelog import read_rows
from calendar_service.calendar.events.create import check_free
from calendar_service.calendar.events.queries import events_t
from calendar_service.calendar.events.series import lock_series
from calendar_service.calendar.rule_check import check_write
from calendar_service.governance.change_list import change_row
from calendar_service.governance.proposals import APPROVED, FAILED, decide, pending_row
from calendar_service.governance.restoring import notify_restored, restore_rows, shown_event
from calendar_service.journal.change_record import Unit, Via, record, same_content
from calendar_service.journal.change_table import CREATED, KEY, OWNER, changes_t
from calendar_service.journal.webhook_outbox import CREATED as CREATED_HOOK
from calendar_service.journal.webhook_outbox import record_change
from calendar_service.platform.db.transactions import tentative
from calendar_service.platform.errors import Conflict, NotFound
from calendar_service.platform.models import ical_uids_t, users_t
from calendar_service.platform.timeutil import from_utc_text, zone


def approve(
    conn: Connection, *, user_id: str, proposal_id: str, now: datetime, transport: str
) -> dict[str, Any]:
    """The owner (``user_id``, through ``transport``: ``settings`` or ``cli``) approves the
    pending proposal ``proposal_id`` (404 if not theirs, 409 ``proposal_not_pending`` if
    decided or expired). Returns the proposal: ``approved`` with the ``changeIds`` made, or
    ``failed`` with the ``reason`` (the event changed since: nothing was applied)."""
    row = pending_row(conn, user_id=user_id, proposal_id=proposal_id, now=now)
    items = _items(row)
    units = [Unit.decoded(item["rows"]) for item in items]
    for event_id in sorted({i for unit in units for i in unit.ids}):  # one order: no deadlock
        lock_series(conn, event_id)
    reason = _refusal(conn, user_id, items, units)
    if reason is not None:
        refused: dict[str, Any] = {"code": "conflict", "reason": reason}
        return decide(conn, row=row, status=FAILED, now=now, transport=transport, outcome=refused)
    owner = owner_principal(user_id)
    via = Via(KEY, row.key_id, transport, row.request_id)
    email = conn.execute(select(users_t.c.email).where(users_t.c.id == user_id)).scalar()
    approved_by = {"type": OWNER, "id": user_id, "name": email or OWNER}
    detail = {"proposalId": row.id, "approvedBy": approved_by}
    with tentative(conn) as trial:
        made = [
            _apply(conn, owner, via, item, unit, now, detail)
            for item, unit in zip(items, units, strict=True)
        ]
        verdict = None
        if not items[0].get("ruleViolations"):  # else the owner says yes to what it breaks
            verdict = check_write(conn, principal=_asker(conn, row), made=via.made, now=now)
        if verdict is not None:
            trial.discard()
    if verdict is not None:
        broken: dict[str, Any] = {
            "code": "rule_violation",
            "reason": "It breaks the owner's rules for agents now: "
            + " ".join(e["message"] for e in verdict.errors),
            "ruleViolations": verdict.errors,
        }
        return decide(conn, row=row, status=FAILED, now=now, transport=transport, outcome=broken)
    outcome: dict[str, Any] = {"changeIds": made}
    return decide(conn, row=row, status=APPROVED, now=now, transport=transport, outcome=outcome)


def _asker(conn: Connection, row: Any) -> Principal:
    """The key that made the proposal ``row``, as the owner's rules see it (whether they bind
    it), whatever its state now."""
    key = key_row_by_id(conn, key_id=row.key_id)
    return Principal(
        key.id,
        key.user_id,
        key.permission,
        key.calendar_id,
        key.expires_at,
        key.calendar,
        key.approval,
        key.may_invite,
        key.rules,
    )


def _items(row: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = orjson.loads(row.items)
    return items


def _refusal(
    conn: Connection, user_id: str, items: list[dict[str, Any]], units: list[Unit]
) -> str | None:
    """Why the proposal cannot be applied now, or ``None``."""
    for item, unit in zip(items, units, strict=True):
        try:
            get_calendar_row(conn, calendar_id=item["calendarId"])
        except NotFound:
            return "Its calendar was deleted since it was proposed: nothing was changed."
        if not same_content(read_rows(conn, unit.ids, unit.series), unit.before):
            what = "was created" if not unit.before else "changed"
            return (
                f"The event {item['eventId']} {what} since the change was proposed: nothing "
                "was changed. The key may propose it again on the event as it is now."
            )
        for uid in item.get("uids", ()):
            taken = _uid_owner(conn, uid)
            if taken is not None and taken != uid["event_id"]:
                return (
                    f"An event with the iCalendar UID of {item['eventId']} was imported since "
                    "the change was proposed: nothing was changed. The key may import again."
                )
        if item.get("ifFree"):
            taken_time = _not_free(conn, user_id, item, unit)
            if taken_time is not None:
                return taken_time
    return None


def _not_free(conn: Connection, user_id: str, item: dict[str, Any], unit: Unit) -> str | None:
    """A create proposed with ``ifFree``: why its time is no longer free, or ``None`` (the
    check the create made, made again now, the calendar locked as the create locks it)."""
    row = next(r for r in unit.after or [] if r["id"] == item["eventId"])
    calendar = get_calendar_row(conn, calendar_id=item["calendarId"])
    start, end = from_utc_text(row["starts_at"]), from_utc_text(row["ends_at"])
    try:
        check_free(
            conn,
            principal=owner_principal(user_id),
            calendar=calendar,
            start=start,
            end=end,
            tz=zone(calendar.time_zone),
        )
    except Conflict as exc:
        return (
            "It asked for a free time (ifFree), and the time was taken since it was proposed. "
            f"{exc.message}"
        )
    return None


def _uid_owner(conn: Connection, uid: dict[str, Any]) -> str | None:
    """The event the UID ``uid`` (an ``ical_uids`` row) stands for in its calendar now."""
    found = conn.execute(
        select(ical_uids_t.c.event_id).where(
            ical_uids_t.c.calendar_id == uid["calendar_id"],
            ical_uids_t.c.uid_hash == uid["uid_hash"],
        )
    ).scalar()
    return None if found is None else str(found)


def _name_taken(conn: Connection, uid: dict[str, Any]) -> bool:
    """Whether another event of the calendar has, since the proposal, had its CalDAV object
    named as the one the proposal PUT (``uid["object_name"]``)."""
    u = ical_uids_t.c
    found = conn.execute(
        select(u.id)
        .select_from(ical_uids_t.join(events_t, events_t.c.id == u.event_id))
        .where(
            u.calendar_id == uid["calendar_id"],
            u.object_name == uid["object_name"],
            events_t.c.calendar_id == uid["calendar_id"],
        )
    ).first()
    return found is not None


def _apply(
    conn: Connection,
    owner: Principal,
    via: Via,
    item: dict[str, Any],
    unit: Unit,
    now: datetime,
    approval: dict[str, Any],
) -> str:
    """Make one change of the proposal and record it; its id."""
    calendar = get_calendar_row(conn, calendar_id=item["calendarId"])
    current = read_rows(conn, unit.ids, unit.series)
    wanted = unit.after or []  # always read (``proposals.items_of``)
    restore_rows(conn, calendar, current, wanted, now)
    if item["kind"] == CREATED and "undoes" not in item["detail"]:
        new = [r["id"] for r in wanted if r["id"] not in {c["id"] for c in current}]
        if new:  # created when approved
            conn.execute(update(events_t).where(events_t.c.id.in_(new)).values(created_at=now))
    for uid in item.get("uids", ()):  # as the import would have recorded them
        if _uid_owner(conn, uid) is None:
            if uid.get("object_name") is not None and _name_taken(conn, uid):
                uid = {**uid, "object_name": None}  # its object is <UID>.ics (``caldav``)
            conn.execute(insert(ical_uids_t).values(**uid))
    event_id = item["eventId"]
    before = item["before"]
    after = shown_event(conn, owner, event_id)
    notify_restored(conn, owner.user_id, before, after, now)
    new_series = item.get("newSeriesId")
    if new_series is not None:
        started = shown_event(conn, owner, new_series)
        if started is not None:
            record_change(
                conn, user_id=owner.user_id, event_type=CREATED_HOOK, event=started, now=now
            )
    detail = {**item["detail"], **approval}
    undoes = detail.pop("undoes", None)
    change = record(
        conn,
        via=via,
        user_id=owner.user_id,
        kind=item["kind"],
        event_id=event_id,
        calendar_id=item["calendarId"],
        now=now,
        before=before,
        after=after,
        rows=Unit(unit.ids, unit.series, current, read_rows(conn, unit.ids, unit.series)).encoded(),
        recurring_event_id=item.get("recurringEventId"),
        new_series_id=new_series,
        detail=detail,
        undoes=undoes,
    )
    if undoes is not None:
        _mark_undone(conn, owner, undoes, change["id"])
    return str(change["id"])


def _mark_undone(conn: Connection, owner: Principal, undone: str, by: str) -> None:
    """As an undo does: the change undone says by what; an undo undone, the change it undid
    is in force again."""
    try:
        row = change_row(conn, principal=owner, change_id=undone)
    except NotFound:  # purged since
        return
    conn.execute(changes_t.update().where(changes_t.c.seq == row.seq).values(undone_by=by))
    if row.undoes is not None:
        try:
            redone = change_row(conn, principal=owner, change_id=row.undoes)
        except NotFound:
            return
        conn.execute(changes_t.update().where(changes_t.c.seq == redone.seq).values(undone_by=None))
