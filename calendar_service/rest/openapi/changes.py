"""The change log's operations (``listChanges``, ``undoChange``), their parameters and schemas;
and what every write shares: ``?dryRun=true``, the dry run's answer (``DryRun``), the
``Calendar-Change-Id`` header. ``adjust`` puts them into the Events operations' answers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from calendar_service.governance.change_shapes import Actor, ChangeList, ChangePublic
from calendar_service.operations import catalog as operations
from calendar_service.platform.schema_patterns import BOUND_PATTERN, TEXT_PATTERN
from calendar_service.rest.openapi.examples import EVENT_EXAMPLE, problem_example
from calendar_service.rest.openapi.parameters import id_parameter, page_size, parameter
from calendar_service.rest.openapi.refs import (
    OK_HEADERS,
    RATE_DOC,
    SCHEMA,
    WRITE_NOTE,
    Tag,
    answer,
    json_content,
    named_by,
    next_page,
    ref_headers,
)
from calendar_service.rest.openapi.responses import errors, problem_response
from calendar_service.rest.routes import CHANGE_ID_HEADER, CHANGES_PATH

TAG = Tag(
    "Changes",
    "What was changed in the calendars a key reaches, by whom and through what, the event "
    "before and after; and undoing a change. Every write answers with its change's id "
    f"({CHANGE_ID_HEADER}) and takes `dryRun=true`.",
)
CHANGE_HEADERS = (*OK_HEADERS, CHANGE_ID_HEADER)
_CHANGE_ID = "chg_066133a21e8c4d5f3b2a1c0d9e8f7a6b"
_BEFORE = {**EVENT_EXAMPLE, "title": "Design review", "location": "Room 4"}
_AFTER = {**EVENT_EXAMPLE, "location": "Room 7", "updatedAt": "2026-02-21T08:12:40.118034Z"}
CHANGE_EXAMPLE = {
    "id": _CHANGE_ID,
    "at": "2026-02-21T08:12:40.118034Z",
    "kind": "updated",
    "eventId": EVENT_EXAMPLE["id"],
    "calendarId": EVENT_EXAMPLE["calendarId"],
    "actor": {"type": "key", "id": "key_5Kp8Qw2Er4Ty6Ui8Op0As2D", "name": "Scheduling agent"},
    "transport": "mcp",
    "requestId": "req_2Zb7Xc9Vn1Mq3Wr5Et7Yu9Io",
    "before": _BEFORE,
    "after": _AFTER,
}
DRY_RUN_EXAMPLE = {
    "dryRun": True,
    "kind": "updated",
    "eventId": EVENT_EXAMPLE["id"],
    "before": _BEFORE,
    "after": _AFTER,
}

_MODELS: tuple[type[BaseModel], ...] = (Actor, ChangePublic, ChangeList)
_DOC_NAMES = {"ChangePublic": "Change"}


def schemas() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in _MODELS:
        schema = model.model_json_schema(
            by_alias=True, ref_template=SCHEMA.replace("{}", "{model}"), mode="serialization"
        )
        schema.pop("$defs", None)
        out[_DOC_NAMES.get(model.__name__, model.__name__)] = _tidy(schema)
    change = out["Change"]
    event_or_null = {"oneOf": [{"$ref": SCHEMA.format("Event")}, {"type": "null"}]}
    for name in ("before", "after"):
        change["properties"][name] = {**event_or_null, **_doc(change["properties"][name])}
    change["properties"]["newSeries"] = {
        "$ref": SCHEMA.format("Event"),
        **_doc(change["properties"]["newSeries"]),
    }
    change["properties"]["occurrences"] = {
        "type": ["integer", "null"],
        "minimum": 0,
        **_doc(change["properties"]["occurrences"]),
    }
    change["examples"] = [CHANGE_EXAMPLE]
    out["ChangeList"]["properties"]["changes"]["items"] = {"$ref": SCHEMA.format("Change")}
    out["ChangeList"]["examples"] = [{"changes": [CHANGE_EXAMPLE]}]
    out["DryRun"] = _dry_run()
    return out


def _doc(prop: dict[str, Any]) -> dict[str, Any]:
    return {"description": prop["description"]} if "description" in prop else {}


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """No generated titles; optional fields left out rather than null (as the API does)."""
    schema.pop("title", None)
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        if name not in required and "anyOf" in prop:
            branches = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
            prop.update(branches[0])
            prop.pop("default", None)
    if "actor" in schema.get("properties", {}):
        schema["properties"]["actor"] = {"$ref": SCHEMA.format("Actor")}
    return schema


def _dry_run() -> dict[str, Any]:
    event_or_null = {"oneOf": [{"$ref": SCHEMA.format("Event")}, {"type": "null"}]}
    return {
        "type": "object",
        "description": "A dry run's answer (`dryRun=true` on a write): every check ran, "
        "nothing was written (no event, change, webhook or idempotency record). `kind` is "
        "the change it would make (null: none, such as a PATCH with no field), `before` and "
        "`after` the event as it is and as it would be.",
        "properties": {
            "dryRun": {"const": True},
            "kind": {"enum": ["created", "updated", "deleted", None]},
            "eventId": {"type": "string"},
            "before": event_or_null,
            "after": event_or_null,
            "occurrences": {
                "type": ["integer", "null"],
                "minimum": 0,
                "description": "A change of a series: how many occurrences it would touch "
                "(null: endless).",
            },
            "newSeries": {
                "$ref": SCHEMA.format("Event"),
                "description": "A change of an occurrence and the following ones: the series "
                "it would start there.",
            },
            "undoes": {"type": "string", "description": "An undo's: the change it would undo."},
        },
        "required": ["dryRun", "kind", "eventId", "before", "after"],
        "examples": [DRY_RUN_EXAMPLE],
    }


def parameters() -> dict[str, Any]:
    return {
        **id_parameter(
            "changeId",
            "The change's id, as returned in `id` (and in Calendar-Change-Id).",
            _CHANGE_ID,
        ),
        "dryRun": parameter(
            "dryRun",
            "query",
            "`true`: run every check of the write (validation, scope, ifFree) "
            "and answer 200 with the change it would make (DryRun), writing nothing: no event, "
            "change, webhook, idempotency record or sync change. Recorded in the call history "
            "as a dry run.",
            {"type": "boolean", "default": False},
        ),
        "sendUpdates": parameter(
            "sendUpdates",
            "query",
            "`all`: the event's attendees get an email (iMIP): an invitation "
            "on a create and on a change of time, place or attendees, a cancellation to those "
            "removed and to all on a delete. Needs a key made with --may-invite and a service "
            "with SMTP set (else 403 may_not_invite, 400 mail_not_configured); at most "
            "CALENDAR_INVITES_PER_DAY recipients a key a day (429 invite_limit). `none` (the "
            "default, as Google Calendar's): nobody is emailed.",
            {"type": "string", "enum": ["none", "all"], "default": "none"},
            example="all",
        ),
        "force": parameter(
            "force",
            "query",
            "`true`: undo even though the event changed since the change (what "
            "the later changes did is lost); without it that is a 409 `conflict` naming them.",
            {"type": "boolean", "default": False},
        ),
        "since": parameter(
            "since",
            "query",
            "Only changes made at or after this date-time (RFC 3339; without an "
            "offset, UTC) or date (its midnight, UTC).",
            {"type": "string", "pattern": BOUND_PATTERN},
            example="2026-03-02T00:00:00Z",
        ),
        "changesEventId": parameter(
            "eventId",
            "query",
            "Only the changes of this event: an event's, a series' (with its "
            "occurrences' and the series a change of following occurrences started) or an "
            "occurrence's id.",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
        "changesCalendarId": parameter(
            "calendarId",
            "query",
            "Only the changes of this calendar (a one-calendar key: its own; "
            "another is a 401 `insufficient_scope`).",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
        "changesLimit": page_size(),
        "changesPageToken": parameter(
            "pageToken",
            "query",
            "The previous page's nextPageToken, with the same filters. Any other value is a 400.",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
    }


def headers() -> dict[str, Any]:
    return {
        CHANGE_ID_HEADER: {
            "description": "The change this write made (`chg_…`): listChanges shows it, "
            "undoChange takes it back. Absent when nothing changed (a PATCH with no field, a "
            "dry run).",
            "schema": {"type": "string", "pattern": "^chg_[0-9a-f]{30}$"},
        }
    }


def paths() -> dict[str, Any]:
    collection = CHANGES_PATH.removeprefix("/api/v1")
    return {
        collection: {"get": _list()},
        collection + "/{changeId}/undo": named_by("changeId", post=_undo()),
    }


def _list() -> dict[str, Any]:
    return TAG.operation(
        operations.LIST_CHANGES,
        "List the changes the key can reach",
        "Every change to the events of the calendars the key reaches, newest "
        "first: what it did (`kind`, the event `before` and `after`, as the API showed it), "
        "who made it (`actor`: a key, a connected app, the owner) and through what "
        "(`transport`, `requestId` as in the key's call history). Paged by `limit`; when more "
        "remain the body carries nextPageToken. Kept as long as the call history "
        "(CALENDAR_CALL_HISTORY_DAYS). Needs a key with `calendar:read`; a `freebusy` key sees "
        "none (401)." + RATE_DOC,
        {
            "200": answer(
                "A page of changes.",
                json_content("ChangeList"),
                NextPage=next_page("listChanges", "The next page, if any (send the same filters)."),
            ),
            **errors(),
        },
    )


def _undo() -> dict[str, Any]:
    return TAG.operation(
        operations.UNDO_CHANGE,
        "Undo a change",
        "Puts the event back as it was before the change: a created event is "
        "deleted; a deleted event or series comes back with its id, its changed and "
        "cancelled occurrences and their ids; a changed one takes its fields back "
        "(`updatedAt` says when). A change of an occurrence and the following ones is undone "
        "whole (the series it started goes). The undo is a change of its own (`undoes`; the "
        "undone change shows `undoneBy`), sent to the owner's webhook and seen by sync like "
        "any other. If the event changed since, it is a 409 `conflict` naming the later "
        "changes (undo those first, newest first), unless `force=true`. A change undone "
        "already is a 409 `already_undone`; a change the key does not reach, a 404."
        + WRITE_NOTE
        + RATE_DOC,
        {
            "200": answer(
                "The undo, a change of its own (or, with dryRun, the change it would make).",
                {
                    "application/json": {
                        "schema": {
                            "oneOf": [
                                {"$ref": SCHEMA.format("Change")},
                                {"$ref": SCHEMA.format("DryRun")},
                            ]
                        }
                    }
                },
                headers=CHANGE_HEADERS,
            ),
            **errors("404"),
            "409": problem_response(
                "The event changed since the change (`conflict`: `changes` names the later "
                "changes of it, newest first), or the change has already been undone "
                "(`already_undone`: `undoneBy` names the undo).",
                problem_example(
                    409,
                    "conflict",
                    "Changed since",
                    f"Change {_CHANGE_ID} cannot be undone: the event was changed since, by "
                    "chg_066133a3f0b1c2d3e4f5a6b7c8d9e0 (updated 2026-02-21T09:00:00Z): undo "
                    "those first, newest first; or undo it anyway with force, which puts back "
                    "the event as it was before the change.",
                    instance=f"{CHANGES_PATH}/{_CHANGE_ID}/undo",
                    changes=[
                        {
                            "id": "chg_066133a3f0b1c2d3e4f5a6b7c8d9e0",
                            "at": "2026-02-21T09:00:00Z",
                            "kind": "updated",
                            "eventId": EVENT_EXAMPLE["id"],
                        }
                    ],
                ),
            ),
        },
    )


def adjust(doc_paths: dict[str, Any], schemas_out: dict[str, Any]) -> None:
    """The writes' answers with the change's id and the dry run's answer; the problem details
    with an undo's refusals."""
    events = doc_paths["/calendar/events"]
    item = doc_paths["/calendar/events/{eventId}"]
    dry = answer(
        "A dry run (`dryRun=true`): the change it would make; nothing written.",
        json_content("DryRun"),
    )
    created = events["post"]["responses"]
    created["201"]["headers"] = ref_headers(*created["201"]["headers"], CHANGE_ID_HEADER)
    created["200"] = dry
    changed = item["patch"]["responses"]["200"]
    changed["headers"] = ref_headers(*changed["headers"], CHANGE_ID_HEADER)
    changed["content"] = {
        "application/json": {
            "schema": {
                "oneOf": [{"$ref": SCHEMA.format("Event")}, {"$ref": SCHEMA.format("DryRun")}]
            }
        }
    }
    changed["description"] += " With dryRun: the change it would make (DryRun)."
    deleted = item["delete"]["responses"]
    deleted["204"]["headers"] = ref_headers(*deleted["204"]["headers"], CHANGE_ID_HEADER)
    deleted["200"] = dry
    for written in (events["post"], item["patch"], item["delete"]):
        written["responses"] = dict(sorted(written["responses"].items()))
    imported = doc_paths["/calendar/events/import"]["post"]["responses"]["200"]
    imported["content"] = {
        "application/json": {
            "schema": {  # anyOf: a dry run's answer is a report too
                "anyOf": [
                    {"$ref": SCHEMA.format("ImportReport")},
                    {"$ref": SCHEMA.format("ImportDryRun")},
                ]
            },
            "example": imported["content"]["application/json"]["example"],
        }
    }
    schemas_out["ImportDryRun"] = {
        "type": "object",
        "description": "An import's dry run: its report, and each change it would make.",
        "allOf": [{"$ref": SCHEMA.format("ImportReport")}],
        "properties": {
            "dryRun": {"const": True},
            "changes": {"type": "array", "items": {"$ref": SCHEMA.format("DryRun")}},
        },
        "required": ["dryRun", "changes"],
    }
    problem = schemas_out["Problem"]["properties"]
    problem["changes"] = {
        "type": "array",
        "description": "An undo refused as `conflict`: the later changes of the event, newest "
        "first (`id`, `at`, `kind`, `eventId`).",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "at": {"type": "string", "format": "date-time"},
                "kind": {"enum": ["created", "updated", "deleted"]},
                "eventId": {"type": "string"},
            },
            "required": ["id", "at", "kind", "eventId"],
        },
    }
    problem["undoneBy"] = {
        "type": "string",
        "description": "An undo refused as `already_undone`: the undo that undid the change.",
    }
