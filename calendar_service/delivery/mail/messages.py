"""An invitation as an email: iMIP (RFC 6047), as Gmail and Outlook send them.

``build`` makes one message from an outbox row's payload (``invitations``), with the standard
library's ``email.message.EmailMessage``::

    multipart/mixed
    ├── multipart/alternative
    │   ├── text/plain                         what, when, where, who; the reply links
    │   ├── text/html                          the same, every text escaped
    │   └── text/calendar; method=REQUEST      (or CANCEL) the iCalendar object
    └── application/ics  invite.ics            the same object, as an attachment

The iCalendar object (``calendar_text``) is one ``VEVENT``: ``UID`` the event's id (a
series' for its occurrences), ``SEQUENCE`` the event's, ``ORGANIZER`` and ``ATTENDEE`` lines
(``ical.people.add_attendees``); a series with its ``RRULE``/``EXDATE``/``RDATE`` lines and
its ``DTSTART`` in the zone it repeats in (with its ``VTIMEZONE``); an occurrence with its
``RECURRENCE-ID``; a ``CANCEL`` with ``STATUS:CANCELLED``.

Header values never carry raw user text: the subject and display names are made one line
(``invitations.one_line``) and encoded by the ``email`` package (RFC 2047), which refuses a
line break in a header anyway; the HTML escapes every text.
"""

from __future__ import annotations

import html
import re
from datetime import date, datetime, timedelta
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP, SMTPUTF8
from email.utils import format_datetime
from typing import Any
from zoneinfo import ZoneInfo

from icalendar import Calendar, Event, Timezone, vRecur, vText

from calendar_service.interop.ical.people import add_attendees
from calendar_service.journal.invitations import one_line, subject_of
from calendar_service.journal.mail_queue import CANCEL
from calendar_service.platform.emails import mail_address

PRODID = "-//calendar-service//iMIP//EN"
_RESPONSE_WORDS = {"accepted": "Yes", "tentative": "Maybe", "declined": "No"}


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def calendar_text(payload: dict[str, Any], *, now: datetime) -> bytes:
    """The iCalendar object of an invitation's payload (see the module's docstring)."""
    event: dict[str, Any] = payload["event"]
    method: str = payload["method"]
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", method)
    vevent = Event()
    series_id = event.get("recurringEventId")
    vevent.add("uid", series_id or event["id"])
    vevent.add("dtstamp", now)
    vevent.add("sequence", int(payload["sequence"]))
    vevent.add("summary", vText(str(event.get("title") or "")))
    all_day = bool(event.get("allDay"))
    start, end = _instant(event["startsAt"]), _instant(event["endsAt"])
    recurrence = event.get("recurrence")
    zone_name = event.get("timeZone")
    if all_day:
        vevent.add("dtstart", start.date())
        vevent.add("dtend", max(end.date(), start.date() + timedelta(days=1)))
    elif recurrence and zone_name and zone_name != "UTC":
        tz = ZoneInfo(zone_name)
        vevent.add("dtstart", start.astimezone(tz))
        vevent.add("dtend", end.astimezone(tz))
        cal.add_component(
            Timezone.from_tzid(
                zone_name,
                first_date=date(max(start.year - 1, 1970), 1, 1),
                last_date=date(min(start.year + 10, 2099), 1, 1),
            )
        )
    else:
        vevent.add("dtstart", start.astimezone(ZoneInfo("UTC")))
        vevent.add("dtend", end.astimezone(ZoneInfo("UTC")))
    for line in recurrence or ():
        name, _, value = line.partition(":")
        if name == "RRULE":
            vevent.add("rrule", vRecur.from_ical(value))
        else:  # EXDATE/RDATE lines, as stored (UTC, or dates for all-day)
            vevent.add(name.split(";", 1)[0].lower(), _dates(name, value))
    if series_id is not None and event.get("originalStartsAt"):
        original = _instant(event["originalStartsAt"])
        if all_day:
            vevent.add("recurrence-id", original.date())
        else:
            vevent.add("recurrence-id", original.astimezone(ZoneInfo("UTC")))
    if event.get("description"):
        vevent.add("description", vText(str(event["description"])))
    if event.get("location"):
        vevent.add("location", vText(str(event["location"])))
    vevent.add("status", "CANCELLED" if method == CANCEL else "CONFIRMED")
    vevent.add("transp", "TRANSPARENT" if event.get("transparency") == "transparent" else "OPAQUE")
    attendees = event.get("attendees") or []
    if method == CANCEL:  # to the removed (or all, on a deletion): they are the ones named
        attendees = [payload["recipient"]]
    add_attendees(vevent, event.get("organizer") or {}, attendees)
    cal.add_component(vevent)
    body: bytes = cal.to_ical()
    return body


def _dates(name: str, value: str) -> list[date | datetime]:
    found: list[date | datetime] = []
    for part in value.split(","):
        if "VALUE=DATE" in name and "T" not in part:
            found.append(datetime.strptime(part, "%Y%m%d").date())
        else:
            found.append(datetime.strptime(part, "%Y%m%dT%H%M%SZ").replace(tzinfo=ZoneInfo("UTC")))
    return found


def _when(event: dict[str, Any]) -> str:
    start, end = str(event.get("startsAt", "")), str(event.get("endsAt", ""))
    if event.get("allDay"):
        return f"{start[:10]} (all day)"
    found = re.search(r"[+-]\d\d:\d\d$", start)
    zone = "UTC" if found is None or found.group() == "+00:00" else f"UTC{found.group()}"
    return f"{start[:16].replace('T', ' ')} to {end[:16].replace('T', ' ')} ({zone})"


def _texts(payload: dict[str, Any], organizer: str) -> tuple[str, str]:
    """The plain and the HTML text (every value escaped in the HTML)."""
    event, method = payload["event"], payload["method"]
    title = str(event.get("title") or "")
    lines = [
        ("Cancelled: " if method == CANCEL else "Invitation: ") + title,
        "",
        f"When: {_when(event)}",
    ]
    if event.get("recurrence"):
        lines.append("Repeats: " + "; ".join(event["recurrence"]))
    if event.get("location"):
        lines.append(f"Where: {event['location']}")
    lines.append(f"Organizer: {organizer}")
    who = ", ".join(str(a.get("name") or a["email"]) for a in event.get("attendees") or [])
    if who:
        lines.append(f"Who: {who}")
    if event.get("description"):
        lines += ["", str(event["description"])]
    links: dict[str, str] = payload.get("links") or {}
    manage = payload.get("manage")  # a scheduling link's booking: the guest's own page
    plain = list(lines)
    if links:
        plain += ["", "Going?"] + [f"  {_RESPONSE_WORDS[r]}: {u}" for r, u in links.items()]
    if manage:
        plain += ["", f"Reschedule or cancel: {manage}"]
    esc = html.escape
    body = "".join(f"<p>{esc(line)}</p>" if line else "" for line in lines)
    if manage:
        body += f'<p><a href="{esc(str(manage), quote=True)}">Reschedule or cancel</a></p>'
    if links:
        body += (
            "<p>Going? "
            + " | ".join(
                f'<a href="{esc(u, quote=True)}">{_RESPONSE_WORDS[r]}</a>' for r, u in links.items()
            )
            + "</p>"
        )
    page = f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>'
    return "\n".join(plain) + "\n", page


def build(
    payload: dict[str, Any],
    *,
    message_id: str,
    mail_from: str,
    service_name: str,
    now: datetime,
) -> EmailMessage:
    """The message of one outbox row (``message_id``: its id, the ``Message-ID``'s left
    part, the same at every attempt)."""
    event = payload["event"]
    organizer = event.get("organizer") or {}
    recipient = payload["recipient"]
    to_address = mail_address(recipient["email"])
    policy = SMTP if to_address.isascii() else SMTPUTF8
    msg = EmailMessage(policy=policy)
    from_local, _, from_domain = mail_from.rpartition("@")
    organizer_name = one_line(str(organizer.get("name") or organizer.get("email") or ""), 100)
    msg["From"] = Address(
        one_line(f"{organizer_name} via {service_name}", 150), from_local, from_domain
    )
    if organizer.get("email"):
        local, _, domain = mail_address(organizer["email"]).rpartition("@")
        msg["Reply-To"] = Address(organizer_name, local, domain)
    local, _, domain = to_address.rpartition("@")
    msg["To"] = Address(one_line(str(recipient.get("name") or ""), 100), local, domain)
    msg["Subject"] = one_line(subject_of(payload["method"], event))
    msg["Date"] = format_datetime(now)
    msg["Message-ID"] = f"<{message_id}@{from_domain or 'localhost'}>"
    plain, page = _texts(payload, organizer_name)
    msg.set_content(plain, cte="quoted-printable")
    msg.add_alternative(page, subtype="html", cte="quoted-printable")
    ics = calendar_text(payload, now=now)
    method = payload["method"]
    msg.add_alternative(
        ics.decode("utf-8"), subtype="calendar", cte="base64", params={"method": method}
    )
    msg.make_mixed()
    msg.add_attachment(
        ics, maintype="application", subtype="ics", filename="invite.ics", cte="base64"
    )
    return msg
