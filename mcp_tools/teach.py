"""Refusals that teach: a tool's refusal, worded for the model that made the call.

The core's errors name each bad field as the caller sent it and say what is wrong; a model
needs one more thing, how a retry can succeed. ``taught`` adds it, for the mistakes models
make most (tests/mcp_tools/test_refusals.py sends each tool its common ones):

- an argument the tool does not take (``start`` for ``startsAt``, REST's ``q``): named as sent,
  with the closest argument the tool takes and the list of them;
- a required argument left out: what it takes (``texts.ARGUMENT_DOCS``);
- words where a date goes ("next Monday"): to work the date out from ``now``;
- a name where an id goes (``eventId: "Dentist"``, ``changeId: "the last one"``): that it takes
  an id, and which tool finds it (searchCalendarEvents, listChanges).

The codes stay the core's (``validation_error``, ``not_found``), and so does every field name.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from calendar_service.platform.errors import CalendarError, FieldError, NotFound, ValidationFailed
from mcp_tools.texts import ARGUMENT_DOCS

UNKNOWN = "is not a known field"
REQUIRED = "is required"
DATE_TIME = "must be an RFC 3339 date-time"
RELATIVE = (
    "Work out words such as 'next Monday' or 'tomorrow' yourself, from `now` "
    "(listCalendarEvents returns it), and send the date"
)
_SHOWN = 60  # at most this much of a value sent is quoted back


def taught(
    exc: CalendarError, *, tool: str, arguments: Mapping[str, Any], accepted: Sequence[str]
) -> CalendarError:
    """``exc``, its messages saying how a retry can succeed."""
    if isinstance(exc, ValidationFailed):
        errors = [_field(e, tool=tool, accepted=accepted) for e in exc.errors]
        return ValidationFailed(errors, exc.message)
    if isinstance(exc, NotFound):
        hint = _not_an_id(arguments)
        if hint:
            return NotFound(f"{exc.message} {hint}")
    return exc


def _field(error: FieldError, *, tool: str, accepted: Sequence[str]) -> FieldError:
    name, message = error["field"], error["message"]
    # Unknown: the core's words for it ("is not a field of a scheduling link", the tools'
    # UNKNOWN) say what the name is not; the model needs what the tool takes instead.
    if message == UNKNOWN or (name not in accepted and message.startswith("is not a ")):
        if not accepted:
            return FieldError(name, f"is not an argument of {tool}, which takes none: send {{}}.")
        close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
        guess = f" Did you mean `{close[0]}`?" if close else ""
        return FieldError(
            name, f"is not an argument of {tool}.{guess} It takes: {', '.join(accepted)}."
        )
    if message == REQUIRED and name in ARGUMENT_DOCS:
        return FieldError(name, f"{REQUIRED}: {ARGUMENT_DOCS[name]}")
    if message.startswith(DATE_TIME):
        return FieldError(name, f"{message}. {RELATIVE}")
    return error


def _not_an_id(arguments: Mapping[str, Any]) -> str | None:
    event_id = arguments.get("eventId")
    if isinstance(event_id, str) and not event_id.startswith("ev_"):
        words = event_id[:_SHOWN]
        return (
            "`eventId` takes an event's id (ev_…) as the tools list it, not its title: to find "
            f"the event by its words call searchCalendarEvents with query {words!r}, then "
            "retry with the id found."
        )
    change_id = arguments.get("changeId")
    if isinstance(change_id, str) and not change_id.startswith("chg_"):
        return (
            "`changeId` takes a change's id (chg_…): a write returns it as changeId, and "
            "listChanges lists the changes, newest first."
        )
    return None
