"""The tools' input schemas and result models, built from the public models REST uses.

The write tools take exactly the fields of ``EventCreate`` / ``EventUpdate`` (same limits, same
formats, the same ``Личное`` default), so the two fronts cannot drift. The arguments are checked
by the core (``inputs.parse_partial``), not by the SDK, so that every bad field is reported at
once, in the core's words, and the call is recorded in the key's history like any other.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from pydantic.alias_generators import to_camel

from calendar_service.availability import DAYS
from calendar_service.events import DEFAULT_LIMIT, MAX_LIMIT
from calendar_service.events.existing import SCOPES
from calendar_service.idempotency import ARGUMENT as IDEMPOTENCY_ARGUMENT
from calendar_service.idempotency import MAX_KEY_LENGTH
from calendar_service.models import (
    EventCreate,
    EventList,
    EventPublic,
    EventUpdate,
    FreeBusyQuery,
    FreeTimeQuery,
)
from calendar_service.schema_patterns import TOOL_BOUND_PATTERN

_BOUND_DOC = (
    "RFC 3339 date-time such as 2026-03-02T00:00:00+01:00, or a date (2026-03-02, meaning its "
    "midnight). Without an offset it is read in the time zone of the key's calendar (for an "
    "all-calendars key, the default calendar). Omit for no bound."
)


class _Arguments(BaseModel):
    # Strict, like the REST bodies: "5" is not a number and unknown arguments are refused.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, strict=True, extra="forbid"
    )


class ListArguments(_Arguments):
    time_min: str | None = PydanticField(
        default=None,
        description="Start of the window: events ending after it are returned. " + _BOUND_DOC,
        json_schema_extra={"pattern": TOOL_BOUND_PATTERN},
    )
    time_max: str | None = PydanticField(
        default=None,
        description="End of the window (exclusive): events starting before it are returned. "
        + _BOUND_DOC,
        json_schema_extra={"pattern": TOOL_BOUND_PATTERN},
    )
    limit: int | None = PydanticField(
        default=None,
        description=f"Events per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
        json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    )
    page_token: str | None = PydanticField(
        default=None,
        description="The nextPageToken of the previous result, to get the next page of the "
        "same query (same timeMin, timeMax and singleEvents).",
    )
    single_events: bool | None = PydanticField(
        default=None,
        description="true (default): a recurring series is listed as its occurrences. false: "
        "each series once, with its recurrence (and its changed occurrences).",
        json_schema_extra={"default": True},
    )
    sync_token: str | None = PydanticField(
        default=None,
        description="The nextSyncToken of an earlier list's last page: returns only what "
        "changed since (created, changed, or deleted: status cancelled), without timeMin or "
        "timeMax. Expired (older than 30 days by default): error sync_token_expired, list "
        "again without it.",
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description="Only these calendars: their ids or names (as listed in `calendars`). "
        "Omit for every calendar the key reaches. Send the same calendarIds with pageToken and "
        "syncToken.",
    )


class EventRef(_Arguments):
    event_id: str = PydanticField(
        description="The id field of an event: a single event's, a series' or one occurrence's "
        "(<seriesId>_<start>, as the list returns it)."
    )


class ScopedEventRef(EventRef):
    # Checked by the core (its words: "must be this, following or all"), like REST's ?scope=.
    scope: str | None = PydanticField(
        default=None,
        description="For an occurrence id: this (default) = that occurrence alone; following = "
        "it and every later one; all = the whole series. Ignored for a single event's or a "
        "series' id, which always name the whole of it.",
        json_schema_extra={"enum": list(SCOPES), "default": "this"},
    )


# ---------------------------------------------------------------------------------------------
# Results


class EventsPage(EventList):
    """What ``listCalendarEvents`` returns: ``EventList`` plus the current time."""

    now: str = PydanticField(
        description="The current time, in the time zone the window's bounds are read in (the "
        "key's calendar, or the default one for an all-calendars key), with its offset: the "
        "reference for 'today' and 'tomorrow'.",
        json_schema_extra={"format": "date-time"},
    )


class DeletedEvent(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    deleted: Literal[True] = True
    event: EventPublic = PydanticField(
        description="The event, series or occurrence as it was before deletion; with scope "
        "following, the series as it is now, ending before that occurrence."
    )


# ---------------------------------------------------------------------------------------------
# Input schemas


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema as a tool input schema: no generated titles or REST wording."""
    properties = {
        name: {key: value for key, value in prop.items() if key != "title"}
        for name, prop in schema["properties"].items()
    }
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    out["additionalProperties"] = False
    return out


_UPDATE_DOCS = {
    "title": "New title, 1 to 300 characters after trimming.",
    "startsAt": "New start. RFC 3339 date-time, e.g. 2026-03-02T09:30:00+01:00; without an "
    "offset it is read in the event's calendar's time zone. With allDay, a date.",
    "endsAt": "New end (exclusive), same format as startsAt; must not be before startsAt.",
    "allDay": "true for a whole-day event (startsAt/endsAt are then dates), false for a timed one.",
    "description": "New description; null clears it.",
    "location": "New location; null clears it.",
    "recurrence": "Series only: the new RFC 5545 lines (replacing the old ones); null turns the "
    "series into a single event. Not for one occurrence.",
}

_RECURRENCE_DOC = (
    "Makes a recurring series (see the tool description): one RRULE line, plus any "
    "EXDATE/RDATE lines (EXDATE:20260309T090000Z; for all-day series "
    "EXDATE;VALUE=DATE:20260309). startsAt/endsAt are the first occurrence."
)


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional argument's schema without pydantic's null branch: omitting it is the way to
    leave it unset."""
    branches = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
    return {**branches[0], **prop}


def list_schema() -> dict[str, Any]:
    schema = _clean(ListArguments.model_json_schema(by_alias=True))
    schema["properties"]["singleEvents"] = _plain(schema["properties"]["singleEvents"])
    schema["properties"]["calendarIds"] = _ids(schema["properties"]["calendarIds"])
    return schema


def event_ref_schema() -> dict[str, Any]:
    return _clean(EventRef.model_json_schema(by_alias=True))


def scoped_ref_schema() -> dict[str, Any]:
    schema = _clean(ScopedEventRef.model_json_schema(by_alias=True))
    schema["properties"]["scope"] = _plain(schema["properties"]["scope"])
    return schema


def create_schema() -> dict[str, Any]:
    schema = _clean(EventCreate.model_json_schema(by_alias=True))
    props = schema["properties"]
    props["allDay"]["description"] = (
        "true for a whole-day event: startsAt and endsAt are then dates, endsAt exclusive "
        "(or equal to startsAt for a one-day event)."
    )
    props["description"]["description"] = "Free text shown with the event."
    props["location"]["description"] = "Where the event takes place."
    props["recurrence"]["description"] = _RECURRENCE_DOC
    props[IDEMPOTENCY_ARGUMENT] = {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY_LENGTH,
        "description": "Optional. A unique string for this creation (a UUID, say). Retrying "
        "with the same key and the same arguments within 24 hours returns the event created "
        "the first time instead of creating a second one.",
    }
    return schema


def update_schema() -> dict[str, Any]:
    schema = _clean(EventUpdate.model_json_schema(by_alias=True))
    for name, doc in _UPDATE_DOCS.items():
        schema["properties"][name]["description"] = doc
    ref = scoped_ref_schema()
    schema["properties"] = {**ref["properties"], **schema["properties"]}
    schema["required"] = ["eventId"]
    return schema


def free_busy_schema() -> dict[str, Any]:
    schema = _clean(FreeBusyQuery.model_json_schema(by_alias=True))
    schema["properties"]["calendarIds"] = _ids(schema["properties"]["calendarIds"])
    return schema


def free_time_schema() -> dict[str, Any]:
    full = FreeTimeQuery.model_json_schema(by_alias=True)
    schema = _clean(full)
    props = schema["properties"]
    props["calendarIds"] = _ids(props["calendarIds"])
    props["timeZone"] = _plain(props["timeZone"])
    props["timeZone"].pop("default", None)
    props["limit"] = {**props["limit"]["anyOf"][0], "description": props["limit"]["description"]}
    hours = _clean(full["$defs"]["WorkingHours"])
    hours["properties"]["days"] = _plain(hours["properties"]["days"])
    hours["properties"]["days"].pop("default", None)
    hours["properties"]["days"]["items"] = {"type": "string", "enum": list(DAYS)}
    props["workingHours"] = {**hours, "description": props["workingHours"]["description"]}
    return schema


def _ids(prop: dict[str, Any]) -> dict[str, Any]:
    """calendarIds: a list of ids (omit it for every calendar the key reaches)."""
    plain = _plain(prop)
    plain["items"] = {"type": "string", "minLength": 1}
    plain.pop("default", None)
    return plain
