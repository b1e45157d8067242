"""Undoing a change: the rows it touched put back as they were before it
(``journal.change_record.Unit``), as a change of its own (``undoes``), with its webhook, and the
undone change marked (``undone_by``).

An undo restores every field of every row the change touched (a deleted event or series comes
back with its id, its changed and cancelled occurrences and their ids), but ``updated_at``,
which says when it was restored: clients that keep the newest copy of an event take it. It is
refused while the event is not as the change left it (409 ``conflict``, naming the later
changes of the event: undo those first, newest first), unless ``force``: then whatever is
there now is replaced by what was there before. A change undone already is refused too (409
``already_undone``); undoing the undo makes the change again (and it may be undone again).

``undo_changes_of`` undoes what one key (or connected app) did since a time, newest first,
each as above; what cannot be undone is listed with its reason, and the rest goes on.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, Select, or_, select

from calendar_service.access import keys
from calendar_service.access.keys import Principal, owner_principal
from calendar_service.calendar.calendars import CalendarRow, get_calendar_row
from calendar_service.calendar.events.changelog import read_rows
from calendar_service.calendar.events.series import lock_series
from calendar_service.governance.change_list import (
    change_public,
    change_row,
    change_rows_by_seq,
    since_instant,
)
from calendar_service.governance.restoring import notify_restored, restore_rows, shown_event
from calendar_service.journal.change_record import Unit, Via, default_via, record, same_content
from calendar_service.journal.change_table import CREATED, DELETED, UPDATED, changes_t
from calendar_service.journal.webhook_outbox import DELETED as DELETED_HOOK
from calendar_service.journal.webhook_outbox import record_change
from calendar_service.platform.errors import AlreadyUndone, CalendarError, ChangedSince, NotFound
from calendar_service.platform.timeutil import format_utc

_LATER_NAMED = 10  # later changes named in a refusal


def undo_change(
    conn: Connection,
    *,
    principal: Principal,
    change_id: str,
    now: datetime,
    force: bool = False,
    via: Via | None = None,
) -> dict[str, Any]:
    """Undo the change ``change_id`` (one the key reaches: 404 otherwise), as a change made
    ``via``; returns that new change (see the module's docstring)."""
    row = change_row(conn, principal=principal, change_id=change_id)
    made = undo_row(conn, principal=principal, row=row, now=now, force=force, via=via)
    return change_public(change_row(conn, principal=principal, change_id=made["id"]))


def undo_row(
    conn: Connection,
    *,
    principal: Principal,
    row: Any,
    now: datetime,
    force: bool = False,
    via: Via | None = None,
) -> dict[str, Any]:
    """``undo_change`` of a change's row already read (``governance.change_list``), returning the
    undo as ``record`` does (no read of it after: ``undo_jobs`` undoes thousands)."""
    if row.undone_by is not None:
        raise AlreadyUndone(row.id, row.undone_by)
    unit = Unit.decoded(row.rows)
    calendar = _calendar(conn, row)
    for event_id in sorted(unit.ids):  # one order: no deadlock with the writes of a series
        lock_series(conn, event_id)
    current = read_rows(conn, unit.ids, unit.series)
    before = shown_event(conn, principal, row.event_id)
    if not force and not _as_left(row, unit, current, before):
        raise _changed_since(conn, row)
    dropped = shown_event(conn, principal, row.new_series_id) if row.new_series_id else None
    restore_rows(conn, calendar, current, unit.before, now)
    after = shown_event(conn, principal, row.event_id)
    kind = CREATED if before is None else DELETED if after is None else UPDATED
    notify_restored(conn, principal.user_id, before, after, now)
    if dropped is not None:
        record_change(
            conn, user_id=principal.user_id, event_type=DELETED_HOOK, event=dropped, now=now
        )
    made = record(
        conn,
        via=via or default_via(principal),
        user_id=row.user_id,
        kind=kind,
        event_id=row.event_id,
        calendar_id=row.calendar_id,
        now=now,
        before=before,
        after=after,
        rows=Unit(unit.ids, unit.series, current, read_rows(conn, unit.ids, unit.series)).encoded(),
        recurring_event_id=row.recurring_event_id,
        undoes=row.id,
    )
    done = changes_t.update().where(changes_t.c.seq == row.seq)
    conn.execute(done.values(undone_by=made["id"]))
    if row.undoes is not None:  # an undo undone: the change it undid is made again
        redone = change_row(conn, principal=owner_principal(row.user_id), change_id=row.undoes)
        conn.execute(changes_t.update().where(changes_t.c.seq == redone.seq).values(undone_by=None))
    return made


_NOT_COMPARED = ("updatedAt", "calendar")


def _as_left(row: Any, unit: Unit, current: list[dict[str, Any]], shown: Any) -> bool:
    """Whether the unit is as the change ``row`` left it: its rows the same but for when they
    were written (an undo of a later change puts them back with a new ``updated_at``). A
    create keeps no rows (``record.CREATED_UNIT``): its event must be alone in its unit and
    show what the change's ``after`` showed (but for ``updatedAt``, and its calendar's name,
    which a rename changes without changing the event)."""
    if unit.after is not None:
        return same_content(current, unit.after)
    if [r["id"] for r in current] != unit.ids or shown is None or row.after is None:
        return False
    left = orjson.loads(row.after)
    return all(shown.get(k) == v for k, v in left.items() if k not in _NOT_COMPARED) and len(
        shown
    ) == len(left)


def _calendar(conn: Connection, row: Any) -> CalendarRow:
    try:
        return get_calendar_row(conn, calendar_id=row.calendar_id)
    except NotFound:
        raise ChangedSince(
            f"Change {row.id} cannot be undone: its calendar was deleted since.", []
        ) from None


def _changed_since(conn: Connection, row: Any) -> ChangedSince:
    """The refusal of an undo of ``row`` (a change) whose event changed since, naming the
    later changes of it (still in force), newest first."""
    named = {row.event_id}
    for value in (row.recurring_event_id, row.new_series_id):
        if value is not None:
            named.add(value)
    unit = Unit.decoded(row.rows)
    named.update(unit.ids)
    named.update(unit.series)
    ids = sorted(named)
    later = conn.execute(
        select(changes_t.c.id, changes_t.c.at, changes_t.c.kind, changes_t.c.event_id)
        .where(
            changes_t.c.user_id == row.user_id,
            changes_t.c.seq > row.seq,
            changes_t.c.undone_by.is_(None),
            or_(
                changes_t.c.event_id.in_(ids),
                changes_t.c.recurring_event_id.in_(ids),
                changes_t.c.new_series_id.in_(ids),
            ),
        )
        .order_by(changes_t.c.seq.desc())
        .limit(_LATER_NAMED)
    ).all()
    changes = [
        {"id": c.id, "at": format_utc(c.at), "kind": c.kind, "eventId": c.event_id} for c in later
    ]
    if changes:
        names = ", ".join(f"{c['id']} ({c['kind']} {c['at']})" for c in changes)
        since = f"by {names}: undo those first, newest first"
    else:
        since = "outside the change log (its calendar's time zone, say)"
    return ChangedSince(
        f"Change {row.id} cannot be undone: the event was changed since, {since}; or undo it "
        "anyway with force, which puts back the event as it was before the change.",
        changes,
    )


def undo_changes_of(
    conn: Connection,
    *,
    principal: Principal,
    key_id: str,
    since: str,
    now: datetime,
    via: Via | None = None,
) -> dict[str, Any]:
    """Undo every change the key (or connected app) ``key_id`` of the owner made at or after
    ``since`` and still in force, newest first, each as ``undo_change`` does (without force),
    in the caller's one transaction: ``{undone: [the changes, now undone], refused: [{change,
    reason, code}]}``. The CLI's ``--dry-run`` (rolled back); the settings pages and the CLI's
    undo itself go a batch at a time (``undo_jobs``).

    ``principal``: the owner in person (``keys.owner_principal``)."""
    keys.get_key(conn, user_id=principal.user_id, key_id=key_id)  # 404: not one of theirs
    via = via or default_via(principal)
    found = [r.seq for r in conn.execute(key_changes(principal.user_id, key_id, since))]
    undone: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for seq in found:  # each read by its key: constant work a change, however many share `at`
        [row] = change_rows_by_seq(conn, principal=principal, seqs=[seq]).values()
        try:
            undo_row(conn, principal=principal, row=row, now=now, via=via)
        except CalendarError as exc:
            change = change_public(row)
            refused.append({"change": change, "reason": exc.message, "code": exc.code})
        else:
            [row] = change_rows_by_seq(conn, principal=principal, seqs=[seq]).values()
            undone.append(change_public(row))
    return {"undone": undone, "refused": refused}


def key_changes(user_id: str, key_id: str, since: str) -> Select[Any]:
    """The ``seq`` (and ``at``) of each change of the owner's key (or app) ``key_id`` made at
    or after ``since`` (400 naming ``since`` if it is not a date-time) and still in force, newest
    first: what undoing the key's work undoes, in its order."""
    low = since_instant(since)
    query = select(changes_t.c.seq, changes_t.c.at).where(
        changes_t.c.user_id == user_id,
        changes_t.c.actor_id == key_id,
        changes_t.c.undone_by.is_(None),
    )
    if low is not None:
        query = query.where(changes_t.c.at >= low)
    return query.order_by(changes_t.c.at.desc(), changes_t.c.seq.desc())
