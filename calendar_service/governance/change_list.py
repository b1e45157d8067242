"""Reading the change log: a page of changes, newest first, within what the caller reaches, and
one change by id.

A key reaches the changes of its owner, and a one-calendar key those of its calendar alone; a
change outside that is answered 404, exactly as one that does not exist (never 403, which would
say it exists). The owner in person (``keys.owner_principal``: the CLI, the settings pages)
reaches all of theirs. The actor's name is read with the change: the key's (or connected
app's) name, the owner's email.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Connection, Select, and_, or_, select

from calendar_service.access.keys import Principal
from calendar_service.calendar.event_input import parse_list_params
from calendar_service.calendar.page_tokens import bad_page_token, signed, verified
from calendar_service.journal.change_record import instant_of
from calendar_service.journal.change_table import APP, ATTENDEE, GUEST, KEY, OWNER, changes_t
from calendar_service.platform.errors import (
    FieldError,
    InsufficientScope,
    NotFound,
    ValidationFailed,
)
from calendar_service.platform.models import keys_t, users_t
from calendar_service.platform.timeutil import format_utc, from_utc_text, utc_text


def _in_reach(principal: Principal) -> Any:
    mine = changes_t.c.user_id == principal.user_id
    if principal.calendar_id is None:
        return mine
    return and_(mine, changes_t.c.calendar_id == principal.calendar_id)


def _with_names() -> Select[Any]:
    """Every column of the change, and what names its actor."""
    return select(
        changes_t,
        keys_t.c.name.label("key_name"),
        keys_t.c.kind.label("key_kind"),
        users_t.c.email.label("owner_email"),
    ).select_from(
        changes_t.outerjoin(keys_t, keys_t.c.id == changes_t.c.actor_id).outerjoin(
            users_t, users_t.c.id == changes_t.c.actor_id
        )
    )


def change_public(row: Any) -> dict[str, Any]:
    """A change as the API shows it (``ChangePublic``), from a row of ``_with_names``."""
    change: dict[str, Any] = {
        "id": row.id,
        "at": format_utc(row.at),
        "kind": row.kind,
        "eventId": row.event_id,
    }
    if row.recurring_event_id is not None:
        change["recurringEventId"] = row.recurring_event_id
    change["calendarId"] = row.calendar_id
    change["actor"] = _actor(row)
    change["transport"] = row.transport
    if row.request_id is not None:
        change["requestId"] = row.request_id
    change["before"] = None if row.before is None else orjson.loads(row.before)
    change["after"] = None if row.after is None else orjson.loads(row.after)
    if row.detail is not None:
        change.update(orjson.loads(row.detail))
    if row.undoes is not None:
        change["undoes"] = row.undoes
    if row.undone_by is not None:
        change["undoneBy"] = row.undone_by
    return change


def _actor(row: Any) -> dict[str, Any]:
    if row.actor_type == KEY:
        kind = APP if row.key_kind == APP else KEY
        return {"type": kind, "id": row.actor_id, "name": row.key_name or row.actor_id}
    if row.actor_type == OWNER:
        return {"type": OWNER, "id": row.actor_id, "name": row.owner_email or "owner"}
    if row.actor_type == ATTENDEE and row.detail is not None:  # named by their reply
        reply = orjson.loads(row.detail).get("reply") or {}
        return {"type": ATTENDEE, "name": str(reply.get("email") or ATTENDEE)}
    if row.actor_type == GUEST:  # a booking through a scheduling link (its id)
        return {"type": GUEST, "id": row.actor_id, "name": "guest"}
    return {"type": row.actor_type, "name": row.actor_type}


def get_change(conn: Connection, *, principal: Principal, change_id: str) -> dict[str, Any]:
    """One change, if the key reaches it (404 otherwise)."""
    return change_public(change_row(conn, principal=principal, change_id=change_id))


def change_row(conn: Connection, *, principal: Principal, change_id: str) -> Any:
    """The change's row (with its actor's names), if the key reaches it (404 otherwise)."""
    at = instant_of(change_id)
    found = None
    if at is not None:  # found through the (owner, time) index
        found = conn.execute(
            _with_names().where(
                _in_reach(principal), changes_t.c.at == at, changes_t.c.id == change_id
            )
        ).first()
    if found is None:
        raise NotFound(f"No change {change_id!r} among those this key can reach.")
    return found


def change_rows_by_seq(
    conn: Connection, *, principal: Principal, seqs: list[int]
) -> dict[int, Any]:
    """The rows (with their actor's names) of the changes ``seqs`` the key reaches, by ``seq``
    (the primary key: a read that costs the same however many changes share an instant)."""
    if not seqs:
        return {}
    found = conn.execute(_with_names().where(_in_reach(principal), changes_t.c.seq.in_(seqs)))
    return {row.seq: row for row in found}


def owner_of(conn: Connection, *, change_id: str) -> str:
    """The owner of the change ``change_id``, whoever it is (the operator's CLI: 404 if there
    is no such change)."""
    at = instant_of(change_id)
    found = None
    if at is not None:
        found = conn.execute(
            select(changes_t.c.user_id).where(changes_t.c.at == at, changes_t.c.id == change_id)
        ).first()
    if found is None:
        raise NotFound(f"No change {change_id!r}.")
    return str(found[0])


def since_instant(since: str | None, field: str = "since") -> datetime | None:
    """``since`` (an RFC 3339 date-time, or a date: its midnight UTC) as an instant; its
    errors name ``field``."""
    try:
        low, _, _ = parse_list_params(time_min=since, time_max=None, limit=None, tz=UTC)
    except ValidationFailed as exc:
        raise ValidationFailed([FieldError(field, e["message"]) for e in exc.errors]) from None
    return low


def _size(limit: Any) -> int:
    try:
        _, _, size = parse_list_params(time_min=None, time_max=None, limit=limit, tz=UTC)
    except ValidationFailed as exc:
        raise ValidationFailed([FieldError("limit", e["message"]) for e in exc.errors]) from None
    return size


def _query_key(principal: Principal, *parts: str | None) -> bytes:
    """What a page token of the change list is bound to: the key's reach and the filters."""
    fields = ["changes", principal.key_id, principal.user_id, principal.calendar_id or ""]
    fields.extend(part or "" for part in parts)
    return "\x1f".join(fields).encode()


def list_changes(
    conn: Connection,
    *,
    principal: Principal,
    since: str | None = None,
    event_id: str | None = None,
    calendar_id: str | None = None,
    actor_id: str | None = None,
    limit: Any = None,
    page_token: str | None = None,
    token_key: bytes | None = None,
    before: str | None = None,
) -> dict[str, Any]:
    """``{changes: [...], nextPageToken?}``: the changes the key reaches, newest first, made at
    or after ``since`` and before ``before`` (RFC 3339 date-times, or dates: their midnight
    UTC); of the event ``event_id`` (an event, a series with its occurrences, or an
    occurrence); of the calendar ``calendar_id``; made by the key ``actor_id``. Pages of
    ``limit`` (default 250, at most 2,500), the next one by ``page_token``; without
    ``token_key`` (the owner's CLI) one page, with no token."""
    low = since_instant(since or None)
    high = since_instant(before or None, "before")
    size = _size(limit)
    if calendar_id and principal.calendar_id is not None and calendar_id != principal.calendar_id:
        raise InsufficientScope(
            f"This API key reaches one calendar ({principal.calendar_id}) and its changes "
            "alone: leave calendarId out, or name that calendar."
        )
    query = _with_names().where(_in_reach(principal))
    if low is not None:
        query = query.where(changes_t.c.at >= low)
    if high is not None:
        query = query.where(changes_t.c.at < high)
    if event_id:
        query = query.where(
            or_(
                changes_t.c.event_id == event_id,
                changes_t.c.recurring_event_id == event_id,
                changes_t.c.new_series_id == event_id,
            )
        )
    if calendar_id:
        query = query.where(changes_t.c.calendar_id == calendar_id)
    if actor_id:
        query = query.where(changes_t.c.actor_id == actor_id)
    bound = _query_key(principal, since, event_id, calendar_id, actor_id)
    if before:  # (tokens made without it stay bound as they were)
        bound += b"\x1fbefore\x1f" + before.encode()
    if page_token:
        if token_key is None:
            raise bad_page_token()
        at, seq = _after(token_key, bound, page_token)
        query = query.where(
            or_(changes_t.c.at < at, and_(changes_t.c.at == at, changes_t.c.seq < seq))
        )
    query = query.order_by(changes_t.c.at.desc(), changes_t.c.seq.desc()).limit(size + 1)
    rows = list(conn.execute(query))
    result: dict[str, Any] = {"changes": [change_public(r) for r in rows[:size]]}
    if len(rows) > size and token_key is not None:
        last = rows[size - 1]
        payload = orjson.dumps([utc_text(last.at), last.seq])
        result["nextPageToken"] = signed(token_key, bound, payload)
    return result


def _after(key: bytes, bound: bytes, token: str) -> tuple[datetime, int]:
    payload = verified(key, bound, token)
    if payload is None:
        raise bad_page_token()
    try:
        at_text, seq = orjson.loads(payload)
        at = from_utc_text(at_text)
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise bad_page_token() from None
    if type(seq) is not int or at.tzinfo is None:
        raise bad_page_token()
    return at.astimezone(UTC), seq
