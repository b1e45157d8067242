"""The tools' input schemas and result models, built from the public models REST uses.

The write tools take exactly the fields of ``EventCreate`` / ``EventUpdate`` (same limits, same
formats, the same ``Личное`` default), so the two fronts cannot drift. The arguments are checked
by the core (``inputs.parse_partial``), not by the SDK, so that every bad field is reported at
once, in the core's words, and the call is recorded in the key's history like any other.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from pydantic.alias_generators import to_camel

from calendar_service.access.idempotency import ARGUMENT as IDEMPOTENCY_ARGUMENT
from calendar_service.access.idempotency import MAX_KEY_LENGTH
from calendar_service.calendar.availability import DAYS
from calendar_service.calendar.events import DEFAULT_LIMIT, MAX_LIMIT
from calendar_service.calendar.events.existing import SCOPES
from calendar_service.calendar.events.search import QUERY_MAX
from calendar_service.platform.models import (
    EventCreate,
    EventUpdate,
    FreeBusyQuery,
    FreeTimeQuery,
)
from calendar_service.platform.models.links import SchedulingLinkCreate
from calendar_service.platform.schema_patterns import TITLE_PATTERN, TOOL_BOUND_PATTERN
from mcp_tools.portable import nullable, portable

_BOUND_DOC = (
    "RFC 3339 date-time (2026-03-02T00:00:00+01:00) or a date (its midnight); without an "
    "offset, in the key's calendar's time zone. Omit for no bound."
)


class _Arguments(BaseModel):
    # Strict, like the REST bodies: "5" is not a number and unknown arguments are refused.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, strict=True, extra="forbid"
    )


class _WindowArguments(_Arguments):
    """What the list and the search share: the window, the calendars, the pages."""

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
        "same query (same arguments).",
    )


class ListArguments(_WindowArguments):
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


class SearchArguments(_WindowArguments):
    time_min: str | None = PydanticField(
        default=None,
        description="Start: events ending after it are found. Omitted: now (give it to search "
        "the past). A date-time or a date; without an offset, in the key's calendar's zone.",
        json_schema_extra={"pattern": TOOL_BOUND_PATTERN},
    )
    time_max: str | None = PydanticField(
        default=None,
        description="End (exclusive): events starting before it. Omitted: no end.",
        json_schema_extra={"pattern": TOOL_BOUND_PATTERN},
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description="Only these calendars: ids or names (as in `calendars`). Omit for all the "
        "key reaches.",
    )
    query: str = PydanticField(
        description="The words to find (every one must match; the last may be the start of a "
        "word): 'dentist', 'call Ana'. Not empty.",
        json_schema_extra={"minLength": 1, "maxLength": QUERY_MAX, "pattern": TITLE_PATTERN},
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
class ChangesArguments(_Arguments):
    since: str | None = PydanticField(
        default=None,
        description="Only changes made at or after this RFC 3339 date-time (or date).",
        json_schema_extra={"pattern": TOOL_BOUND_PATTERN},
    )
    event_id: str | None = PydanticField(
        default=None, description="Only this event's (a series': with its occurrences')."
    )
    calendar_id: str | None = PydanticField(default=None, description="Only this calendar's.")
    limit: int | None = PydanticField(
        default=None,
        description=f"Changes per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
        json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT},
    )
    page_token: str | None = PydanticField(
        default=None, description="nextPageToken of the previous result, same filters."
    )


class NoArguments(_Arguments):
    """A tool that takes none: anything sent is refused, named as sent."""


class UndoArguments(_Arguments):
    change_id: str = PydanticField(description="The change's id (chg_…).")
    force: bool | None = PydanticField(
        default=None,
        description="true: undo even if the event changed since (that later change is lost).",
    )


# ---------------------------------------------------------------------------------------------
# Input schemas


def _clean(schema: dict[str, Any], *, plain: bool = False) -> dict[str, Any]:
    """A model's JSON schema as a tool input schema: no generated titles or REST wording;
    ``plain``: optional arguments without their null branch (``_plain``)."""
    properties = {
        name: {key: value for key, value in prop.items() if key != "title"}
        for name, prop in schema["properties"].items()
    }
    if plain:
        for name, prop in properties.items():
            if "anyOf" in prop:
                properties[name] = _plain(prop)
            properties[name].pop("default", None)
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


def search_schema() -> dict[str, Any]:
    schema = _clean(SearchArguments.model_json_schema(by_alias=True), plain=True)
    schema["properties"]["calendarIds"]["items"] = {"type": "string", "minLength": 1}
    return schema


DRY_RUN = {
    "type": "boolean",
    "description": "true: run every check and answer the change it would make "
    "({dryRun, kind, before, after}); nothing is written.",
}


def with_dry_run(schema: dict[str, Any]) -> dict[str, Any]:
    """A write tool's input schema, with ``dryRun``."""
    schema["properties"]["dryRun"] = DRY_RUN
    return schema


def no_arguments_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def changes_schema() -> dict[str, Any]:
    return _clean(ChangesArguments.model_json_schema(by_alias=True), plain=True)


def link_schema() -> dict[str, Any]:
    full = SchedulingLinkCreate.model_json_schema(by_alias=True)
    schema = _clean(full, plain=True)
    guest = _clean(full["$defs"]["GuestInput"], plain=True)
    schema["properties"]["guest"] = {**guest, "description": "Who it is for."}
    for name in ("timeMin", "timeMax", "expiresAt"):  # described instead: a date or date-time
        schema["properties"][name].pop("pattern", None)
    return schema


def undo_schema() -> dict[str, Any]:
    return with_dry_run(_clean(UndoArguments.model_json_schema(by_alias=True), plain=True))


def event_ref_schema() -> dict[str, Any]:
    return _clean(EventRef.model_json_schema(by_alias=True))


def scoped_ref_schema() -> dict[str, Any]:
    schema = _clean(ScopedEventRef.model_json_schema(by_alias=True))
    schema["properties"]["scope"] = _plain(schema["properties"]["scope"])
    return schema


SEND_UPDATES = "sendUpdates"
_SEND_UPDATES = {
    "type": "string",
    "enum": ["none", "all"],
    "description": "all: email the attendees (ask your user first). Default none.",
}
_ATTENDEES = {
    "type": ["array", "null"],
    "maxItems": 100,
    "items": {
        "type": "object",
        "properties": {
            "email": {"type": "string", "maxLength": 320, "description": "Their address."},
            "name": {"type": "string", "maxLength": 200, "description": "Their name."},
            "optional": {"type": "boolean", "description": "Optional attendee."},
        },
        "required": ["email"],
        "additionalProperties": False,
    },
    "description": "People invited, at most 100.",
}


def _with_people(schema: dict[str, Any], *, attendees: bool = True) -> dict[str, Any]:
    """``attendees`` (inline: tool schemas carry no ``$defs``) and ``sendUpdates``."""
    if attendees:
        schema["properties"]["attendees"] = dict(_ATTENDEES)
    schema["properties"][SEND_UPDATES] = dict(_SEND_UPDATES)
    return schema


def create_schema() -> dict[str, Any]:
    return with_dry_run(_with_people(_create_schema()))


def _create_schema() -> dict[str, Any]:
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
    return with_dry_run(_with_people(schema))


def delete_schema() -> dict[str, Any]:
    return with_dry_run(_with_people(scoped_ref_schema(), attendees=False))


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


def awaiting(proposal: dict[str, Any]) -> dict[str, Any]:
    """A write tool's result when the write waits for the owner's approval."""
    broken = "".join(f" {e['message']}" for e in proposal.get("ruleViolations", ()))
    because = f" It breaks the owner's rules for agents:{broken}" if broken else ""
    return {
        "awaitsApproval": True,
        "message": f"Not done yet: the owner must approve this change (proposal "
        f"{proposal['id']}, until {proposal['expiresAt']}).{because} Tell the person; do not "
        "retry.",
        "proposal": proposal,
    }


# ---------------------------------------------------------------------------------------------
# Output schemas: what a model reads of each answer, in the portable subset (``portable``).
#
# Each lists the fields a model uses to act on the answer, none of them required beyond what
# every answer of the tool carries; the answers carry more (``detail``, docs/mcp.md), which a
# schema without ``additionalProperties: false`` accepts, so a field added to an answer never
# breaks a validating client. A write's answer may also be a dry run's (``dryRun``, ``kind``,
# ``before``, ``after``) or one that waits for the owner (``awaitsApproval``, ``proposal``).

_S: dict[str, Any] = {"type": "string"}
_B: dict[str, Any] = {"type": "boolean"}
_OBJECT: dict[str, Any] = {"type": "object"}
_NS = nullable(_S)
_SLOTS = {
    "type": "array",
    "items": {"type": "object", "properties": {"startsAt": _S, "endsAt": _S}},
}
_EVENT_FIELDS: dict[str, Any] = {
    "id": _S,
    "calendarId": _S,
    "title": _S,
    "startsAt": _S,
    "endsAt": _S,
    "allDay": _B,
    "recurringEventId": _NS,
    "originalStartsAt": _NS,
    "recurrence": nullable({"type": "array", "items": _S}),
}
EVENT_OUTPUT = {"type": "object", "properties": _EVENT_FIELDS, "required": ["id"]}
_WRITE_FIELDS: dict[str, Any] = {
    "changeId": _NS,
    "dryRun": _B,
    "kind": _NS,
    "awaitsApproval": _B,
    "proposal": _OBJECT,
}
PAGE_OUTPUT = {
    "type": "object",
    "properties": {
        "now": _S,
        "calendars": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": _S, "name": _S, "timeZone": _S}},
        },
        "events": {"type": "array", "items": EVENT_OUTPUT},
        "nextPageToken": _NS,
        "nextSyncToken": _NS,
    },
    "required": ["events"],
}
SEARCH_OUTPUT = {  # its events: listCalendarEvents' (each shape is read once per list)
    "type": "object",
    "properties": {"now": _S, "events": {"type": "array", "items": _OBJECT}, "nextPageToken": _NS},
    "required": ["events"],
}
WRITE_OUTPUT = {"type": "object", "properties": {**_EVENT_FIELDS, **_WRITE_FIELDS}}
DELETE_OUTPUT = {
    "type": "object",
    "properties": {"deleted": _B, "event": _OBJECT, **_WRITE_FIELDS},
}
FREE_BUSY_OUTPUT = {
    "type": "object",
    "properties": {
        "calendars": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": _S, "name": _S, "busy": _SLOTS}},
        }
    },
    "required": ["calendars"],
}
FREE_TIME_OUTPUT = {
    "type": "object",
    "properties": {"timeZone": _S, "slots": _SLOTS},
    "required": ["slots"],
}
RULES_OUTPUT = {
    "type": "object",
    "properties": {"rules": _OBJECT, "bindsThisKey": _B},
    "required": ["rules", "bindsThisKey"],
}
_CHANGE_FIELDS: dict[str, Any] = {"id": _S, "at": _S, "kind": _S, "eventId": _S}
CHANGES_OUTPUT = {
    "type": "object",
    "properties": {
        "changes": {"type": "array", "items": {"type": "object", "properties": _CHANGE_FIELDS}},
        "nextPageToken": _NS,
    },
    "required": ["changes"],
}
UNDO_OUTPUT = {"type": "object", "properties": {**_CHANGE_FIELDS, **_WRITE_FIELDS}}


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's output schema derived from its result model, for a tool that gives none of its
    own: the model's fields and their types, portable, without descriptions or ``required``
    (the answer may be a dry run's or wait for the owner)."""
    schema = portable(model.model_json_schema(by_alias=True, mode="serialization"))
    return {"type": "object", "properties": _bare(schema.get("properties", {}))}


def _bare(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        name: {k: v for k, v in prop.items() if k != "description"}
        for name, prop in properties.items()
    }
