"""One existing event, by id: get it, change some of its fields, delete it.

Each loads what the id names within the key's reach first (``series.load_target``): an event
outside it is answered 404, exactly as one that does not exist. An id names a single event, a
series, or an occurrence of a series; ``scope`` says how much of a series a change of one of
its occurrences reaches (docs/recurrence.md, "Changing"):

- ``this`` (the default for an occurrence id): that occurrence alone. It becomes an exception
  row that keeps its id and original start; a deleted one is kept as a cancelled row;
- ``following``: the series ends before the occurrence (an ``UNTIL``); a change starts a new
  series there, which the answer carries. From the first occurrence, it is ``all``;
- ``all`` (the only scope of a series' or a single event's id): the whole series. A change of
  an occurrence's times moves the series by as much, in local time.

A change of a series' rule or times drops the exceptions whose original start the new rule no
longer produces; ``recurrence: null`` turns a series into a single event (its exceptions go).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Connection, delete, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from calendar_service.access.keys import Principal
from calendar_service.calendar.attendees import (
    bumped,
    check_attendees,
    decode,
    encode,
    organizer_of,
    sequence_of,
)
from calendar_service.calendar.event_input import (
    camel,
    check_time_zone,
    check_title,
    check_transparency,
    current_times,
    parse_untrusted,
    resolve_times,
)
from calendar_service.calendar.events.changelog import Edit, occurrences_from
from calendar_service.calendar.events.queries import INSERT, events_t, owner_email
from calendar_service.calendar.events.series import (
    CANCELLED,
    Target,
    delete_exceptions,
    drop_unproduced,
    load_target,
    local_delta,
    occurrence_row,
    occurrence_span,
    recurrence_columns,
    rule_of,
    shifted,
    target_public,
    times_of,
    zone_of,
)
from calendar_service.calendar.events.shapes import Row, event_public
from calendar_service.calendar.events.writes import after_write
from calendar_service.calendar.recurrence import count_before, dates_split, with_count, with_until
from calendar_service.journal import change_table as change
from calendar_service.journal import invitations
from calendar_service.journal.change_record import Via, default_via, plain, record
from calendar_service.journal.invitations import MailPolicy
from calendar_service.journal.webhook_outbox import CREATED, DELETED, UPDATED
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import EventUpdate, UTCDateTime, to_db

SCOPES = ("this", "following", "all")


def get_event(conn: Connection, *, principal: Principal, event_id: str) -> dict[str, Any]:
    """The event, the series (with ``recurrence``) or the occurrence ``event_id`` names."""
    target = load_target(conn, principal=principal, event_id=event_id)
    if target.row is None:
        return target_public(target)
    return event_public(target.row, calendar_name=target.calendar.name, tz=target.tz)


def _scope(scope: str | None, target: Target) -> str:
    """The scope of a change: for an occurrence id as given (default ``this``); a single
    event's or a series' id always names the whole of it (``all``), whatever was given."""
    if scope is not None and scope != "" and scope not in SCOPES:
        raise ValidationFailed([FieldError("scope", "must be this, following or all")])
    if target.kind != "occurrence":
        return "all"
    return scope or "this"


def _changes(
    row: Any,
    tz: tzinfo,
    data: EventUpdate,
    prior_errors: Sequence[FieldError],
    owner: Callable[[], str],
    series: Any = None,
) -> tuple[dict[str, Any], list[FieldError]]:
    """The columns the fields sent change (PATCH semantics; ``null`` clears description or
    location), checked against ``row`` as it is; ``recurrence`` is the caller's."""
    sent = data.model_fields_set
    errors: list[FieldError] = list(prior_errors)
    bad = {e["field"] for e in prior_errors}
    for name in ("title", "starts_at", "ends_at", "all_day", "transparency"):
        if name in sent and getattr(data, name) is None and camel(name) not in bad:
            errors.append(FieldError(camel(name), "must not be null"))
    values: dict[str, Any] = {}
    if "title" in sent and data.title is not None:
        values["title"] = check_title(data.title, errors)
    all_day = data.all_day if data.all_day is not None else bool(row.all_day)
    # Times without an offset are read in the event's own zone (a series'), or in the one sent.
    local = tz if all_day else zone_of(row if series is None else series, tz)
    if "time_zone" in sent and "timeZone" not in bad:
        values["time_zone"], local = check_time_zone(data.time_zone, all_day, tz, errors)
    elif all_day and getattr(row, "time_zone", None) is not None:
        values["time_zone"] = None  # all-day: days of the calendar's zone
    if {"starts_at", "ends_at", "all_day"} & sent:
        current = current_times(row, tz, all_day)
        start, end = resolve_times(
            starts=data.starts_at if data.starts_at is not None else current[0],
            ends=data.ends_at if data.ends_at is not None else current[1],
            all_day=all_day,
            tz=local,
            errors=errors,
        )
        values.update(starts_at=start, ends_at=end, all_day=all_day)
    for name in ("description", "location"):
        if name in sent:
            values[name] = getattr(data, name)
    if "transparency" in sent and data.transparency is not None:
        values["transparency"] = check_transparency(data.transparency, errors)
    if "attendees" in sent and "attendees" not in bad:
        _attendees(row, data, values, errors, owner)
    return values, errors


def _attendees(
    row: Any,
    data: EventUpdate,
    values: dict[str, Any],
    errors: list[FieldError],
    owner: Callable[[], str],
) -> None:
    """``values["attendees"]``: the column for the attendees sent, unless they are the ones
    the event has (then nothing changes)."""
    stored = getattr(row, "attendees", None)
    people = decode(stored)
    previous = people["attendees"] if people is not None else []
    checked = check_attendees(data.attendees, errors, previous=previous)
    if checked is None or checked == previous:
        return
    organizer = people["organizer"] if people is not None else organizer_of(owner())
    values["attendees"] = encode(checked, organizer=organizer, sequence=sequence_of(stored))


def _owner(conn: Connection, principal: Principal) -> Callable[[], str]:
    """The owner's email, read when a change first gives an event attendees."""
    return lambda: owner_email(conn, principal.user_id)


def update_event(
    conn: Connection,
    *,
    principal: Principal,
    event_id: str,
    body: Any,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
    scope: str | None = None,
    via: Via | None = None,
    logged: bool = True,
    send_updates: str | None = None,
    mail: MailPolicy | None = None,
) -> dict[str, Any]:
    """Change the fields sent of the event, series or occurrence(s) ``event_id`` and
    ``scope`` name (see the module's docstring); returns what was changed (for
    ``scope=following``, the new series).

    ``body``: the ``EventUpdate``, or decoded, untrusted JSON (the fronts' way in), with every
    bad field, of type or of value, reported at once (``prior_errors``: those a front found
    first). The change is recorded as made ``via`` (unless ``logged`` is false: an import
    records each event once it is whole). ``send_updates="all"``: the attendees hear of it
    (``journal.invitations``, with ``mail``)."""
    if invitations.parse_send_updates(send_updates) and logged:
        policy = invitations.check(principal, mail)
        via = via or default_via(principal)
        mark = len(via.made)
        result = update_event(
            conn, principal=principal, event_id=event_id, body=body, now=now,
            prior_errors=prior_errors, scope=scope, via=via,
        )  # fmt: skip
        invitations.queue(conn, principal=principal, policy=policy, made=via.made[mark:], now=now)
        return result
    if isinstance(body, EventUpdate):
        data, errors = body, list(prior_errors)
    else:
        data, errors = parse_untrusted(EventUpdate, body, prior_errors)
    target = load_target(conn, principal=principal, event_id=event_id, for_change=True)
    scope = _scope(scope, target)
    asked = _Asked(conn, principal, target, data, now, errors)
    log = _Log(conn, principal, target, now, via) if logged else None
    if target.kind != "occurrence":
        if log is not None:
            log.start_row(target.row)
        result = _update_row(asked)
        if log is not None:
            log.finish(change.UPDATED, target.row.id, after=result)
        return result
    if scope == "this":
        if log is not None:
            log.start_occurrence()
        result = _update_occurrence(asked)
        if log is not None:
            log.finish(change.UPDATED, target.occurrence_id, after=result, of=target.series.id)
        return result
    if log is not None:
        log.start_row(target.series, since=target.original if scope == "following" else None)
    if scope == "following" and target.original != target.series.starts_at:
        result, ended = _update_following(asked)
        if log is not None:
            log.finish(change.UPDATED, target.series.id, after=ended, new_series=result)
        return result
    result = _update_all_from(asked)
    if log is not None:
        log.finish(change.UPDATED, target.series.id, after=result)
    return result


class _Asked(NamedTuple):
    """One update asked for, as each way of making it takes it: the event ``target`` and
    the fields ``data`` sent (``prior_errors``: those found before)."""

    conn: Connection
    principal: Principal
    target: Target
    data: EventUpdate
    now: datetime
    prior_errors: Sequence[FieldError]


class _Log:
    """The change a write of ``target`` records (``changelog.Edit``): started with what is
    written to (a row with its unit, or the occurrence alone), finished with what it
    became."""

    __slots__ = ("before", "conn", "detail", "edit", "now", "principal", "target", "via")

    def __init__(
        self, conn: Connection, principal: Principal, target: Target, now: datetime, via: Via | None
    ) -> None:
        self.conn, self.principal, self.target, self.now = conn, principal, target, now
        self.via = via or default_via(principal)
        self.edit: Edit | None = None
        self.before: dict[str, Any] | None = None
        self.detail: dict[str, Any] = {}

    def start_row(self, row: Any, *, since: datetime | None = None) -> None:
        """A single event or a series (from ``since``: its occurrences from then on)."""
        target = self.target
        self.edit = Edit.of_row(self.conn, row)
        self.before = event_public(row, calendar_name=target.calendar.name, tz=target.tz)
        if row.recurrence is not None:
            self.detail["occurrences"] = occurrences_from(row, target.tz, since)

    def start_occurrence(self) -> None:
        """One occurrence: its exception row (none yet, for an occurrence never changed)."""
        target = self.target
        before = [] if target.row is None else [plain(target.row)]
        self.edit = Edit(self.conn, [target.occurrence_id], [], before)
        self.before = get_event_of(target)

    def finish(
        self,
        kind: str,
        event_id: str,
        *,
        after: dict[str, Any] | None,
        of: str | None = None,
        new_series: dict[str, Any] | None = None,
    ) -> None:
        assert self.edit is not None
        if new_series is not None:
            self.detail["newSeries"] = new_series
        new_series_id = None if new_series is None else new_series["id"]
        rows = self.edit.rows(self.conn, new_series_id)
        if rows is None:
            return
        record(
            self.conn,
            via=self.via,
            user_id=self.principal.user_id,
            kind=kind,
            event_id=event_id,
            calendar_id=self.target.calendar.id,
            now=self.now,
            before=self.before,
            after=after,
            rows=rows,
            recurring_event_id=of,
            new_series_id=new_series_id,
            detail=self.detail or None,
        )


def _update_row(asked: _Asked, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """A single event or a series changed as a whole (``values``: already worked out)."""
    conn, principal, target, data, now, prior_errors = asked
    row, tz = target.row, target.tz
    errors: list[FieldError] = list(prior_errors)
    if values is None:
        values, errors = _changes(row, tz, data, prior_errors, _owner(conn, principal))
    sent = data.model_fields_set
    was_series = row.recurrence is not None
    if "recurrence" in sent or (
        was_series and {"starts_at", "ends_at", "time_zone"} & values.keys()
    ):
        if "recurrence" in sent:
            rule: Any = data.recurrence
        else:
            rule = orjson.loads(row.recurrence)
        start = values.get("starts_at", row.starts_at)
        end = values.get("ends_at", row.ends_at)
        if start is not None and end is not None:
            all_day = values.get("all_day", bool(row.all_day))
            own = values.get("time_zone", getattr(row, "time_zone", None))
            local = zone_of(Row({"time_zone": own, "all_day": all_day}), tz)
            columns = recurrence_columns(
                rule, start=start, end=end, all_day=all_day, tz=local, errors=errors
            )
            if columns.get("recurrence") is not None:
                columns["time_zone"] = None if all_day else own
            values.update(columns)
    if values.get("recurrence", row.recurrence) is None and "time_zone" in values:
        values["time_zone"] = None  # a single event keeps no zone (it read its times in it)
    if errors:
        raise ValidationFailed(errors)
    if not values:
        return event_public(row, calendar_name=target.calendar.name, tz=tz)
    changed = _stamped(row, values, now)
    conn.execute(update(events_t).where(events_t.c.id == row.id).values(**values))
    if was_series:
        if changed.recurrence is None:
            delete_exceptions(conn, row.id)
        elif (
            values.get("recurrence", row.recurrence) != row.recurrence
            or "starts_at" in values
            or values.get("time_zone", row.time_zone) != row.time_zone
        ):
            drop_unproduced(conn, changed, tz)
    span = (values["starts_at"], values["ends_at"]) if "starts_at" in values else None
    return _notify(conn, principal, target, changed, UPDATED, now, span)


def _stamped(row: Any, values: dict[str, Any], now: datetime) -> Row:
    """``row`` as ``values`` change it, its version bumped (``series.bumped``) and updated
    ``now``: ``values`` gains both, to be written."""
    bumped(row, values)
    values["updated_at"] = now
    return Row({**row._asdict(), **values})


def _notify(
    conn: Connection,
    principal: Principal,
    target: Target,
    row: Any,
    change: str,
    now: datetime,
    span: tuple[datetime, datetime] | None = None,
) -> dict[str, Any]:
    """``writes.after_write`` in ``target``'s calendar: ``row``'s public object, once its
    webhook is queued (``span``: its new times, if they were written)."""
    return after_write(
        conn,
        principal=principal,
        calendar=target.calendar,
        tz=target.tz,
        row=row,
        span=span,
        change=change,
        now=now,
    )


def _no_recurrence(data: EventUpdate, errors: list[FieldError]) -> None:
    if "recurrence" in data.model_fields_set:
        errors.append(
            FieldError(
                "recurrence",
                "belongs to the whole series: PATCH the series' id, or this occurrence with "
                "scope=following or scope=all",
            )
        )


def _insert(conn: Connection, values: dict[str, Any], *, unless_there: bool = False) -> bool:
    """Insert an event row; ``unless_there``: not if a row with its id exists (an exception
    another request made of the same occurrence at the same time). Whether it was inserted."""
    dialect = conn.dialect.name
    stored = {
        c.name: to_db(values[c.name], dialect)
        if isinstance(c.type, UTCDateTime) and values[c.name] is not None
        else values[c.name]
        for c in events_t.c
    }
    if not unless_there:
        INSERT.run(conn, **stored)
        return True
    insert = sqlite_insert if dialect == "sqlite" else postgresql_insert
    row = {c.name: values[c.name] for c in events_t.c}  # SQLAlchemy converts the date-times
    done = conn.execute(insert(events_t).values(**row).on_conflict_do_nothing())
    return bool(done.rowcount)


def _update_occurrence(asked: _Asked) -> dict[str, Any]:
    """One occurrence changed: its exception row, made now if it has none."""
    conn, principal, target, data, now, prior_errors = asked
    row = target.row if target.row is not None else occurrence_row(target)
    values, errors = _changes(
        row, target.tz, data, prior_errors, _owner(conn, principal), series=target.series
    )
    values.pop("time_zone", None)  # the series' own: one occurrence reads its times in it
    _no_recurrence(data, errors)
    if errors:
        raise ValidationFailed(errors)
    if not values:
        return get_event_of(target)
    changed = _stamped(row, values, now)
    inserted = target.row is None and _insert(conn, changed._asdict(), unless_there=True)
    if not inserted:  # changed before, or just now by another request: the fields sent win
        conn.execute(update(events_t).where(events_t.c.id == row.id).values(**values))
    return _notify(
        conn, principal, target, changed, UPDATED, now, (changed.starts_at, changed.ends_at)
    )


def get_event_of(target: Target) -> dict[str, Any]:
    if target.row is None:
        return target_public(target)
    return event_public(target.row, calendar_name=target.calendar.name, tz=target.tz)


def _series_target(target: Target) -> Target:
    return Target("series", target.calendar, target.tz, target.series)


def _update_all_from(asked: _Asked) -> dict[str, Any]:
    """The whole series changed from one of its occurrences: new times of the occurrence move
    the series by as much (local time)."""
    conn, principal, target, data, _, prior_errors = asked
    series, tz = target.series, target.tz
    values, errors = _changes(
        occurrence_row(target), tz, data, prior_errors, _owner(conn, principal)
    )
    if "all_day" in values and values["all_day"] != bool(series.all_day):
        errors.append(FieldError("allDay", "changes the whole series: PATCH the series' id"))
    if "starts_at" in values and not errors:
        old_start, old_end = occurrence_span(target)
        local = zone_of(series, tz)  # moved in the series' own wall clock
        values["starts_at"] = shifted(
            series.starts_at, by=local_delta(old_start, values["starts_at"], local), tz=local
        )
        values["ends_at"] = shifted(
            series.ends_at, by=local_delta(old_end, values["ends_at"], local), tz=local
        )
    if errors:
        raise ValidationFailed(errors)
    return _update_row(asked._replace(target=_series_target(target), prior_errors=()), values)


def _update_following(asked: _Asked) -> tuple[dict[str, Any], dict[str, Any]]:
    """This and the following occurrences changed: the series ends before this one, and a new
    series with the change starts at it. Exceptions from here on are dropped. Returns the new
    series and the one ended."""
    conn, principal, target, data, now, prior_errors = asked
    series, tz, original = target.series, target.tz, target.original
    assert original is not None
    start_row = occurrence_row(target)
    values, errors = _changes(start_row, tz, data, prior_errors, _owner(conn, principal))
    rule = rule_of(series)
    new = {**start_row._asdict(), **values}
    all_day = bool(new["all_day"])
    if "recurrence" in data.model_fields_set:
        lines: Any = data.recurrence
    else:
        _, later_dates = dates_split(rule, original, tz)
        rrule_lines = [line for line in rule.lines if line.startswith("RRULE:")]
        if rule.count is not None:
            left = rule.count - count_before(rule, times_of(series, tz), original)
            rrule_lines = with_count(rrule_lines, max(left, 1))
        lines = [*rrule_lines, *later_dates]
    columns = recurrence_columns(
        lines,
        start=new["starts_at"],
        end=new["ends_at"],
        all_day=all_day,
        tz=zone_of(Row(new), tz),
        errors=errors,
    )
    if columns.get("recurrence") is not None:
        columns["time_zone"] = None if all_day else new.get("time_zone")
    if errors:
        raise ValidationFailed(errors)
    ended = _end_before(conn, principal, target, now)
    new.update(columns)
    if new.get("attendees") is not None:  # a new series: its invitations start again
        people = orjson.loads(new["attendees"])
        new["attendees"] = orjson.dumps({**people, "sequence": 0}).decode()
    new.update(
        id=new_id("ev"),
        created_at=now,
        updated_at=now,
        recurring_event_id=None,
        original_starts_at=None,
    )
    _insert(conn, new)
    started = _notify(
        conn,
        principal,
        target,
        Row(new),
        CREATED,
        now,
        span=(new["starts_at"], new["ends_at"]),
    )
    return started, ended


def _end_before(
    conn: Connection, principal: Principal, target: Target, now: datetime
) -> dict[str, Any]:
    """The series ends before ``target``'s occurrence: an UNTIL, its later EXDATE/RDATEs and
    exceptions gone; its ``updated`` webhook queued."""
    series, tz, original = target.series, target.tz, target.original
    assert original is not None
    rule = rule_of(series)
    earlier_dates, _ = dates_split(rule, original, tz)
    rrule_lines = [line for line in with_until(rule, original, tz) if line.startswith("RRULE:")]
    errors: list[FieldError] = []
    values = recurrence_columns(
        [*rrule_lines, *earlier_dates],
        start=series.starts_at,
        end=series.ends_at,
        all_day=bool(series.all_day),
        tz=zone_of(series, tz),
        errors=errors,
    )
    values.pop("time_zone", None)  # the series keeps its zone
    if errors:  # cannot happen: the series occurs at its start
        raise ValidationFailed(errors)
    changed = _stamped(series, values, now)
    conn.execute(update(events_t).where(events_t.c.id == series.id).values(**values))
    delete_exceptions(conn, series.id, since=original)
    return _notify(conn, principal, target, changed, UPDATED, now)


def delete_event(
    conn: Connection,
    *,
    principal: Principal,
    event_id: str,
    now: datetime,
    scope: str | None = None,
    via: Via | None = None,
    send_updates: str | None = None,
    mail: MailPolicy | None = None,
) -> dict[str, Any]:
    """Delete an event or a series (with its exceptions), cancel one occurrence
    (``scope=this``) or end a series before one (``scope=following``). The webhook carries
    what was deleted or cancelled as it was (``deleted``), or the shortened series
    (``updated``); the change is recorded as made ``via``. ``send_updates="all"``: the
    attendees get a cancellation (``journal.invitations``, with ``mail``)."""
    if invitations.parse_send_updates(send_updates):
        policy = invitations.check(principal, mail)
        via = via or default_via(principal)
        mark = len(via.made)
        result = delete_event(
            conn, principal=principal, event_id=event_id, now=now, scope=scope, via=via
        )
        invitations.queue(conn, principal=principal, policy=policy, made=via.made[mark:], now=now)
        return result
    target = load_target(conn, principal=principal, event_id=event_id, for_change=True)
    scope = _scope(scope, target)
    log = _Log(conn, principal, target, now, via)
    if target.kind == "occurrence":
        if scope == "this":
            log.start_occurrence()
            result = _cancel(conn, principal, target, now)
            log.finish(change.DELETED, target.occurrence_id, after=None, of=target.series.id)
            return result
        if scope == "following" and target.original != target.series.starts_at:
            log.start_row(target.series, since=target.original)
            result = _end_before(conn, principal, target, now)
            log.finish(change.UPDATED, target.series.id, after=result)
            return result
        target = _series_target(target)
        log.target = target
    row = target.row
    log.start_row(row)
    if target.kind == "series":
        delete_exceptions(conn, row.id)
    conn.execute(delete(events_t).where(events_t.c.id == row.id))
    result = _notify(conn, principal, target, row, DELETED, now)
    log.finish(change.DELETED, row.id, after=None)
    return result


def _cancel(
    conn: Connection, principal: Principal, target: Target, now: datetime
) -> dict[str, Any]:
    """One occurrence cancelled: kept as a cancelled exception row (so the list skips it)."""
    row: Any = occurrence_row(target) if target.row is None else target.row
    cancelled = {**row._asdict(), "status": CANCELLED, "updated_at": now}
    if target.row is not None or not _insert(conn, cancelled, unless_there=True):
        conn.execute(
            update(events_t).where(events_t.c.id == row.id).values(status=CANCELLED, updated_at=now)
        )
    return _notify(conn, principal, target, row, DELETED, now)
