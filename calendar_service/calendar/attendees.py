"""The people of an event: its ``attendees`` and ``organizer`` (the owner), as callers send
them, as the ``events.attendees`` column keeps them, and as the API shows them.

The column is JSON, ``NULL`` for an event without attendees (nearly every event: the list and
create read and write nothing more for them): ``{"organizer": {email, name}, "attendees":
[{email, name?, optional?, responseStatus}], "sequence": n}``. ``sequence`` is iCalendar's
``SEQUENCE``: it grows by one with each change of time, place or attendees (``bumped``), which
invitations carry and replies must match. It may also hold ``replies``: ``{email: {sequence,
stamp}}``, the last reply recorded of each attendee (``mail.replies``, never shown).

Emails are checked by the one rule for an address (``emails.check_email``: ``email-validator``,
no look-alike domain) and kept as it normalizes them (the domain lower-case, Unicode); an
attendee's name is one line of at most 200 characters. At most
``MAX_ATTENDEES`` an event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from calendar_service.platform.emails import check_email
from calendar_service.platform.errors import FieldError

MAX_ATTENDEES = 100
NAME_MAX = 200
NEEDS_ACTION = "needsAction"
RESPONSES = (NEEDS_ACTION, "accepted", "declined", "tentative")
# What a change must touch for its attendees to hear of it (and ``sequence`` to grow).
SIGNIFICANT = frozenset(
    {"starts_at", "ends_at", "all_day", "location", "recurrence", "time_zone", "attendees"}
)


def _check_name(value: Any, field: str, errors: list[FieldError]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(FieldError(field, "must be a string"))
        return None
    name = value.strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        errors.append(FieldError(field, "must be one line, without control characters"))
        return None
    if len(name) > NAME_MAX:
        errors.append(FieldError(field, f"must be at most {NAME_MAX} characters"))
        return None
    return name or None


def check_attendees(
    value: Any,
    errors: list[FieldError],
    *,
    previous: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]] | None:
    """The attendees sent (a list of ``{email, name?, optional?, responseStatus?}``), checked,
    as public objects; ``None`` with the reasons in ``errors``. An attendee already on the
    event (``previous``) keeps its response unless one is sent."""
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError("attendees", "must be a list of attendees"))
        return None
    if len(value) > MAX_ATTENDEES:
        errors.append(
            FieldError(
                "attendees",
                f"has {len(value)} attendees: at most {MAX_ATTENDEES} an event (the limit of "
                "attendees an event)",
            )
        )
        return None
    known = {a["email"].lower(): a for a in previous}
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    count = len(errors)
    for i, item in enumerate(value):
        field = f"attendees.{i}"
        if hasattr(item, "model_dump"):
            item = item.model_dump(by_alias=True, exclude_unset=True)
        if not isinstance(item, dict):
            errors.append(FieldError(field, "must be an object with an email"))
            continue
        email = check_email(item.get("email"), f"{field}.email", errors)
        name = _check_name(item.get("name"), f"{field}.name", errors)
        optional = item.get("optional")
        if optional is not None and not isinstance(optional, bool):
            errors.append(FieldError(f"{field}.optional", "must be true or false"))
        response = item.get("responseStatus")
        if response is not None and response not in RESPONSES:
            errors.append(FieldError(f"{field}.responseStatus", "must be " + ", ".join(RESPONSES)))
        if email is None:
            continue
        if email.lower() in seen:
            errors.append(FieldError(f"{field}.email", "names an attendee already in the list"))
            continue
        seen.add(email.lower())
        before = known.get(email.lower())
        attendee: dict[str, Any] = {"email": email}
        if name is not None:
            attendee["name"] = name
        elif before is not None and "name" in before:
            attendee["name"] = before["name"]
        if optional:
            attendee["optional"] = True
        attendee["responseStatus"] = response or (
            before["responseStatus"] if before is not None else NEEDS_ACTION
        )
        found.append(attendee)
    return None if len(errors) > count else found


def organizer_of(email: str) -> dict[str, str]:
    """The organizer object of an event of the owner ``email`` (owners have no other name)."""
    return {"email": email, "name": email}


def encode(
    attendees: Sequence[dict[str, Any]], *, organizer: dict[str, str], sequence: int
) -> str | None:
    """The column's value: ``None`` for no attendees."""
    if not attendees:
        return None
    return orjson.dumps(
        {"organizer": organizer, "attendees": list(attendees), "sequence": sequence}
    ).decode()


def decode(text: str | None) -> dict[str, Any] | None:
    """The column's value as a dict (``None``: no attendees)."""
    return None if text is None else orjson.loads(text)


def add_public(event: dict[str, Any], text: str | None) -> None:
    """Put the column's ``organizer``, ``attendees`` and ``sequence`` on a public event."""
    if text is not None:
        people = orjson.loads(text)
        event["organizer"] = people["organizer"]
        event["attendees"] = people["attendees"]
        event["sequence"] = people["sequence"]


def sequence_of(text: str | None) -> int:
    return 0 if text is None else int(orjson.loads(text)["sequence"])


def bumped(row: Any, values: dict[str, Any]) -> None:
    """A write of ``values`` (columns) to the event ``row``: when it changes its time, place
    or attendees and it has (or keeps) attendees, its ``sequence`` grows by one
    (``values["attendees"]`` set accordingly). Values sent as they were change nothing."""
    if not any(values[k] != getattr(row, k, None) for k in SIGNIFICANT & values.keys()):
        return
    stored = getattr(row, "attendees", None)
    new = values.get("attendees", stored)
    if new is None:
        return
    people = orjson.loads(new)
    floor = sequence_of(stored)
    people["sequence"] = max(int(people["sequence"]), floor) + 1
    values["attendees"] = orjson.dumps(people).decode()
