"""An event's people as iCalendar: its ``ORGANIZER`` and ``ATTENDEE`` properties, written by
the ``icalendar`` package (the feeds, CalDAV's objects, the invitations' messages), and the
same lines as text for ``text``'s single events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icalendar import Event, vCalAddress

from calendar_service.calendar.attendees import decode
from calendar_service.platform.emails import mail_address

_PARTSTATS = {
    "needsAction": "NEEDS-ACTION",
    "accepted": "ACCEPTED",
    "declined": "DECLINED",
    "tentative": "TENTATIVE",
}


def add_people(vevent: Event, stored: str | None) -> None:
    """An event's ``ORGANIZER`` and ``ATTENDEE`` lines (RFC 5545 3.8.4.3, 3.8.4.1) from its
    ``attendees`` column (``calendar.attendees``): ``CN`` the name, ``PARTSTAT`` the response,
    ``ROLE`` ``REQ-PARTICIPANT`` or ``OPT-PARTICIPANT``, ``RSVP=TRUE`` while it waits for
    one. The parameters are quoted by ``icalendar``: a name cannot break the line."""
    people = decode(stored)
    if people is not None:
        add_attendees(vevent, people["organizer"], people["attendees"])


def add_attendees(
    vevent: Event, organizer: dict[str, Any], attendees: Sequence[dict[str, Any]]
) -> None:
    """``add_people`` for the public objects (``organizer``, ``attendees``)."""
    if organizer.get("email"):
        vevent.add(
            "organizer",
            vCalAddress("mailto:" + mail_address(organizer["email"])),
            parameters={"CN": _param(organizer.get("name") or organizer["email"])},
        )
    for attendee in attendees:
        params = {
            "CUTYPE": "INDIVIDUAL",
            "ROLE": "OPT-PARTICIPANT" if attendee.get("optional") else "REQ-PARTICIPANT",
            "PARTSTAT": _PARTSTATS[attendee["responseStatus"]],
        }
        if attendee["responseStatus"] == "needsAction":
            params["RSVP"] = "TRUE"
        if attendee.get("name"):
            params["CN"] = _param(attendee["name"])
        vevent.add(
            "attendee", vCalAddress("mailto:" + mail_address(attendee["email"])), parameters=params
        )


def _param(text: str) -> str:
    """A parameter value: no double quote (made a single one) or control character (a
    space) can be written in one (RFC 5545 3.1: a quoted-string holds neither)."""
    return "".join("'" if c == '"' else " " if ord(c) < 32 or c == "\x7f" else c for c in text)


def people_lines(
    organizer: dict[str, Any] | None, attendees: Sequence[dict[str, Any]]
) -> dict[str, str]:
    """The ``ATTENDEE`` and ``ORGANIZER`` lines (``add_attendees``, by ``icalendar``), by
    property name, each its lines folded and ended."""
    scratch = Event()
    add_attendees(scratch, organizer or {}, attendees)
    found: dict[str, str] = {}
    for name in ("ATTENDEE", "ORGANIZER"):
        if name in scratch:
            lines = Event()
            values = scratch[name]
            for value in values if isinstance(values, list) else [values]:
                lines.add(name, value)
            text = lines.to_ical().decode()
            found[name] = text[len("BEGIN:VEVENT\r\n") : -len("END:VEVENT\r\n")]
    return found


__all__ = ["add_attendees", "add_people", "people_lines"]
