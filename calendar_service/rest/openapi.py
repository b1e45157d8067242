"""The OpenAPI 3.1.0 document, generated from the same pydantic models the handlers use.

The models give the shapes (fields, types, required, unknown fields refused). What the core
checks beyond types is added here, so that the document describes what the API really accepts:
the date-time syntax ``timeutil`` parses (offsets optional, dates for all-day events, the
accepted range), titles that are not blank, text without NUL, which fields ``PATCH`` lets be
``null``. What no schema can say (``endsAt`` not before ``startsAt``, a calendar that exists, a
page token from the same query) is in the descriptions. ``tests/rest/test_openapi.py`` checks
the document against the API; ``tests/rest/test_schemathesis.py`` fuzzes the API with it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.asgi.context import MAX_BODY, services
from calendar_service.asgi.responses import PROBLEM_TYPE, JSONResponse
from calendar_service.events import DEFAULT_LIMIT, MAX_LIMIT
from calendar_service.idempotency import MAX_KEY_LENGTH
from calendar_service.models import (
    DEFAULT_CALENDAR_NAME,
    TITLE_MAX,
    CalendarPublic,
    CancelledEvent,
    EventCreate,
    EventList,
    EventPublic,
    EventUpdate,
    Problem,
)
from calendar_service.rest import openapi_availability, openapi_ical
from calendar_service.rest.routes import EVENTS_PATH
from calendar_service.schema_patterns import (
    ALL_DAY_PATTERN,
    BOUND_PATTERN,
    DATE_OR_DATE_TIME_PATTERN,
    DATE_TIME_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    RANGE_DOC,
    TEXT_PATTERN,
    TITLE_PATTERN,
)

API_VERSION = "1.0.0"
TAG = "Events"
_SCHEMA = "#/components/schemas/{}"
_RESPONSE = "#/components/responses/{}"
_HEADER = "#/components/headers/{}"
_PARAMETER = "#/components/parameters/{}"

_TIMES_DOC = (
    "RFC 3339 date-time, e.g. `2026-03-02T09:30:00+01:00`. The offset is optional: without one "
    "the time is wall-clock time in the target calendar's time zone. Seconds and fractions are "
    f"optional. With `allDay: true`, a date (`2026-03-02`) or a midnight date-time. {RANGE_DOC}"
)


def _date_time_input(description: str, pattern: str = DATE_OR_DATE_TIME_PATTERN) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, "description": description}


def _times(pattern: str) -> dict[str, Any]:
    return {"properties": {"startsAt": {"pattern": pattern}, "endsAt": {"pattern": pattern}}}


def _all_day_rule(all_day: bool) -> dict[str, Any]:
    """With ``allDay`` in the body: dates or midnights for true, date-times for false."""
    return {
        "if": {"properties": {"allDay": {"const": all_day}}, "required": ["allDay"]},
        "then": _times(ALL_DAY_PATTERN if all_day else DATE_TIME_PATTERN),
    }


def _text(prop: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """A text property (or ``string | null`` one) that refuses NUL characters."""
    out = {**prop, "anyOf": [{"type": "string", "pattern": TEXT_PATTERN}, {"type": "null"}]}
    if description is not None:
        out["description"] = description
    out["description"] += " No NUL characters."
    return out


def _title(description: str) -> dict[str, Any]:
    """An event's title as a body sends it: not blank, at most ``TITLE_MAX`` characters."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": TITLE_MAX,
        "pattern": TITLE_PATTERN,
        "description": description,
    }


def _model_schema(model: type[BaseModel], mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = model.model_json_schema(
        by_alias=True,
        ref_template=_SCHEMA.replace("{}", "{model}"),
        mode=mode,  # type: ignore[arg-type]
    )
    return schema, schema.pop("$defs", {})


def _event_create(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema["properties"]
    props["title"] = _title(
        f"1 to {TITLE_MAX} characters; surrounding white space is trimmed, and a blank title is "
        "refused. No NUL characters."
    )
    props["startsAt"] = _date_time_input(f"Start. {_TIMES_DOC}")
    props["endsAt"] = _date_time_input(
        f"Exclusive end, not before startsAt. {_TIMES_DOC} For an all-day event, an endsAt "
        "equal to startsAt means one day."
    )
    props["calendarId"]["description"] = (
        "Identifier of the target calendar: one of the key's calendars (a calendar the owner "
        "does not have is a 400)."
    )
    props["calendar"]["description"] = (
        "Name of the target calendar (default: the key's calendar, or "
        f"{DEFAULT_CALENDAR_NAME!r} for an all-calendars key). A name the owner has no "
        "calendar by is a 400: calendars are never created implicitly. If calendarId is also "
        "sent, both must name the same calendar."
    )
    props["allDay"]["description"] = (
        "An all-day event runs from midnight to midnight in the calendar's time zone."
    )
    props["calendarId"] = _text(props["calendarId"])
    props["calendar"] = _text(props["calendar"])
    props["description"] = _text(props["description"], "Free text.")
    props["location"] = _text(props["location"], "Free text.")
    schema.pop("title", None)
    schema["description"] = "The body of createCalendarEvent."
    # allDay defaults to false, so without it the event is a timed one.
    schema["if"] = {"properties": {"allDay": {"const": True}}, "required": ["allDay"]}
    schema["then"] = _times(ALL_DAY_PATTERN)
    schema["else"] = _times(DATE_TIME_PATTERN)
    return schema


def _event_update(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema["properties"]
    props["title"] = _title(
        f"1 to {TITLE_MAX} characters after trimming, not blank; not null. No NUL characters."
    )
    props["startsAt"] = _date_time_input(
        f"New start; not null. {_TIMES_DOC} Without allDay in the body, the event's current "
        "allDay decides which form is accepted."
    )
    props["endsAt"] = _date_time_input(
        f"New exclusive end; not null. {_TIMES_DOC} The event as changed must not end before it "
        "starts."
    )
    props["allDay"] = {
        "type": "boolean",
        "description": "Turn the event into an all-day event or back; not null. The times it "
        "keeps (or those sent) must suit the new kind: dates or midnights for all-day events.",
    }
    props["description"] = _text(props["description"], "Free text; null clears it.")
    props["location"] = _text(props["location"], "Free text; null clears it.")
    for name in props:
        props[name].pop("default", None)  # absent means "unchanged", not a default value
    schema.pop("title", None)
    schema["description"] = (
        "The body of updateCalendarEvent: only the fields sent change; the event as changed is "
        "validated as a whole. Moving an event to another calendar is not supported in v1."
    )
    # Without allDay in the body, either form may be right (the event's current allDay
    # decides), so the properties above take both; allDay in the body narrows them.
    schema["allOf"] = [_all_day_rule(True), _all_day_rule(False)]
    return schema


def _schemas() -> dict[str, Any]:
    out: dict[str, Any] = {}
    models: list[tuple[type[BaseModel], str]] = [
        (EventCreate, "validation"),
        (EventUpdate, "validation"),
        (CalendarPublic, "serialization"),
        (EventPublic, "serialization"),
        (CancelledEvent, "serialization"),
        (EventList, "serialization"),
        (Problem, "serialization"),
        *openapi_availability.MODELS,
    ]
    for model, mode in models:
        schema, defs = _model_schema(model, mode)
        for name, definition in defs.items():
            out.setdefault(name, definition)
        out[model.__name__] = schema
    openapi_availability.adjust(
        out, bound_pattern=BOUND_PATTERN, text_pattern=TEXT_PATTERN, range_doc=RANGE_DOC
    )
    out["EventCreate"] = _event_create(out["EventCreate"])
    out["EventUpdate"] = _event_update(out["EventUpdate"])
    _only_when_present(out["EventPublic"], ("recurrence", "recurringEventId", "originalStartsAt"))
    out["EventPublic"]["description"] = (
        "An event; times in its calendar's time zone. A series carries recurrence; an "
        "occurrence of a series carries recurringEventId and originalStartsAt; a single event "
        "has none of the three."
    )
    out["EventPublic"]["examples"] = [_EVENT_EXAMPLE]
    _only_when_present(out["CancelledEvent"], ("recurringEventId", "originalStartsAt"))
    out["CancelledEvent"]["description"] = (
        "In a sync only: an event deleted since the sync token was issued (id and status "
        "alone), or an occurrence of a series cancelled (with recurringEventId and "
        "originalStartsAt). Remove it from your copy."
    )
    out["CancelledEvent"]["examples"] = [{"id": _EVENT_EXAMPLE["id"], "status": "cancelled"}]
    _only_when_present(out["EventList"], ("nextPageToken", "nextSyncToken"))
    out["EventList"]["description"] = (
        "A page of events, with the calendars the key reaches. The last page carries "
        "nextSyncToken instead of nextPageToken."
    )
    out["EventList"]["examples"] = [
        {
            "calendars": [_CALENDAR_EXAMPLE],
            "events": [_EVENT_EXAMPLE],
            "nextPageToken": "eyJzIjoiMjAyNi0wMy0wMlQwODozMDowMFoifQ",
        },
        {
            "calendars": [_CALENDAR_EXAMPLE],
            "events": [
                _EVENT_EXAMPLE,
                {"id": "ev_01JQ4Z3W0F8N6Y2M5K7T9R1B3D", "status": "cancelled"},
            ],
            "nextSyncToken": "ZmFrZS1zeW5jLXRva2VuLWV4YW1wbGU",
        },
    ]
    out["CalendarPublic"]["description"] = "A calendar the key reaches."
    out["CalendarPublic"]["examples"] = [_CALENDAR_EXAMPLE]
    out["Problem"]["description"] = (
        "RFC 9457 problem details. `code` is the stable, machine-readable reason; validation "
        "errors list every bad field in `errors`."
    )
    out["Problem"]["examples"] = [_VALIDATION_PROBLEM]
    out["FieldErrorPublic"]["description"] = "One bad input field and what is wrong with it."
    for schema in out.values():
        schema.pop("title", None)  # pydantic's titles ("Startsat"...) are noise for readers
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
    return {_DOC_NAMES.get(name, name): _renamed(schema) for name, schema in out.items()}


def _only_when_present(schema: dict[str, Any], names: tuple[str, ...]) -> None:
    """Fields that are left out rather than null: their schema without the null branch."""
    for name in names:
        prop = schema["properties"][name]
        branches = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
        prop.update(branches[0])
        prop.pop("default", None)
        if name in schema.get("required", []):
            schema["required"].remove(name)


# The document names the objects as the API does ("Calendar", not the model's
# "CalendarPublic"); tools that infer links from names (calendarId -> Calendar) rely on it.
_DOC_NAMES = {
    "CalendarPublic": "Calendar",
    "EventPublic": "Event",
    "FieldErrorPublic": "FieldError",
}


def _renamed(node: Any) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_SCHEMA.format("")):
            name = ref.removeprefix(_SCHEMA.format(""))
            return {**node, "$ref": _SCHEMA.format(_DOC_NAMES.get(name, name))}
        return {key: _renamed(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(value) for value in node]
    return node


_CALENDAR_EXAMPLE = {
    "id": "cal_3bT0hJk2mQ9xR4vW8yZ1aC",
    "name": DEFAULT_CALENDAR_NAME,
    "timeZone": "Europe/Berlin",
    "isDefault": True,
    "color": "#1a73e8",
}
_EVENT_EXAMPLE = {
    "id": "ev_7Hq2LmN4pR6tV8xZ0bD3fG",
    "calendarId": "cal_3bT0hJk2mQ9xR4vW8yZ1aC",
    "calendar": DEFAULT_CALENDAR_NAME,
    "title": "Design review",
    "startsAt": "2026-03-02T09:30:00+01:00",
    "endsAt": "2026-03-02T10:30:00+01:00",
    "allDay": False,
    "description": None,
    "location": "Room 4",
    "createdAt": "2026-02-20T14:03:11.482913Z",
    "updatedAt": "2026-02-20T14:03:11.482913Z",
    "transparency": "opaque",
}


def _problem_example(status: int, code: str, title: str, detail: str, **extra: Any) -> Any:
    return {
        "type": PROBLEM_TYPE.format(code=code),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "instance": "/api/v1/calendar/events",
        **extra,
    }


_VALIDATION_PROBLEM = _problem_example(
    400,
    "validation_error",
    "Invalid request",
    "The request has invalid fields: title, endsAt.",
    errors=[
        {"field": "title", "message": "must not be empty"},
        {"field": "endsAt", "message": "must not be before startsAt"},
    ],
)

# ---------------------------------------------------------------------------------------------
# Headers, parameters and responses shared by the operations


def _headers() -> dict[str, Any]:
    def integer(description: str) -> dict[str, Any]:
        return {"description": description, "schema": {"type": "integer", "minimum": 0}}

    return {
        "Request-Id": {
            "description": "The request's id: the caller's own Request-Id (1 to 64 of "
            "`A-Z a-z 0-9 . _ : -`) or a generated one. Quote it when reporting a problem.",
            "required": True,
            "schema": {"type": "string", "pattern": r"^[A-Za-z0-9._:-]{1,64}$"},
        },
        "RateLimit-Policy": {
            "description": "The key's budget: `<requests>;w=<seconds>` (IETF httpapi "
            "ratelimit-headers draft).",
            "schema": {"type": "string", "pattern": r"^[0-9]+;w=[0-9]+$"},
            "example": "600;w=60",
        },
        "RateLimit-Limit": integer("Requests allowed per window."),
        "RateLimit-Remaining": integer("Requests left in the current window."),
        "RateLimit-Reset": integer("Seconds until the budget is full again."),
        "Retry-After": {
            "description": "Seconds to wait before retrying.",
            "required": True,
            "schema": {"type": "integer", "minimum": 1},
        },
        "Location": {
            "description": "The created event's URL.",
            "required": True,
            "schema": {"type": "string", "format": "uri"},
        },
        "Idempotent-Replayed": {
            "description": "`true` when this is the stored response to an earlier request "
            "with the same Idempotency-Key and body.",
            "schema": {"type": "string", "enum": ["true"]},
        },
        "WWW-Authenticate": {
            "description": 'RFC 6750: `Bearer realm="calendar"`, with `error="invalid_token"` '
            'or `error="insufficient_scope"` when a key was sent.',
            "required": True,
            "schema": {"type": "string"},
        },
        "Cache-Control": {
            "description": "`no-store`: calendar data is not to be cached.",
            "schema": {"type": "string"},
        },
    }


def _ref_headers(*names: str) -> dict[str, Any]:
    return {name: {"$ref": _HEADER.format(name)} for name in names}


_OK_HEADERS = (
    "Request-Id",
    "RateLimit-Policy",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Cache-Control",
)


def _problem_response(description: str, example: Any, *headers: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": _ref_headers("Request-Id", *headers),
        "content": {
            "application/problem+json": {
                "schema": {"$ref": _SCHEMA.format("Problem")},
                "example": example,
            }
        },
    }


def _responses() -> dict[str, Any]:
    return {
        "BadRequest": _problem_response(
            "Invalid request: `errors` lists every bad field (`code` `validation_error`). Also "
            "`api_key_in_url` for a key sent in the query string, and `duplicate_header` for "
            "two Authorization headers.",
            _VALIDATION_PROBLEM,
        ),
        "Unauthorized": _problem_response(
            "The API key is missing, malformed, unknown, expired or revoked, or lacks the "
            "permission or the calendar (`code` says which).",
            _problem_example(
                401,
                "insufficient_scope",
                "Insufficient scope",
                "This operation needs a key with calendar:write permission.",
            ),
            "WWW-Authenticate",
        ),
        "NotFound": _problem_response(
            "No such event among those the key can reach (whether it exists elsewhere is not "
            "revealed).",
            _problem_example(404, "not_found", "Not found", "No event with this id."),
        ),
        "Conflict": _problem_response(
            "A request with this Idempotency-Key is still being processed; retry shortly "
            "(`idempotency_in_flight`). Or, with `ifFree`, the time is not free (`conflict`): "
            "`conflicts` lists the overlapping busy events' times (and their ids and titles).",
            _problem_example(
                409,
                "idempotency_in_flight",
                "Request in progress",
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            ),
        ),
        "SyncTokenExpired": _problem_response(
            "The sync token is older than the changes kept (CALENDAR_SYNC_RETENTION_DAYS): list "
            "the events again without syncToken; the last page carries a new nextSyncToken.",
            _problem_example(
                410,
                "sync_token_expired",
                "Sync token expired",
                "This sync token is older than the 30 days of changes kept; list the events "
                "again without syncToken (the last page carries a new nextSyncToken).",
            ),
        ),
        "PayloadTooLarge": _problem_response(
            f"The body is larger than {MAX_BODY} bytes (1 MiB).",
            _problem_example(
                413,
                "payload_too_large",
                "Payload too large",
                f"The body is larger than {MAX_BODY} bytes (1 MiB).",
            ),
        ),
        "UnsupportedMediaType": _problem_response(
            "The body was sent with a media type other than JSON.",
            _problem_example(
                415,
                "unsupported_media_type",
                "Unsupported media type",
                "Send the body as JSON with 'Content-Type: application/json' (got 'text/plain').",
            ),
        ),
        "IdempotencyKeyReused": _problem_response(
            "This Idempotency-Key was used with a different body within 24 hours.",
            _problem_example(
                422,
                "idempotency_key_reused",
                "Idempotency key reused",
                "This Idempotency-Key was already used with a different request body; use a "
                "new key for a new request.",
            ),
        ),
        "TooManyRequests": _problem_response(
            "Over this key's request budget.",
            _problem_example(
                429,
                "rate_limited",
                "Too many requests",
                "This API key made more than 600 requests in 60 seconds; retry after 2 seconds.",
            ),
            "Retry-After",
            "RateLimit-Policy",
            "RateLimit-Limit",
            "RateLimit-Remaining",
            "RateLimit-Reset",
        ),
        "InternalError": _problem_response(
            "Unexpected error on the service's side; quote the Request-Id when reporting it.",
            _problem_example(
                500,
                "internal_error",
                "Internal server error",
                "Something went wrong on our side. Quote request id req_0sUIb7OoBX5RSefCq3ZAZf "
                "if you report it.",
            ),
        ),
    }


def _parameters() -> dict[str, Any]:
    bound_doc = (
        " A date-time (offset optional: without one it is read in the time zone of the key's "
        "calendar, or of the default calendar for an all-calendars key) or a date (that day's "
        f"midnight). {RANGE_DOC} Omitted or empty: unbounded."
    )
    return {
        "eventId": {
            "name": "eventId",
            "in": "path",
            "required": True,
            "description": "The event's id, as returned in `id`.",
            "schema": {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN},
            "example": _EVENT_EXAMPLE["id"],
        },
        "timeMin": {
            "name": "timeMin",
            "in": "query",
            "description": "Inclusive start of the window: events ending after it (and "
            "zero-length events at it) are returned." + bound_doc,
            "schema": {"type": "string", "pattern": BOUND_PATTERN},
            "example": "2026-03-01T00:00:00+01:00",
        },
        "timeMax": {
            "name": "timeMax",
            "in": "query",
            "description": "Exclusive end of the window: events starting before it are "
            "returned. Not before timeMin." + bound_doc,
            "schema": {"type": "string", "pattern": BOUND_PATTERN},
            "example": "2026-04-01",
        },
        "limit": {
            "name": "limit",
            "in": "query",
            "description": f"Page size, 1 to {MAX_LIMIT}; empty means the default.",
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
            },
            "example": 100,
        },
        "pageToken": {
            "name": "pageToken",
            "in": "query",
            "description": "The previous page's nextPageToken, with the same timeMin and "
            "timeMax (the same instants; limit may change). Any other value is a 400.",
            "schema": {"type": "string", "pattern": TEXT_PATTERN},
        },
        "syncToken": {
            "name": "syncToken",
            "in": "query",
            "description": "The nextSyncToken of an earlier list's (or sync's) last page: the "
            "answer is then every event created, changed or deleted since, in the calendars "
            "the key reaches (series and their changed occurrences as stored, not expanded; "
            "deleted events and cancelled occurrences with status cancelled), paged like a "
            "list, its last page with a new nextSyncToken. Not with timeMin or timeMax (400). "
            "A token older than CALENDAR_SYNC_RETENTION_DAYS (default 30) is a 410 "
            "`sync_token_expired`: list again without it. Any other value is a 400.",
            "schema": {"type": "string", "pattern": TEXT_PATTERN},
        },
        "singleEvents": {
            "name": "singleEvents",
            "in": "query",
            "description": "true (the default): series are listed as their occurrences, each an "
            "event with recurringEventId and originalStartsAt. false: series are listed as "
            "themselves, with recurrence, ordered by their first occurrence (their changed "
            "occurrences are listed too). Send the same value with a pageToken.",
            "schema": {"type": "string", "enum": ["true", "false"], "default": "true"},
        },
        "scope": {
            "name": "scope",
            "in": "query",
            "description": "For an occurrence id (<seriesId>_<YYYYMMDDTHHMMSSZ>): `this` (the "
            "default) changes or cancels that occurrence alone; `following` ends the series "
            "before it (and, for a change, starts a new series with the change there, which "
            "the answer carries); `all` the whole series. A single event's or a series' id "
            "always names the whole of it. Empty: as if not sent.",
            "schema": {"type": "string", "enum": ["this", "following", "all", ""]},
        },
        "Idempotency-Key": {
            "name": "Idempotency-Key",
            "in": "header",
            "description": "Makes the POST safe to retry (IETF httpapi draft): within 24 hours, "
            "the same key with the same body returns the first response again; with another "
            f"body it is a 422. 1 to {MAX_KEY_LENGTH} printable characters.",
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_KEY_LENGTH,
                "pattern": IDEMPOTENCY_KEY_PATTERN,
            },
            "example": "4f8a2c1e-7b3d-4e5f-9a6b-0c1d2e3f4a5b",
        },
    }


def _json(schema: str, **extra: Any) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _SCHEMA.format(schema)}, **extra}}


def _errors(*codes: str) -> dict[str, Any]:
    names = {
        "400": "BadRequest",
        "401": "Unauthorized",
        "404": "NotFound",
        "409": "Conflict",
        "410": "SyncTokenExpired",
        "413": "PayloadTooLarge",
        "415": "UnsupportedMediaType",
        "422": "IdempotencyKeyReused",
        "429": "TooManyRequests",
        "500": "InternalError",
    }
    chosen = ("400", "401", *codes, "429", "500")
    return {code: {"$ref": _RESPONSE.format(names[code])} for code in sorted(chosen)}


def _link(operation: str, description: str, **parameters: str) -> dict[str, Any]:
    return {"operationId": operation, "description": description, "parameters": parameters}


def _event_answer(
    description: str, source: str, *, headers: tuple[str, ...] = _OK_HEADERS
) -> dict[str, Any]:
    """A response carrying one event, with the links from it to reading, changing and
    deleting it."""
    return {
        "description": description,
        "headers": _ref_headers(*headers),
        "content": _json("Event"),
        "links": _event_links(source),
    }


def _event_links(source: str) -> dict[str, Any]:
    links = {
        "GetEvent": _link(
            "getCalendarEvent", f"Read the {source} event.", eventId="$response.body#/id"
        ),
        "UpdateEvent": _link(
            "updateCalendarEvent", f"Change the {source} event.", eventId="$response.body#/id"
        ),
        "DeleteEvent": _link(
            "deleteCalendarEvent", f"Delete the {source} event.", eventId="$response.body#/id"
        ),
    }
    if source == "read":
        del links["GetEvent"]
    return links


_RATE_DOC = (
    " Every call spends one request of the key's budget and is recorded in the key's call history."
)


def _operations() -> dict[str, Any]:
    write_note = " Needs a key with `calendar:write`."
    rate_doc = _RATE_DOC
    list_op = {
        "operationId": "listCalendarEvents",
        "tags": [TAG],
        "summary": "List the calendars and events the key can reach",
        "description": "The calendars the key can reach, and their events that overlap "
        "[timeMin, timeMax): `endsAt > timeMin` and `startsAt < timeMax`. Ordered by startsAt, "
        "then id, in pages of `limit`; when more remain the body carries nextPageToken. "
        "Recurring series are listed as their occurrences (singleEvents); a page can be "
        "shorter than `limit` when expanding series reached the request's work bound, and "
        "then carries nextPageToken too. The last page carries nextSyncToken: sent back later "
        "as syncToken, it gets every change made since (incremental sync, docs/sync.md)."
        + rate_doc,
        "parameters": [
            {"$ref": _PARAMETER.format(name)}
            for name in ("timeMin", "timeMax", "limit", "pageToken", "singleEvents", "syncToken")
        ],
        "responses": {
            "200": {
                "description": "The calendars and a page of their events.",
                "headers": _ref_headers(*_OK_HEADERS),
                "content": _json("EventList"),
                "links": {
                    "NextPage": _link(
                        "listCalendarEvents",
                        "The next page, if any (send the same timeMin and timeMax with it).",
                        pageToken="$response.body#/nextPageToken",
                    ),
                    "Sync": _link(
                        "listCalendarEvents",
                        "Later: every change since this list or sync (on its last page).",
                        syncToken="$response.body#/nextSyncToken",
                    ),
                },
            },
            **_errors("410"),
        },
    }
    create_op = {
        "operationId": "createCalendarEvent",
        "tags": [TAG],
        "summary": "Create an event",
        "description": "Creates an event in the calendar named by calendarId or calendar (by "
        "default the key's calendar, or the owner's default calendar for an all-calendars "
        "key). Answers with the event and its URL in Location. Send an Idempotency-Key to make "
        "retries safe." + write_note + rate_doc,
        "parameters": [{"$ref": _PARAMETER.format("Idempotency-Key")}],
        "requestBody": {
            "required": True,
            "description": "The new event.",
            "content": _json(
                "EventCreate",
                examples={
                    "timed": {
                        "summary": "A meeting, with its offset",
                        "value": _create_examples()[0],
                    },
                    "allDay": {
                        "summary": "An all-day event over two days",
                        "value": _create_examples()[1],
                    },
                },
            ),
        },
        "responses": {
            "201": _event_answer(
                "The created event (or, for a replayed Idempotency-Key, the event the first "
                "request created).",
                "created",
                headers=("Location", *_OK_HEADERS, "Idempotent-Replayed"),
            ),
            **_errors("409", "413", "415", "422"),
        },
    }
    get_op = {
        "operationId": "getCalendarEvent",
        "tags": [TAG],
        "summary": "Get one event",
        "description": "The event, if it is in a calendar the key can reach." + rate_doc,
        "responses": {
            "200": _event_answer("The event.", "read"),
            **_errors("404"),
        },
    }
    update_op = {
        "operationId": "updateCalendarEvent",
        "tags": [TAG],
        "summary": "Change some fields of an event",
        "description": "Changes only the fields sent (JSON merge semantics: `null` clears "
        "description or location); the event as changed is validated as a whole. For a "
        "series, a change of its rule or times drops the changed or cancelled occurrences the "
        "new rule no longer produces; `recurrence: null` makes it a single event. For an "
        "occurrence id, see scope." + write_note + rate_doc,
        "parameters": [{"$ref": _PARAMETER.format("scope")}],
        "requestBody": {
            "required": True,
            "description": "The fields to change.",
            "content": _json(
                "EventUpdate",
                examples={
                    "move": {
                        "summary": "Rename and move the start",
                        "value": {
                            "title": "Design review (moved)",
                            "startsAt": "2026-03-02T11:00:00+01:00",
                            "endsAt": "2026-03-02T12:00:00+01:00",
                        },
                    },
                    "clearLocation": {"summary": "Clear the location", "value": {"location": None}},
                },
            ),
        },
        "responses": {
            "200": _event_answer("The event as changed.", "changed"),
            **_errors("404", "413", "415"),
        },
    }
    delete_op = {
        "operationId": "deleteCalendarEvent",
        "tags": [TAG],
        "summary": "Delete an event",
        "description": "Deletes the event (a series with its changed occurrences); the "
        "owner's webhook hears of it with the event as it was. For an occurrence id, cancels "
        "that occurrence (scope=this), or ends the series before it (scope=following)."
        + write_note
        + rate_doc,
        "parameters": [{"$ref": _PARAMETER.format("scope")}],
        "responses": {
            "204": {
                "description": "Deleted.",
                "headers": _ref_headers(*_OK_HEADERS),
                "links": {
                    "GetDeletedEvent": _link(
                        "getCalendarEvent",
                        "A deleted event is gone (404).",
                        eventId="$request.path.eventId",
                    )
                },
            },
            **_errors("404"),
        },
    }
    return {
        "list": list_op,
        "create": create_op,
        "get": get_op,
        "update": update_op,
        "delete": delete_op,
    }


def _create_examples() -> list[dict[str, Any]]:
    return [
        {
            "title": "Design review",
            "startsAt": "2026-03-02T09:30:00+01:00",
            "endsAt": "2026-03-02T10:30:00+01:00",
            "location": "Room 4",
        },
        {"title": "Offsite", "startsAt": "2026-03-02", "endsAt": "2026-03-03", "allDay": True},
    ]


def build_openapi(base_url: str) -> dict[str, Any]:
    ops = _operations()
    collection = EVENTS_PATH.removeprefix("/api/v1")
    item = collection + "/{eventId}"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Calendar API",
            "version": API_VERSION,
            "summary": "Calendar events for machines, with scoped API keys.",
            "description": "List, create, read, change and delete calendar events, and import "
            "iCalendar files, with a scoped API key (`Authorization: Bearer <API_KEY>`). "
            "Errors are RFC 9457 problem details (`application/problem+json`) with a "
            "machine-readable `code`. Methods not listed for a path are answered with 405 and "
            "an `Allow` header. Within v1 changes are additive only.",
            "contact": {"name": "Calendar service operator", "url": base_url},
            "license": {"name": "MIT", "url": "https://opensource.org/license/mit"},
        },
        "servers": [{"url": f"{base_url}/api/v1"}],
        "security": [{"bearerAuth": []}],
        "tags": [
            openapi_availability.TAG_DOC,  # tags in alphabetical order
            {
                "name": TAG,
                "description": "Events in the calendars an API key can reach. Write operations "
                "need `calendar:write`; every change is sent to the owner's webhook.",
            },
        ],
        "paths": {
            collection: {"get": ops["list"], "post": ops["create"]},
            item: {
                "parameters": [{"$ref": _PARAMETER.format("eventId")}],
                "get": ops["get"],
                "patch": ops["update"],
                "delete": ops["delete"],
            },
            **openapi_availability.paths(_RATE_DOC),
            **dict([openapi_ical.path()]),
        },
        "components": {
            "schemas": {**_schemas(), **openapi_ical.schemas()},
            "parameters": {**_parameters(), **openapi_ical.parameters()},
            "headers": _headers(),
            "responses": _responses(),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Authorization: Bearer <API_KEY>. Never in the URL.",
                }
            },
        },
    }


async def openapi_document(request: Request) -> Response:
    svc = services(request)
    doc = request.app.state.openapi_cache.get(svc.config.base_url)
    if doc is None:
        doc = request.app.state.openapi_cache[svc.config.base_url] = build_openapi(
            svc.config.base_url
        )
    return JSONResponse(doc, headers={"Cache-Control": "public, max-age=300"})


def routes() -> list[BaseRoute]:
    return [
        Route("/api/openapi.json", openapi_document, methods=["GET"]),
        Route("/.well-known/openapi.json", openapi_document, methods=["GET"]),
    ]
