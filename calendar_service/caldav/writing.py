"""``PUT`` and ``DELETE`` of one calendar object, through the core like every other write.

A PUT is an import of that one object into its calendar (``ical.importing.import_events``):
the same reading (``ical.reading``: bounded, a hostile RRULE refused), the same checks and
the same writes (``events``: the change log, with transport ``caldav``; the webhooks; the
change feed). A DELETE is ``events.delete_event`` of the event (a series whole). The key's
approval applies as to any write: ``gateway.perform`` makes a write that waits a proposal.

Preconditions (RFC 4791 §5.3.2.1, RFC 9110 §13.1): ``If-Match`` must name the object's
current ETag and ``If-None-Match: *`` that there is none (412); the text must be iCalendar
(``valid-calendar-data``), hold events (``supported-calendar-component``) of one UID with its
main VEVENT (``valid-calendar-object-resource``), named ``<UID>.ics``; a UID already in the
calendar under another name is ``no-uid-conflict``. Every one is checked before anything is
written, and a refusal writes nothing.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from calendar_service.caldav import objects
from calendar_service.caldav.resources import find_object, locate
from calendar_service.caldav.xml import c
from calendar_service.changes.record import Via
from calendar_service.errors import CalendarError, DavRefused, DavStale
from calendar_service.events.existing import delete_event
from calendar_service.ical.importing import import_events
from calendar_service.ical.reading import ReadFile
from calendar_service.keys import Principal
from calendar_service.models.ical import ical_uids_t

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
    data: ReadFile,
    if_match: str | None,
    if_none_match: str | None,
    now: datetime,
) -> dict[str, Any]:
    """Store the object ``data`` (read already, off the event loop) at ``path``; returns
    ``{created: bool}``."""
    place = locate(conn, principal=principal, path=path)
    if place.kind != "object" or place.calendar is None or place.name is None:
        raise DavRefused(
            "PUT one event to its calendar as <calendar>/<UID>.ics.",
            c("calendar-collection-location-ok"),
        )
    calendar = place.calendar
    uid = objects.uid_of_name(place.name)
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
    if plan.uid != uid:
        if objects.event_id_of(conn, calendar=calendar, uid=plan.uid) is not None:
            raise DavRefused(
                "An object of this calendar has this UID already.",
                c("no-uid-conflict"),
                href=place.path.rsplit("/", 1)[0] + "/" + objects.name_of(plan.uid),
            )
        raise DavRefused(
            "Name the object after its UID: <UID>.ics.", c("valid-calendar-object-resource")
        )
    event_id = objects.event_id_of(conn, calendar=calendar, uid=uid)
    current = None
    if event_id is not None:
        current = objects.load(conn, calendar=calendar, event_ids=[event_id]).get(event_id)
    check_preconditions(current, if_match, if_none_match)
    if current is not None and current.event_id == uid:
        _adopt(conn, calendar_id=calendar.id, uid=uid)
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


def object_exists(conn: Connection, *, principal: Principal, path: str) -> bool:
    """Whether ``path`` names an object this key reaches (a PUT's status: 201 or 204)."""
    try:
        find_object(conn, principal=principal, path=path)
    except CalendarError:
        return False
    return True


def delete_object(
    conn: Connection,
    *,
    principal: Principal,
    via: Via,
    path: str,
    if_match: str | None,
    now: datetime,
) -> dict[str, Any]:
    """Delete the object at ``path`` (the event, or the series whole)."""
    _, obj = find_object(conn, principal=principal, path=path)
    check_preconditions(obj, if_match, None)
    return delete_event(conn, principal=principal, event_id=obj.event_id, now=now, via=via)


__all__ = ["TRANSPORT", "check_preconditions", "delete_object", "object_exists", "put_object"]
