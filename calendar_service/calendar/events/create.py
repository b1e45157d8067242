"""Creating an event: in the calendar ``calendars.resolve_target`` chooses, with every bad field
reported at once, and once only per ``Idempotency-Key``; one change in the change log.

``create_event`` takes the input model; ``create_event_from_input`` is the fronts' way in, from
decoded, untrusted JSON, honouring an idempotency key.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any

from sqlalchemy import Connection

from calendar_service.access import idempotency
from calendar_service.access.keys import Principal
from calendar_service.calendar.attendees import check_attendees, encode, organizer_of
from calendar_service.calendar.calendars import resolve_target
from calendar_service.calendar.event_input import (
    check_time_zone,
    check_title,
    check_transparency,
    parse_untrusted,
    resolve_times,
)
from calendar_service.calendar.events.busy import conflicts
from calendar_service.calendar.events.changelog import log_created
from calendar_service.calendar.events.queries import INSERT, owner_email
from calendar_service.calendar.events.series import CONFIRMED, NOT_A_SERIES, recurrence_columns
from calendar_service.calendar.events.shapes import Row
from calendar_service.calendar.events.writes import after_write
from calendar_service.journal import invitations
from calendar_service.journal.change_record import Via, created_change_id, default_via
from calendar_service.journal.invitations import MailPolicy
from calendar_service.journal.webhook_outbox import CREATED
from calendar_service.platform.errors import Conflict, FieldError, ValidationFailed
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import EventCreate, to_db
from calendar_service.platform.timeutil import format_in, zone


def create_event(
    conn: Connection,
    *,
    principal: Principal,
    data: EventCreate,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
    via: Via | None = None,
    logged: bool = True,
) -> dict[str, Any]:
    """Create an event (a series, given ``recurrence``) in the calendar
    ``calendars.resolve_target`` chooses; queue ``created``; record the change made ``via``
    (unless ``logged`` is false: an import records each event once it is whole).

    ``prior_errors`` are type errors already found in the input (see ``inputs.parse_partial``):
    they are reported together with every value error found here."""
    calendar, tz, title, transparency, start, end, series, attendees = _checked(
        conn, principal, data, prior_errors
    )
    if data.if_free:
        check_free(conn, principal=principal, calendar=calendar, start=start, end=end, tz=tz)
        if via is not None:
            via.if_free = True  # an approval checks it again
    dialect = conn.dialect.name
    stored_now = to_db(now, dialect)
    stored = {  # every column, date-times as the driver takes them (models.to_db)
        "id": new_id("ev"),
        "calendar_id": calendar.id,
        "title": title,
        "starts_at": to_db(start, dialect),
        "ends_at": to_db(end, dialect),
        "all_day": data.all_day,
        "description": data.description,
        "location": data.location,
        "created_at": stored_now,
        "updated_at": stored_now,
        "recurrence": series["recurrence"],
        "recurrence_last_start": _stored(series["recurrence_last_start"], dialect),
        "recurrence_ends_at": _stored(series["recurrence_ends_at"], dialect),
        "recurring_event_id": None,
        "original_starts_at": None,
        "status": CONFIRMED,
        "transparency": transparency,
        "time_zone": series["time_zone"],
        "attendees": None,
    }
    if attendees:
        stored["attendees"] = encode(
            attendees, organizer=organizer_of(owner_email(conn, principal.user_id)), sequence=0
        )
    INSERT.run(conn, **stored)
    # Formatted from what was stored, as a list formats it (on SQLite: text, no parsing).
    event = after_write(
        conn,
        principal=principal,
        calendar=calendar,
        tz=tz,
        row=Row(stored),
        span=(start, end),
        change=CREATED,
        now=now,
    )
    if logged:
        log_created(
            conn,
            via=via or default_via(principal),
            user_id=principal.user_id,
            event=event,
            row=stored,
            now=now,
        )
    return event


def _checked(
    conn: Connection, principal: Principal, data: EventCreate, prior_errors: Sequence[FieldError]
) -> tuple[Any, tzinfo, str, str, datetime, datetime, dict[str, Any], Any]:
    """``create_event``'s input, every value checked (all errors at once, with
    ``prior_errors``): the calendar, its zone, the title, the transparency, the start and end,
    the series' columns (``NOT_A_SERIES`` for a single event) and the attendees."""
    errors: list[FieldError] = list(prior_errors)
    calendar = None
    try:
        calendar = resolve_target(
            conn, principal=principal, calendar_id=data.calendar_id, calendar_name=data.calendar
        )
    except ValidationFailed as exc:
        errors.extend(exc.errors)
    tz = zone(calendar.time_zone) if calendar is not None else UTC
    bad = {e["field"] for e in prior_errors}
    title = check_title(data.title, errors) if "title" not in bad else None
    transparency = (
        check_transparency(data.transparency, errors) if "transparency" not in bad else None
    )
    own_zone, local = (None, tz)
    if "timeZone" not in bad:
        own_zone, local = check_time_zone(data.time_zone, bool(data.all_day), tz, errors)
    start, end = resolve_times(
        starts=data.starts_at,
        ends=data.ends_at,
        all_day=bool(data.all_day),
        tz=local,
        errors=errors,
    )
    series: dict[str, Any] = dict(NOT_A_SERIES)
    if data.if_free is True and data.recurrence is not None:
        errors.append(
            FieldError(
                "ifFree",
                "cannot be combined with recurrence: a series' occurrences are not checked; "
                "create the series without ifFree, or check its times with findFreeTime first",
            )
        )
    if data.recurrence is not None and start is not None and end is not None:
        series = recurrence_columns(
            data.recurrence, start=start, end=end, all_day=data.all_day, tz=local, errors=errors
        )
        if series:  # a series keeps the zone it repeats in (a single event has none)
            series["time_zone"] = own_zone
    attendees = None
    if data.attendees is not None and "attendees" not in bad:
        attendees = check_attendees(data.attendees, errors)
    if errors or calendar is None or start is None or end is None or title is None:
        raise ValidationFailed(errors)
    assert transparency is not None  # else an error was found
    return calendar, tz, title, transparency, start, end, series, attendees


def check_free(
    conn: Connection,
    *,
    principal: Principal,
    calendar: Any,
    start: datetime,
    end: datetime,
    tz: tzinfo,
) -> None:
    """``ifFree``: 409 if busy events of the calendar overlap ``[start, end)`` (checked in the
    transaction that inserts, after locking the calendar: ``busy.conflicts``)."""
    found = conflicts(conn, principal=principal, calendar=calendar, start=start, end=end)
    if found:
        times = "; ".join(f"{c['startsAt']} to {c['endsAt']}" for c in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        raise Conflict(
            f"The time {format_in(start, tz)} to {format_in(end, tz)} is not free in calendar "
            f"{calendar.name!r}: it overlaps {times}{more}. Nothing was created; pick another "
            "time (findFreeTime finds one).",
            found,
        )


def _stored(value: datetime | None, dialect: str) -> datetime | str | None:
    return None if value is None else to_db(value, dialect)


def create_event_from_input(
    conn: Connection,
    *,
    principal: Principal,
    body: Any,
    now: datetime,
    idempotency_key: str | None = None,
    prior_errors: Sequence[FieldError] = (),
    via: Via | None = None,
    send_updates: str | None = None,
    mail: MailPolicy | None = None,
) -> tuple[dict[str, Any], bool]:
    """The fronts' way in: decoded, untrusted JSON for a new event, with every bad field, of
    type or of value, reported at once; created once only per ``idempotency_key`` (the
    ``Idempotency-Key`` header). Returns ``(event, replayed)``: a replay answers the event the
    first request created, and puts that request's change id on ``via``
    (``Via.replayed``)."""
    data, errors = parse_untrusted(EventCreate, body, prior_errors)
    if invitations.parse_send_updates(send_updates):
        policy = invitations.check(principal, mail)
        via = via or default_via(principal)
        mark = len(via.made)
        result = _create_from_input(conn, principal, data, now, idempotency_key, errors, via)
        if not result[1]:  # a replay sends nothing again
            invitations.queue(
                conn, principal=principal, policy=policy, made=via.made[mark:], now=now
            )
        return result
    return _create_from_input(conn, principal, data, now, idempotency_key, errors, via)


def _create_from_input(
    conn: Connection,
    principal: Principal,
    data: EventCreate,
    now: datetime,
    idempotency_key: str | None,
    errors: list[FieldError],
    via: Via | None,
) -> tuple[dict[str, Any], bool]:
    if idempotency_key is None or errors:
        event = create_event(
            conn, principal=principal, data=data, now=now, prior_errors=errors, via=via
        )
        return event, False
    key = idempotency.check_key(idempotency_key)
    print_ = idempotency.fingerprint(data.model_dump(mode="json"))
    replay = idempotency.lookup(conn, key_id=principal.key_id, idem_key=key, print_=print_, now=now)
    if replay is not None:
        if replay.status == idempotency.PROPOSED:  # it waits: the gateway answers its proposal
            if via is None:
                raise ValueError("a proposal is replayed only through the gateway (via)")
            via.replayed_proposal = replay.body["proposalId"]
            return replay.body, True
        if via is not None:
            via.replayed = created_change_id(
                conn, user_id=principal.user_id, event_id=replay.body["id"]
            )
        return replay.body, True
    if via is not None:  # should the write wait, the gateway stores its proposal instead
        via.idempotency = idempotency.Pending(principal.key_id, key, print_)
    event = create_event(conn, principal=principal, data=data, now=now, via=via)
    idempotency.store(
        conn, key_id=principal.key_id, idem_key=key, print_=print_, status=201, body=event, now=now
    )
    return event, False
