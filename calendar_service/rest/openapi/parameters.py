"""The parameters the operations share (``components.parameters``), each made by ``parameter``
(one builder for every part of the document): the event's id in the path,
the list's window and pages, the scope of a change, the Idempotency-Key header.

Which operation takes which query parameter is said once, in ``rest/parameters.py``: the routes
refuse every other, and the operations list them from there."""

from __future__ import annotations

from typing import Any

from calendar_service.access.idempotency import MAX_KEY_LENGTH
from calendar_service.calendar.calendars import MAX_CHOSEN
from calendar_service.calendar.events import DEFAULT_LIMIT, MAX_LIMIT
from calendar_service.calendar.events.search import QUERY_MAX
from calendar_service.platform.models.calendars import DEFAULT_CALENDAR_NAME
from calendar_service.platform.schema_patterns import (
    BOUND_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    RANGE_DOC,
    TEXT_PATTERN,
    TITLE_PATTERN,
)
from calendar_service.rest.openapi.examples import EVENT_EXAMPLE

_BOUND_DOC = (
    " A date-time (offset optional: without one it is read in the time zone of the key's "
    "calendar, or of the default calendar for an all-calendars key) or a date (that day's "
    f"midnight). {RANGE_DOC} Omitted or empty: unbounded."
)


def parameter(
    name: str, where: str, description: str, schema: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """A parameter object: ``where`` is ``path`` (then required), ``query`` or ``header``;
    ``extra``: ``required`` where it is said of a query or header parameter, its ``example``."""
    head: dict[str, Any] = {"name": name, "in": where}
    if where == "path":
        head["required"] = True
    elif "required" in extra:
        head["required"] = extra.pop("required")
    return {**head, "description": description, "schema": schema, **extra}


def path_text(name: str, description: str, most: int) -> dict[str, Any]:
    """A path parameter of at most ``most`` characters (a link's id or token, a
    subscription's id)."""
    return parameter(name, "path", description, {"type": "string", "maxLength": most})


def id_parameter(name: str, description: str, example: Any) -> dict[str, Any]:
    """The id of what the path names (an event, a change, a proposal): the component, under
    the parameter's name."""
    schema = {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN}
    return {name: parameter(name, "path", description, schema, example=example)}


def parameters() -> dict[str, Any]:
    return {
        **id_parameter("eventId", "The event's id, as returned in `id`.", EVENT_EXAMPLE["id"]),
        **_window(),
        **_pages(),
        **_changes(),
        "q": _search(),
    }


def _search() -> dict[str, Any]:
    """The list's search."""
    return parameter(
        "q",
        "query",
        "Search: only the events whose title, description, location or "
        "attendees' names and emails hold every word of q, case and accents aside, the last "
        "word as the start of a word (`denti` finds Dentist), in any script. A series matches "
        "by its own text, and its occurrences in the window are listed; a changed "
        "occurrence matches by its own. Words are runs of letters and digits: quotes, `*`, "
        "`-`, `:`, parentheses and the like only separate them (never search syntax); a q "
        "without a word matches nothing. "
        "Without timeMin a search starts now; ordered by startsAt like the list. Send the "
        "same q with pageToken; not with syncToken, and its last page has no nextSyncToken. "
        "ß and ẞ are ss and a ligature its letters (`strasse` finds Straße, `fish` ﬁsh). "
        f"At most {QUERY_MAX} characters (longer, a NUL, or empty or blank: 400 on q).",
        {
            "type": "string",
            "minLength": 1,
            "maxLength": QUERY_MAX,
            "pattern": TITLE_PATTERN,
        },
        example="dentist",
    )


def _window() -> dict[str, Any]:
    """The list's window: from when, until when, in which calendars."""
    return {
        "timeMin": parameter(
            "timeMin",
            "query",
            "Inclusive start of the window: events ending after it (and "
            "zero-length events at it) are returned." + _BOUND_DOC,
            {"type": "string", "pattern": BOUND_PATTERN},
            example="2026-03-01T00:00:00+01:00",
        ),
        "timeMax": parameter(
            "timeMax",
            "query",
            "Exclusive end of the window: events starting before it are "
            "returned. Not before timeMin." + _BOUND_DOC,
            {"type": "string", "pattern": BOUND_PATTERN},
            example="2026-04-01",
        ),
        "calendarIds": {
            "name": "calendarIds",
            "in": "query",
            "description": "Only these calendars: ids, or names as createCalendarEvent takes "
            "them; repeat the parameter (`calendarIds=Work&calendarIds=cal_…`) or separate "
            "them with commas (a name with a comma in it: send it alone). `calendars` in the "
            "answer lists only those. A calendar the key cannot reach is a 401 "
            "`insufficient_scope`; one the owner does not have, or an empty value, a 400 "
            f"naming it. At most {MAX_CHOSEN}. Page and sync tokens are bound to the calendars "
            "named: send the same ones with pageToken and syncToken. Omitted: every calendar "
            "the key reaches.",
            "style": "form",
            "explode": True,
            "schema": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN},
            },
            "example": [DEFAULT_CALENDAR_NAME],
        },
    }


def page_size(**extra: Any) -> dict[str, Any]:
    """``limit``, as every list takes it (``extra``: its example)."""
    schema = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
    return parameter(
        "limit", "query", f"Page size, 1 to {MAX_LIMIT}; empty means the default.", schema, **extra
    )


def _pages() -> dict[str, Any]:
    """The list's pages, and the sync that follows its last."""
    return {
        "limit": page_size(example=100),
        "pageToken": parameter(
            "pageToken",
            "query",
            "The previous page's nextPageToken, with the same timeMin, "
            "timeMax, singleEvents and calendarIds (the same instants and calendars; limit may "
            "change). Any other value is a 400.",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
        "syncToken": parameter(
            "syncToken",
            "query",
            "The nextSyncToken of an earlier list's (or sync's) last page: the "
            "answer is then every event created, changed or deleted since, in the calendars "
            "the key reaches (series and their changed occurrences as stored, not expanded; "
            "deleted events and cancelled occurrences with status cancelled), paged like a "
            "list, its last page with a new nextSyncToken. Not with timeMin or timeMax (400). "
            "A token older than CALENDAR_SYNC_RETENTION_DAYS (default 30) is a 410 "
            "`sync_token_expired`: list again without it. Any other value is a 400.",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
        "singleEvents": parameter(
            "singleEvents",
            "query",
            "true (the default): series are listed as their occurrences, each an "
            "event with recurringEventId and originalStartsAt. false: series are listed as "
            "themselves, with recurrence, ordered by their first occurrence (their changed "
            "occurrences are listed too). Send the same value with a pageToken. A boolean, "
            "sent as `true` or `false` (empty: the default).",
            {"type": "boolean", "default": True},
        ),
    }


def _changes() -> dict[str, Any]:
    """What a change of an occurrence reaches; what makes a create safe to retry."""
    return {
        "scope": parameter(
            "scope",
            "query",
            "For an occurrence id (<seriesId>_<YYYYMMDDTHHMMSSZ>): `this` (the "
            "default) changes or cancels that occurrence alone; `following` ends the series "
            "before it (and, for a change, starts a new series with the change there, which "
            "the answer carries); `all` the whole series. A single event's or a series' id "
            "always names the whole of it. Empty: as if not sent.",
            {"type": "string", "enum": ["this", "following", "all", ""]},
        ),
        "Idempotency-Key": parameter(
            "Idempotency-Key",
            "header",
            "Makes the POST safe to retry (IETF httpapi draft): within 24 hours, "
            "the same key with the same body returns the first response again; with another "
            f"body it is a 422. 1 to {MAX_KEY_LENGTH} printable characters.",
            {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_KEY_LENGTH,
                "pattern": IDEMPOTENCY_KEY_PATTERN,
            },
            example="4f8a2c1e-7b3d-4e5f-9a6b-0c1d2e3f4a5b",
        ),
    }
