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

from calendar_service.access.idempotency import ARGUMENT as IDEMPOTENCY_ARGUMENT
from calendar_service.access.idempotency import MAX_KEY_LENGTH
from calendar_service.calendar.availability import DAYS
from calendar_service.calendar.events import DEFAULT_LIMIT, MAX_LIMIT
from calendar_service.calendar.events.existing import SCOPES
from calendar_service.calendar.events.search import QUERY_MAX
from calendar_service.governance.change_shapes import ChangePublic
from calendar_service.platform.models import (
    EventCreate,
    EventList,
    EventPublic,
    EventUpdate,
    FreeBusyQuery,
    FreeTimeQuery,
)
from calendar_service.platform.models.links import SchedulingLinkCreate
from calendar_service.platform.schema_patterns import TITLE_PATTERN, TOOL_BOUND_PATTERN

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
# Results


class EventsPage(EventList):
    """What ``listCalendarEvents`` returns: ``EventList`` plus the current time."""

    now: str = PydanticField(
        description="The current time, in the time zone the window's bounds are read in (the "
        "key's calendar, or the default one for an all-calendars key), with its offset: the "
        "reference for 'today' and 'tomorrow'.",
        json_schema_extra={"format": "date-time"},
    )


CHANGE_ID_DOC = "The change made (listChanges, undoChange take it); null: nothing changed."


class EventChanged(EventPublic):
    """A write tool's event, and the change it made."""

    change_id: str | None = PydanticField(default=None, description=CHANGE_ID_DOC)


class DeletedEvent(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    deleted: Literal[True] = True
    event: EventPublic = PydanticField(
        description="The event, series or occurrence as it was before deletion; with scope "
        "following, the series as it is now, ending before that occurrence."
    )
    change_id: str | None = PydanticField(default=None, description=CHANGE_ID_DOC)


class DryRun(BaseModel):
    """What a write tool called with ``dryRun: true`` answers: the change it would make."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    dry_run: Literal[True]
    kind: Literal["created", "updated", "deleted"] | None = PydanticField(
        description="null: it would change nothing."
    )
    event_id: str
    before: dict[str, Any] | None = PydanticField(description="The event now (null: none).")
    after: dict[str, Any] | None = PydanticField(description="The event after (null: gone).")
    occurrences: int | None = PydanticField(
        default=None, description="A series edit: how many occurrences (null: endless)."
    )
    new_series: dict[str, Any] | None = None
    undoes: str | None = None


class ChangeUndone(ChangePublic):
    """What ``undoChange`` answers: the undo, a change of its own."""

    change_id: str | None = PydanticField(default=None, description=CHANGE_ID_DOC)


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


_DRY_RUN_RESULT = {
    "type": "object",
    "properties": {"dryRun": {"const": True}},
    "required": ["dryRun"],
}


_AWAITING_RESULT = {
    "type": "object",
    "properties": {"awaitsApproval": {"const": True}},
    "required": ["awaitsApproval"],
}


def awaiting(proposal: dict[str, Any]) -> dict[str, Any]:
    """A write tool's result when the write waits for the owner's approval."""
    return {
        "awaitsApproval": True,
        "message": f"Not done yet: the owner must approve this change (proposal "
        f"{proposal['id']}, until {proposal['expiresAt']}). Tell the person; do not retry.",
        "proposal": proposal,
    }


def output_schema(model: type[BaseModel], *, writes: bool) -> dict[str, Any]:
    """A tool's output schema: its result model's, compact (``compact_output``); a write's,
    that, a dry run's answer (``DryRun``, told by ``dryRun``) or a write that waits for the
    owner (``awaiting``, told by ``awaitsApproval``): the tool's text says what it holds."""
    schema = compact_output(model.model_json_schema(by_alias=True, mode="serialization"))
    if not writes:
        return schema
    defs = schema.pop("$defs", None)
    union: dict[str, Any] = {
        "type": "object",
        "anyOf": [schema, _DRY_RUN_RESULT, _AWAITING_RESULT],
    }
    if defs:
        union["$defs"] = defs
    return union


def outline_output(model: type[BaseModel], *, writes: bool = False) -> dict[str, Any]:
    """A tool's output schema as an outline: ``output_schema``'s top-level fields, each array's
    items and each nested object as plain objects, and no ``$defs``. For a tool whose items or
    object another tool's schema shows (``searchCalendarEvents``' events as
    ``listCalendarEvents``'; ``listChanges``' changes as ``undoChange``'s result;
    ``deleteCalendarEvent``'s event as ``getCalendarEvent``'s): ``tools/list`` carries each
    shape once."""
    schema = output_schema(model, writes=writes)
    schema.pop("$defs", None)
    main = schema["anyOf"][0] if writes else schema
    for name, prop in main["properties"].items():
        if "items" in prop:
            prop["items"] = {"type": "object"}
        if "$ref" in prop:
            main["properties"][name] = {"type": "object"}
    return schema


def compact_output(schema: dict[str, Any]) -> dict[str, Any]:
    """A result model's JSON schema as a tool's output schema: the shape alone. Every connected
    model reads the list of tools in every conversation, so what the fields mean is said once,
    in the tool's description and its input schema: no descriptions, no generated titles, an
    optional field's null branch as a second type (``["string", "null"]``), no ``null``
    defaults."""
    out = _compacted(schema)
    out.setdefault("type", "object")
    return out


def _compacted(node: Any) -> Any:
    if isinstance(node, list):
        return [_compacted(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: _compacted(value)
        for key, value in node.items()
        if not (key in ("title", "description") and isinstance(value, str))
        and not (key == "default" and value is None)
        and not (key == "additionalProperties" and value is True)  # JSON Schema's default
    }
    branches = out.get("anyOf")
    if (
        isinstance(branches, list)
        and len(branches) == 2
        and {"type": "null"} in branches
        and all(isinstance(b, dict) for b in branches)
    ):
        other = next(b for b in branches if b != {"type": "null"})
        if set(other) <= {"type", "format", "items"} and isinstance(other.get("type"), str):
            del out["anyOf"]
            out.update(other)
            out["type"] = [other["type"], "null"]
    return out
