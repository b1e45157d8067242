"""``PUT`` and ``DELETE`` of one calendar object, through the core like every other write.

A PUT is an import of that one object into its calendar (``ical.importing.import_events``):
the same reading (``ical.reading``: bounded, a hostile RRULE refused), the same checks and
the same writes (``events``: the change log, with transport ``caldav``; the webhooks; the
change feed). A DELETE is ``events.delete_event`` of the event (a series whole). The key's
approval applies as to any write: ``gateway.perform`` makes a write that waits a proposal.

Preconditions first (RFC 9110 §13.2.2): ``If-Match`` must name the object's current ETag
(``*``: that there is one; there is none at a name nothing was PUT to) and ``If-None-Match``
none of its ETags (``*``: that there is none), else 412, whatever the body holds. Then the
body (RFC 4791 §5.3.2.1, refusals the front found while reading it come here to wait for
the preconditions): it must be iCalendar (``valid-calendar-data``) holding events
(``supported-calendar-component``) of one UID with its main VEVENT
(``valid-calendar-object-resource``). The client names the object (``objects``: kept when
it is not ``<UID>.ics``); a UID already in the calendar at another name is
``no-uid-conflict`` (with that object's href), and an object's UID does not change
(``valid-calendar-object-resource``). Every one is checked before anything is written, and
a refusal writes nothing.

``MKCALENDAR`` (RFC 4791 §5.3.1) makes a calendar of the owner (``calendars.create_calendar``,
its rules: the name unique among the owner's calendars, at most ``NAME_MAX`` characters) at
the path segment the app chose directly under the calendar home (kept as
``calendars.dav_name``), named by the body's ``DAV:displayname`` (else that segment), in
the zone of its ``CALDAV:calendar-timezone`` (else the default calendar's). A DELETE of a
calendar is the settings pages' deletion (``calendar_changes.delete_calendar_step``: the
first step here, the rest by the front). Both only for an app password that writes to all
its owner's calendars without waiting for approval.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from calendar_service.access.keys import Principal
from calendar_service.calendar import calendars
from calendar_service.calendar.calendar_edits import delete_calendar_step
from calendar_service.calendar.events.existing import delete_event
from calendar_service.governance import proposals
from calendar_service.interop.caldav import objects
from calendar_service.interop.caldav.asked import NewCalendar
from calendar_service.interop.caldav.names import c, d
from calendar_service.interop.caldav.resources import (
    calendar_named,
    locate,
    named_object,
    parse_path,
)
from calendar_service.interop.ical.importing import import_events, lock_calendar
from calendar_service.interop.ical.reading import ReadFile
from calendar_service.journal.change_record import Via
from calendar_service.platform.errors import (
    CalendarError,
    DavConflict,
    DavNotAllowed,
    DavRefused,
    DavStale,
    NotFound,
    ValidationFailed,
)
from calendar_service.platform.models.ical import ical_uids_t
from calendar_service.platform.models.owners import users_t
from calendar_service.platform.timeutil import is_valid_zone

TRANSPORT = "caldav"


def check_preconditions(
    current: objects.DavObject | None, if_match: str | None, if_none_match: str | None
) -> None:
    """412 unless ``If-Match`` names the current ETag (or ``*`` and there is one) and
    ``If-None-Match`` names none of them (``*``: there is none)."""
    etag = None if current is None else current.etag
    if if_match is not None:
        tags = _tags(if_match)
        if etag is None or ("*" not in tags and etag not in tags):
            raise DavStale("The object changed since you read it (If-Match): read it again first.")
    if if_none_match is not None:
        tags = _tags(if_none_match)
        if etag is not None and ("*" in tags or etag in tags):
            raise DavStale("The object exists already (If-None-Match).")


def _tags(header: str) -> set[str]:
    return {t.strip().removeprefix("W/") for t in header.split(",") if t.strip()}


def put_object(
    conn: Connection,
    *,
    principal: Principal,
    via: Via,
    path: str,
    data: ReadFile | None,
    if_match: str | None,
    if_none_match: str | None,
    now: datetime,
    problem: CalendarError | None = None,
) -> dict[str, Any]:
    """Store the object ``data`` (read already, off the event loop) at ``path``; returns
    ``{created: bool}``, the answer of this transaction (``put_status``: 201 or 204).
    ``problem``: why the front could not read the body (raised once the preconditions hold).
    On PostgreSQL the calendar's import lock (``importing.lock_calendar``) is taken before
    the object is read, so that two PUTs to one new name are one creation, then a
    replacement."""
    place = locate(conn, principal=principal, path=path)
    if place.kind != "object" or place.calendar is None or place.name is None:
        raise DavRefused(
            "PUT one event into its calendar as <calendar>/<name>.",
            c("calendar-collection-location-ok"),
        )
    calendar = place.calendar
    lock_calendar(conn, calendar.id)
    current = named_object(conn, calendar, place.name)
    check_preconditions(current, if_match, if_none_match)
    if problem is not None:
        raise problem
    assert data is not None
    if not data.plans:
        raise DavRefused(
            "The object holds no VEVENT: only events are kept here.",
            c("supported-calendar-component"),
        )
    if len(data.plans) > 1:
        raise DavRefused(
            "A calendar object holds one UID: one event, or one series with its changed "
            "occurrences.",
            c("valid-calendar-object-resource"),
        )
    plan = data.plans[0]
    if plan.master is None:
        raise DavRefused(
            "The object holds changed occurrences without their event: PUT the event with them.",
            c("valid-calendar-object-resource"),
        )
    if current is None or current.uid != plan.uid:
        holder = objects.event_id_of(conn, calendar=calendar, uid=plan.uid)
        if holder is not None:
            held = objects.load(conn, calendar=calendar, event_ids=[holder]).get(holder)
            raise DavRefused(
                "An object of this calendar has this UID already: change it there.",
                c("no-uid-conflict"),
                href=place.path.rsplit("/", 1)[0] + "/" + (held.name if held else ""),
            )
    if current is not None and current.uid != plan.uid:
        raise DavRefused(
            f"This object's UID is {current.uid!r}: an object keeps its UID (PUT a new event "
            "under a new name).",
            c("valid-calendar-object-resource"),
        )
    if current is not None and current.event_id == plan.uid:
        _adopt(conn, calendar_id=calendar.id, uid=plan.uid)
    report = import_events(
        conn,
        principal=principal,
        data=data,
        now=now,
        calendar_id=calendar.id,
        via=via,
        transport=TRANSPORT,
    )
    if report["errors"]:
        reasons = "; ".join(str(e["message"]) for e in report["errors"])
        raise DavRefused(f"The event was not stored: {reasons}", c("valid-calendar-data"))
    if not (report["created"] or report["updated"] or report["skipped"]):
        raise DavRefused(
            "The event was not stored: " + "; ".join(str(w["message"]) for w in report["warnings"]),
            c("valid-calendar-data"),
        )
    if current is None:
        objects.keep_name(conn, calendar_id=calendar.id, uid=plan.uid, name=place.name)
    return {"created": current is None}


def _adopt(conn: Connection, *, calendar_id: str, uid: str) -> None:
    """An event made here (its UID is its id) PUT back for the first time: record the UID
    as an import's, so that the import changes it rather than making another."""
    digest = hashlib.sha256(uid.encode()).hexdigest()
    known = conn.execute(
        select(ical_uids_t.c.id).where(
            ical_uids_t.c.calendar_id == calendar_id, ical_uids_t.c.uid_hash == digest
        )
    ).first()
    if known is None:
        conn.execute(
            insert(ical_uids_t).values(
                calendar_id=calendar_id, uid_hash=digest, uid=uid, event_id=uid
            )
        )
    else:  # the record of an event deleted since: this one is what the UID names now
        conn.execute(
            update(ical_uids_t).where(ical_uids_t.c.id == known.id).values(uid=uid, event_id=uid)
        )


def put_status(answer: dict[str, Any]) -> int:
    """A PUT's status from its transaction's answer: 201 created, 204 replaced."""
    return 201 if answer["created"] else 204


def delete_object(
    conn: Connection,
    *,
    principal: Principal,
    via: Via,
    path: str,
    if_match: str | None,
    now: datetime,
    if_none_match: str | None = None,
) -> dict[str, Any]:
    """Delete the object at ``path`` (the event, or the series whole): its preconditions
    first (``If-Match`` on a name where there is none: 412), then 404 if there is none."""
    place = locate(conn, principal=principal, path=path)
    if place.kind != "object" or place.calendar is None or place.name is None:
        raise DavRefused("This is a collection, not a calendar object.")
    obj = named_object(conn, place.calendar, place.name)
    check_preconditions(obj, if_match, if_none_match)
    if obj is None:
        raise NotFound("No such calendar object.")
    return delete_event(conn, principal=principal, event_id=obj.event_id, now=now, via=via)


# ---------------------------------------------------------------------------------------------
# Calendars

_TZID = re.compile(r"^TZID[^:\r\n]*:([^\r\n]+)", re.MULTILINE)
_FIELDS = {"name": "DAV:displayname", "timeZone": "CALDAV:calendar-timezone"}


def _may_manage_calendars(principal: Principal, doing: str) -> None:
    """403 ``DAV:need-privileges`` unless the key writes to all its owner's calendars and its
    writes do not wait for the owner's approval (a calendar is not a change that can wait)."""
    if principal.calendar_id is not None:
        raise DavRefused(
            f"This app password reaches one calendar only: {doing} with one that reaches all "
            "the owner's calendars, or on the settings pages.",
            d("need-privileges"),
        )
    if proposals.may_wait(principal.approval):
        raise DavRefused(
            f"This app password's writes wait for the owner's approval: {doing} on the "
            "settings pages.",
            d("need-privileges"),
        )


def _zone(text: str | None, default: str) -> str:
    """The IANA zone of a ``CALDAV:calendar-timezone``'s text (a VTIMEZONE), or ``default``."""
    if text is None:
        return default
    found = _TZID.search(text.replace("\r\n ", "").replace("\n ", ""))
    zone = found.group(1).strip() if found else ""
    if not is_valid_zone(zone):
        raise DavRefused(
            "CALDAV:calendar-timezone must be a VCALENDAR with one VTIMEZONE whose TZID is an "
            f"IANA time zone such as Europe/Berlin (found {zone or 'no TZID'!r}).",
            c("valid-calendar-data"),
        )
    return zone


def make_calendar(
    conn: Connection,
    *,
    principal: Principal,
    via: Via,
    path: str,
    asked: NewCalendar | None,
    problem: CalendarError | None,
    now: datetime,
) -> dict[str, Any]:
    """``MKCALENDAR`` at ``path`` setting what ``asked`` says (``problem``: what its body
    asks that cannot be done); returns the calendar
    (``calendars.calendar_public``). A ``supported-calendar-component-set`` is taken whatever
    it names: the calendar keeps events (its set says VEVENT; a to-do PUT into it is refused
    as in any calendar here)."""
    del via  # a calendar is not an event's change: nothing is recorded for it
    kind, parts = parse_path(path)
    if kind in ("root", "principals", "principal", "home"):
        raise DavNotAllowed("Something is at this path already.", d("resource-must-be-null"))
    if parts[0] != principal.user_id:
        raise DavRefused(
            "This path belongs to another owner: sign in as that owner.", d("need-privileges")
        )
    if kind != "calendar":
        raise DavConflict(
            "Calendars are made directly in the calendar home: "
            f"/caldav/calendars/{principal.user_id}/<name>/.",
            c("calendar-collection-location-ok"),
        )
    _may_manage_calendars(principal, "make calendars")
    segment = parts[1]
    objects.check_name(segment, "A calendar's name (its path)")
    if conn.dialect.name == "postgresql":  # one owner's MKCALENDARs one at a time: the
        # name and the path are checked and taken together (SQLite has one writer)
        conn.execute(
            select(users_t.c.id).where(users_t.c.id == principal.user_id).with_for_update()
        )
    if calendar_named(conn, user_id=principal.user_id, segment=segment) is not None:
        raise DavNotAllowed(
            "A calendar is at this path already: choose another name.", d("resource-must-be-null")
        )
    if problem is not None:
        raise problem
    assert asked is not None
    default = calendars.resolve_target(
        conn, principal=principal, calendar_id=None, calendar_name=None
    )
    zone = _zone(asked.time_zone_text, default.time_zone)
    name = (asked.display_name or "").strip() or segment
    try:
        return calendars.create_calendar(
            conn, user_id=principal.user_id, name=name, time_zone=zone, now=now, dav_name=segment
        )
    except ValidationFailed as exc:
        reasons = "; ".join(
            f"{_FIELDS.get(e['field'], e['field'])} {e['message']}" for e in exc.errors
        )
        raise DavRefused(f"The calendar was not made: {reasons}.") from None


def delete_calendar(
    conn: Connection, *, principal: Principal, via: Via, path: str, now: datetime
) -> dict[str, Any]:
    """DELETE of the calendar at ``path``: its first step (``delete_calendar_step``: the
    default calendar is kept, 409); ``{calendarId, done}``, the front takes the other steps."""
    del via  # each deleted event's webhook and sync change are the deletion's own
    place = locate(conn, principal=principal, path=path)
    if place.kind != "calendar" or place.calendar is None:
        raise DavRefused("Only a calendar or a calendar object is deleted here.")
    _may_manage_calendars(principal, "delete calendars")
    step = delete_calendar_step(
        conn, user_id=principal.user_id, calendar_id=place.calendar.id, now=now
    )
    return {"calendarId": place.calendar.id, "done": step["done"]}


__all__ = [
    "TRANSPORT",
    "check_preconditions",
    "delete_calendar",
    "delete_object",
    "make_calendar",
    "put_object",
    "put_status",
]
