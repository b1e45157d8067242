"""The query parameters of each ``/api/v1`` operation, declared once: the OpenAPI document
lists them (``refs``) and the routes refuse every other (``unknown``), so the two cannot
drift (``tests/rest/test_openapi.py`` sends each operation one it does not take).

An unknown parameter is a 400 ``unknown_parameter`` naming it, as an unknown body field is:
ignored, a typo (``timemin``) or a filter the operation does not have (``calendarId`` on
the list) would widen the answer to every calendar and all time. The OAuth endpoints and the
public feed (``/ical/<token>.ics``) are not operations here: they ignore what they do not know,
as RFC 6749 §3.1 asks and calendar apps expect. A key in the URL (``?api_key=``...) is
refused before, as ``api_key_in_url``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from calendar_service.operations import catalog as operations
from calendar_service.platform.errors import FieldError, UnknownParameter

_PARAMETER = "#/components/parameters/{}"
_NAME_MOST = 100  # characters of an unknown name repeated in the answer

QUERY: dict[str, dict[str, str]] = {
    # operation: {parameter as sent: its component in the OpenAPI document}
    operations.LIST.name: {
        name: name
        for name in (
            "timeMin",
            "timeMax",
            "calendarIds",
            "limit",
            "pageToken",
            "singleEvents",
            "syncToken",
            "q",
        )
    },
    operations.CREATE.name: {"dryRun": "dryRun", "sendUpdates": "sendUpdates"},
    operations.GET.name: {},
    operations.UPDATE.name: {"scope": "scope", "dryRun": "dryRun", "sendUpdates": "sendUpdates"},
    operations.DELETE.name: {"scope": "scope", "dryRun": "dryRun", "sendUpdates": "sendUpdates"},
    operations.IMPORT.name: {
        "calendarId": "importCalendarId",
        "calendar": "importCalendar",
        "dryRun": "dryRun",
    },
    operations.FREE_BUSY.name: {},
    operations.FREE_TIME.name: {},
    operations.SUBSCRIBE.name: {},
    operations.CREATE_LINK.name: {},
    operations.LIST_LINKS.name: {},
    operations.DELETE_LINK.name: {},
    operations.BOOK.name: {},
    operations.LIST_SUBSCRIPTIONS.name: {},
    operations.UNSUBSCRIBE.name: {},
    operations.TEST_SUBSCRIPTION.name: {},
    operations.LIST_CHANGES.name: {
        "since": "since",
        "eventId": "changesEventId",
        "calendarId": "changesCalendarId",
        "limit": "changesLimit",
        "pageToken": "changesPageToken",
    },
    operations.UNDO_CHANGE.name: {"force": "force", "dryRun": "dryRun"},
    operations.GET_PROPOSAL.name: {},
    operations.GET_RULES.name: {},
}


def refs(operation: str) -> list[dict[str, Any]]:
    """The operation's query parameters, as the document's references to its components."""
    return [{"$ref": _PARAMETER.format(component)} for component in QUERY[operation].values()]


def unknown(operation: str, names: Iterable[str]) -> UnknownParameter | None:
    """The refusal of the query parameters ``names`` that ``operation`` does not take, each
    named (and the one it may have meant), or ``None``."""
    known = QUERY[operation]
    errors = []
    for name in dict.fromkeys(names):
        if name in known:
            continue
        shown = name if len(name) <= _NAME_MOST else name[:_NAME_MOST] + "…"
        errors.append(FieldError(shown, _advice(name, list(known))))
    return UnknownParameter(errors) if errors else None


def _advice(name: str, known: list[str]) -> str:
    if not known:
        return "is not a parameter of this operation, which takes none"
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    meant = f" (did you mean {by_lower[close[0]]}?)" if close else ""
    return f"is not a parameter of this operation{meant}; it takes {', '.join(known)}"


__all__ = ["QUERY", "refs", "unknown"]
