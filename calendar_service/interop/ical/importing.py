"""Importing an ``.ics`` file into one calendar, idempotent by UID.

``import_events`` (operation ``importCalendarEvents``; also ``calendar-service import``) reads
the file (``reading``), checks what each UID wants before anything is written (``desired``),
then for each UID:

- not imported before (``ical_uids``): the event or series is made with the core's
  ``create_event`` (its webhook queued like any other), its changed occurrences as exception
  rows (each queues ``calendar.event.updated``, as a changed occurrence does): **created**;
- imported before and the same now: **skipped** (so importing a file twice changes nothing);
- imported before and changed in the file: the event is changed with ``update_event`` and its
  changed occurrences replaced: **updated**;
- unreadable or refused by the core (no DTSTART, an unknown TZID, a rule the core refuses, NUL
  in its UID or a text, as every other path refuses it...): an entry in ``errors``, and
  nothing of that UID is written.

Every value is checked before anything of its UID is written, so a UID is imported whole or
not at all. The answer: ``{created, updated, skipped, errors: [{uid, message}], warnings:
[{uid, message}]}``; ``warnings`` says what was imported only in part (attendees, alarms
and other properties events here have no place for; changed occurrences the rule does not
produce; a series whose file zone changes its clocks on other dates than the calendar's).
Each event created or updated is one change in the change log (transport ``import``).

Series here repeat at the same wall-clock time in their calendar's zone; times are read in the
zone the file names and stored as instants.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import Connection, delete, insert, select, text

from calendar_service.access.keys import Principal
from calendar_service.calendar.attendees import decode
from calendar_service.calendar.calendars import CalendarRow, resolve_target
from calendar_service.calendar.events.changelog import Edit
from calendar_service.calendar.events.create import create_event
from calendar_service.calendar.events.existing import update_event
from calendar_service.calendar.events.queries import EVENT_COLUMNS
from calendar_service.calendar.events.series import delete_exceptions
from calendar_service.calendar.events.shapes import Row, event_public
from calendar_service.calendar.events.writes import after_write
from calendar_service.calendar.recurrence import occurrence_id
from calendar_service.interop.ical.desired import Desired, Report, wanted_events
from calendar_service.interop.ical.reading import ReadFile, read_file
from calendar_service.journal.change_record import Via, default_via, record
from calendar_service.journal.change_table import CREATED as CREATED_CHANGE
from calendar_service.journal.change_table import UPDATED as UPDATED_CHANGE
from calendar_service.journal.webhook_outbox import UPDATED
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.inputs import NUL, check_text
from calendar_service.platform.models.events import (
    AttendeeInput,
    EventCreate,
    EventUpdate,
    events_t,
)
from calendar_service.platform.models.ical import ical_uids_t
from calendar_service.platform.timeutil import zone

IMPORT_TRANSPORT = "import"
CONFIRMED = "confirmed"


def lock_calendar(conn: Connection, calendar_id: str) -> None:
    """Imports into one calendar one at a time, until the transaction ends (PostgreSQL; SQLite
    has one writer): taken by ``import_events``, and before by a CalDAV PUT, which reads the
    object it replaces first. Taken twice in one transaction, it is held once more."""
    if conn.dialect.name == "postgresql":
        lock = int.from_bytes(hashlib.sha256(calendar_id.encode()).digest()[:8], "big", signed=True)
        conn.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": lock})


def import_events(
    conn: Connection,
    *,
    principal: Principal,
    data: bytes | ReadFile,
    now: datetime,
    calendar_id: str | None = None,
    calendar_name: str | None = None,
    field_name: str = "body",
    via: Via | None = None,
    transport: str = IMPORT_TRANSPORT,
) -> dict[str, Any]:
    """Import the iCalendar file ``data`` (or the file already read: ``reading.read_file``,
    which a front may run off the event loop) into the calendar chosen as a create chooses it
    (``calendar_id``/``calendar_name``, else the key's own or the default calendar); returns
    the report (see the module's docstring). Each event created or updated is one change in
    the change log, made ``via`` with ``transport`` (``import``; CalDAV's PUT: ``caldav``)."""
    via = via or default_via(principal)
    via.transport = transport
    calendar = resolve_target(
        conn, principal=principal, calendar_id=calendar_id, calendar_name=calendar_name
    )
    read = data if isinstance(data, ReadFile) else read_file(data, field_name=field_name)
    lock_calendar(conn, calendar.id)
    tz = zone(calendar.time_zone)
    known = _Known.load(conn, calendar.id)
    report = Report()
    for uid, message in read.warnings:
        report.warnings.append({"uid": uid, "message": message})
    for plan in read.plans:
        refused = check_text("UID", plan.uid)
        if refused:  # an id no path takes (PostgreSQL could not even store it)
            report.errors.append(
                {
                    "uid": plan.uid.replace(NUL, "\\u0000"),
                    "message": _reasons(ValidationFailed(refused)),
                }
            )
            continue
        for message in plan.warnings:
            report.warnings.append({"uid": plan.uid, "message": message})
        if plan.error is not None:
            report.errors.append({"uid": plan.uid, "message": plan.error})
            continue
        if plan.master is not None and plan.cancelled:
            report.warnings.append(
                {
                    "uid": plan.uid,
                    "message": "the event is cancelled (STATUS:CANCELLED): not imported",
                }
            )
            continue
        try:
            wanted = wanted_events(plan, tz, report)
        except ValidationFailed as exc:
            report.errors.append({"uid": plan.uid, "message": _reasons(exc)})
            continue
        for desired in wanted:
            if desired.key in known.done:  # the same occurrence twice, without its event
                report.warnings.append(
                    {"uid": plan.uid, "message": "given twice in the file: imported once"}
                )
                continue
            known.done.add(desired.key)
            try:
                outcome = _apply(conn, principal, calendar, tz, desired, now, known, via)
            except ValidationFailed as exc:  # raised before it wrote anything
                report.errors.append({"uid": plan.uid, "message": _reasons(exc)})
                continue
            setattr(report, outcome, getattr(report, outcome) + 1)
    return report.public()


def _reasons(exc: ValidationFailed) -> str:
    return "; ".join(f"{e['field']}: {e['message']}" for e in exc.errors) or exc.message


# ---------------------------------------------------------------------------------------------
# Writing


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(slots=True)
class _Known:
    """What earlier imports left in the calendar, read once per import: UID hash to (mapping
    row id, event id), and the rows of those events that still exist."""

    mapped: dict[str, tuple[int, str]]
    rows: dict[str, Any]
    done: set[str] = field(default_factory=set)  # the keys this import has seen

    @classmethod
    def load(cls, conn: Connection, calendar_id: str) -> _Known:
        mapped = {
            r.uid_hash: (r.id, r.event_id)
            for r in conn.execute(
                select(ical_uids_t.c.id, ical_uids_t.c.uid_hash, ical_uids_t.c.event_id).where(
                    ical_uids_t.c.calendar_id == calendar_id
                )
            )
        }
        rows: dict[str, Any] = {}
        if mapped:
            imported = select(ical_uids_t.c.event_id).where(
                ical_uids_t.c.calendar_id == calendar_id
            )
            rows = {
                r.id: r
                for r in conn.execute(
                    select(*EVENT_COLUMNS).where(
                        events_t.c.calendar_id == calendar_id, events_t.c.id.in_(imported)
                    )
                )
            }
        return cls(mapped, rows)


def _apply(
    conn: Connection,
    principal: Principal,
    calendar: CalendarRow,
    tz: tzinfo,
    desired: Desired,
    now: datetime,
    known: _Known,
    via: Via,
) -> str:
    """Create, change or leave the event ``desired`` names: ``created``, ``updated`` or
    ``skipped``; what it creates or changes is one change, with its changed occurrences."""
    digest = _key_hash(desired.key)
    mapped = known.mapped.get(digest)
    row = None if mapped is None else known.rows.get(mapped[1])
    if row is None:
        event = create_event(
            conn,
            principal=principal,
            data=EventCreate(calendar_id=calendar.id, **_event_fields(desired)),
            now=now,
            logged=False,
        )
        if mapped is not None:  # the event it was imported as is gone: import it again
            conn.execute(delete(ical_uids_t).where(ical_uids_t.c.id == mapped[0]))
        conn.execute(
            insert(ical_uids_t).values(
                calendar_id=calendar.id, uid_hash=digest, uid=desired.uid, event_id=event["id"]
            )
        )
        _write_occurrences(conn, principal, calendar, tz, event["id"], desired, now)
        made = Edit(conn, [event["id"]], [event["id"]], [])
        _log(conn, made, via, principal, calendar, CREATED_CHANGE, event["id"], None, event, now)
        return "created"
    if _unchanged(conn, row, desired):
        return "skipped"
    edit = Edit.of_row(conn, row)
    before = event_public(row, calendar_name=calendar.name, tz=tz)
    after = update_event(
        conn,
        principal=principal,
        event_id=row.id,
        body=EventUpdate(**_event_fields(desired)),
        now=now,
        logged=False,
    )
    delete_exceptions(conn, row.id)
    _write_occurrences(conn, principal, calendar, tz, row.id, desired, now)
    _log(conn, edit, via, principal, calendar, UPDATED_CHANGE, row.id, before, after, now)
    return "updated"


def _log(
    conn: Connection,
    edit: Edit,
    via: Via,
    principal: Principal,
    calendar: CalendarRow,
    kind: str,
    event_id: str,
    before: dict[str, Any] | None,
    after: dict[str, Any],
    now: datetime,
) -> None:
    rows = edit.rows(conn)
    if rows is not None:
        record(
            conn,
            via=via,
            user_id=principal.user_id,
            kind=kind,
            event_id=event_id,
            calendar_id=calendar.id,
            now=now,
            before=before,
            after=after,
            rows=rows,
        )


def _event_fields(desired: Desired) -> dict[str, Any]:
    """What a create or an update of the event takes from the file."""
    return {
        "title": desired.title,
        "starts_at": desired.starts_at,
        "ends_at": desired.ends_at,
        "all_day": desired.all_day,
        "description": desired.description,
        "location": desired.location,
        "recurrence": desired.recurrence,
        "transparency": desired.transparency,
        "time_zone": desired.time_zone,
        "attendees": None
        if desired.attendees is None
        else [AttendeeInput.model_validate(a) for a in desired.attendees],
    }


def _unchanged(conn: Connection, row: Any, desired: Desired) -> bool:
    if (
        row.title != desired.title
        or row.description != desired.description
        or row.location != desired.location
        or bool(row.all_day) != desired.all_day
        or row.starts_at != desired.start
        or row.ends_at != desired.end
        or row.recurrence != desired.stored_recurrence
        or row.transparency != desired.transparency
        or row.time_zone != desired.time_zone
        or _attendees_of(row) != desired.attendees
        or row.recurring_event_id is not None
    ):
        return False
    stored = [
        (e.original_starts_at, e.starts_at, e.ends_at, e.title, e.description, e.location,
         bool(e.all_day), e.status, e.transparency)
        for e in conn.execute(
            select(*EVENT_COLUMNS)
            .where(events_t.c.recurring_event_id == row.id)
            .order_by(events_t.c.original_starts_at)
        )
    ]  # fmt: skip
    wanted = [
        (
            o.original,
            o.start,
            o.end,
            o.title,
            o.description,
            o.location,
            o.all_day,
            CONFIRMED,
            o.transparency,
        )
        for o in desired.overrides
    ]
    return stored == wanted


def _attendees_of(row: Any) -> list[dict[str, Any]] | None:
    people = decode(row.attendees)
    return None if people is None else list(people["attendees"])


def _write_occurrences(
    conn: Connection,
    principal: Principal,
    calendar: CalendarRow,
    tz: tzinfo,
    series_id: str,
    desired: Desired,
    now: datetime,
) -> None:
    """The series' changed occurrences, as exception rows (as a PATCH of one makes them);
    each queues ``calendar.event.updated`` carrying it."""
    series_attendees = conn.execute(
        select(events_t.c.attendees).where(events_t.c.id == series_id)
    ).scalar()
    for occurrence in desired.overrides:
        values = {
            "id": occurrence_id(series_id, occurrence.original, all_day=desired.all_day, tz=tz),
            "calendar_id": calendar.id,
            "title": occurrence.title,
            "starts_at": occurrence.start,
            "ends_at": occurrence.end,
            "all_day": occurrence.all_day,
            "description": occurrence.description,
            "location": occurrence.location,
            "created_at": now,
            "updated_at": now,
            "recurrence": None,
            "recurrence_last_start": None,
            "recurrence_ends_at": None,
            "recurring_event_id": series_id,
            "original_starts_at": occurrence.original,
            "status": CONFIRMED,
            "transparency": occurrence.transparency,
            "attendees": series_attendees,
        }
        conn.execute(insert(events_t).values(**values))
        after_write(
            conn,
            principal=principal,
            calendar=calendar,
            tz=tz,
            row=Row(values),
            span=(occurrence.start, occurrence.end),
            change=UPDATED,
            now=now,
        )


__all__ = ["Report", "import_events", "lock_calendar"]
