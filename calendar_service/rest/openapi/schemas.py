"""The component schemas (``components.schemas``), from the same pydantic models the handlers
use: the models give the shapes (fields, types, required, unknown fields refused); what the
core checks beyond types is added (``bodies`` for the Events bodies, ``availability`` for its
own), with the descriptions and examples a reader needs. The document names the objects as the
API does (``Calendar``, not the model's ``CalendarPublic``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from calendar_service.platform.models.calendars import CalendarPublic
from calendar_service.platform.models.events import (
    Attendee,
    CancelledEvent,
    EventCreate,
    EventList,
    EventPublic,
    EventUpdate,
    Organizer,
)
from calendar_service.platform.models.problems import Problem
from calendar_service.rest.openapi import availability
from calendar_service.rest.openapi.bodies import event_create, event_update
from calendar_service.rest.openapi.examples import (
    CALENDAR_EXAMPLE,
    EVENT_EXAMPLE,
    VALIDATION_PROBLEM,
)
from calendar_service.rest.openapi.refs import SCHEMA, renamed

_MODELS: tuple[tuple[type[BaseModel], str], ...] = (
    (EventCreate, "validation"),
    (EventUpdate, "validation"),
    (CalendarPublic, "serialization"),
    (EventPublic, "serialization"),
    (Attendee, "serialization"),
    (Organizer, "serialization"),
    (CancelledEvent, "serialization"),
    (EventList, "serialization"),
    (Problem, "serialization"),
    *availability.MODELS,
)


def schemas() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model, mode in _MODELS:
        schema, defs = _model_schema(model, mode)
        for name, definition in defs.items():
            out.setdefault(name, definition)
        out[model.__name__] = schema
    availability.adjust(out)
    out["EventCreate"] = event_create(out["EventCreate"])
    out["EventUpdate"] = event_update(out["EventUpdate"])
    _describe_events(out)
    _describe_calendars_and_problems(out)
    for schema in out.values():
        schema.pop("title", None)  # pydantic's titles ("Startsat"...) are noise for readers
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
    return {_DOC_NAMES.get(name, name): renamed(schema, _DOC_NAMES) for name, schema in out.items()}


def _model_schema(model: type[BaseModel], mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = model.model_json_schema(
        by_alias=True,
        ref_template=SCHEMA.replace("{}", "{model}"),
        mode=mode,  # type: ignore[arg-type]
    )
    return schema, schema.pop("$defs", {})


def _describe_events(out: dict[str, Any]) -> None:
    """The answers' events: fields left out rather than null, descriptions, examples."""
    _only_when_present(
        out["EventPublic"],
        (
            "recurrence",
            "recurringEventId",
            "originalStartsAt",
            "organizer",
            "attendees",
            "sequence",
        ),
    )
    out["EventPublic"]["description"] = (
        "An event; times in its calendar's time zone. A series carries recurrence; an "
        "occurrence of a series carries recurringEventId and originalStartsAt; a single event "
        "has none of the three. An event with attendees carries organizer, attendees and "
        "sequence."
    )
    props = out["EventPublic"]["properties"]
    props["organizer"] = {"$ref": SCHEMA.format("Organizer"), "description": "The owner."}
    props["attendees"] = {
        "type": "array",
        "items": {"$ref": SCHEMA.format("Attendee")},
        "maxItems": 100,
        "description": props["attendees"].get("description", ""),
    }
    organizer = {"email": "owner@example.com", "name": "owner@example.com"}
    attendees: list[dict[str, Any]] = [
        {"email": "ana@example.com", "name": "Ana Lima", "responseStatus": "accepted"},
        {"email": "bob@example.org", "optional": True, "responseStatus": "needsAction"},
    ]
    meeting = {**EVENT_EXAMPLE, "organizer": organizer, "attendees": attendees, "sequence": 1}
    out["EventPublic"]["examples"] = [EVENT_EXAMPLE, meeting]
    out["Attendee"]["description"] = "Someone invited, and their answer."
    out["Attendee"]["examples"] = [attendees[0]]
    out["Organizer"]["description"] = "Who invites: the calendar's owner."
    out["Organizer"]["examples"] = [organizer]
    out["AttendeeInput"]["description"] = "An attendee as sent on create or PATCH."
    out["AttendeeInput"]["examples"] = [{"email": "ana@example.com", "name": "Ana Lima"}]
    _only_when_present(out["CancelledEvent"], ("recurringEventId", "originalStartsAt"))
    out["CancelledEvent"]["description"] = (
        "In a sync only: an event deleted since the sync token was issued (id and status "
        "alone), or an occurrence of a series cancelled (with recurringEventId and "
        "originalStartsAt). Remove it from your copy."
    )
    out["CancelledEvent"]["examples"] = [{"id": EVENT_EXAMPLE["id"], "status": "cancelled"}]
    _only_when_present(out["EventList"], ("nextPageToken", "nextSyncToken"))
    out["EventList"]["description"] = (
        "A page of events, with the calendars the key reaches. The last page carries "
        "nextSyncToken instead of nextPageToken."
    )
    out["EventList"]["examples"] = [
        {
            "calendars": [CALENDAR_EXAMPLE],
            "events": [EVENT_EXAMPLE],
            "nextPageToken": "eyJzIjoiMjAyNi0wMy0wMlQwODozMDowMFoifQ",
        },
        {
            "calendars": [CALENDAR_EXAMPLE],
            "events": [
                EVENT_EXAMPLE,
                {"id": "ev_01JQ4Z3W0F8N6Y2M5K7T9R1B3D", "status": "cancelled"},
            ],
            "nextSyncToken": "ZmFrZS1zeW5jLXRva2VuLWV4YW1wbGU",
        },
    ]


def _describe_calendars_and_problems(out: dict[str, Any]) -> None:
    out["CalendarPublic"]["description"] = "A calendar the key reaches."
    out["CalendarPublic"]["examples"] = [CALENDAR_EXAMPLE]
    out["Problem"]["description"] = (
        "RFC 9457 problem details. `code` is the stable, machine-readable reason; validation "
        "errors list every bad field in `errors`."
    )
    out["Problem"]["examples"] = [VALIDATION_PROBLEM]
    out["FieldErrorPublic"]["description"] = "One bad input field and what is wrong with it."


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
    "RuleErrorPublic": "RuleError",
}
