"""The owner's rules for agents: ``getSchedulingRules``, the rules' schema, and what every
write answers when it breaks them (``adjust``: 409 ``rule_violation``, a dry run's
``ruleViolations`` and ``suggestions``)."""

from __future__ import annotations

from typing import Any

from calendar_service.calendar.rules import WEEKDAYS
from calendar_service.operations import catalog as operations
from calendar_service.rest.openapi.availability import TAG
from calendar_service.rest.openapi.examples import problem_example
from calendar_service.rest.openapi.refs import (
    RATE_DOC,
    SCHEMA,
    answer,
    json_content,
)
from calendar_service.rest.openapi.responses import errors, problem_response, responses
from calendar_service.rest.routes import RULES_PATH

_CLOCK = {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$"}
_SPAN = {
    "type": "object",
    "properties": {"start": _CLOCK, "end": _CLOCK},
    "required": ["start", "end"],
    "additionalProperties": False,
    "description": "Wall-clock times in the target calendar's zone; end after start.",
}


def _minutes(low: int, high: int, doc: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high, "description": doc}


RULES_EXAMPLE = {
    "workingHours": {d: [{"start": "09:00", "end": "17:00"}] for d in WEEKDAYS[:5]},
    "bufferMinutes": 15,
    "maxMeetingsPerDay": 4,
    "focus": {"minutes": 120, "start": "13:00", "end": "18:00"},
    "noMeetingDays": ["fri"],
    "minNoticeMinutes": 120,
    "onViolation": "refuse",
}
VIOLATION_EXAMPLE = {
    **problem_example(
        409,
        "rule_violation",
        "Against the owner's rules",
        "The owner's rules for agents refuse this time (workingHours): 2026-03-02 08:00 "
        "(Europe/Berlin) to 09:00 is outside the owner's working hours on Mondays "
        "(09:00-17:00). Pick one of the suggestions, or ask findFreeTime for times that keep "
        "the rules.",
    ),
    "errors": [
        {
            "rule": "workingHours",
            "message": "2026-03-02 08:00 (Europe/Berlin) to 09:00 is outside the owner's "
            "working hours on Mondays (09:00-17:00).",
        }
    ],
    "suggestions": [
        {"startsAt": "2026-03-02T09:00:00+01:00", "endsAt": "2026-03-02T10:00:00+01:00"},
        {"startsAt": "2026-03-02T09:15:00+01:00", "endsAt": "2026-03-02T10:15:00+01:00"},
        {"startsAt": "2026-03-02T09:30:00+01:00", "endsAt": "2026-03-02T10:30:00+01:00"},
    ],
}
_VIOLATION_DOC = (
    "`rule_violation`: the write breaks the owner's rules for agents (their `onViolation` is "
    "`refuse`): nothing was changed. `errors` names each rule broken ({rule, message}), "
    "`suggestions` up to 3 times of the same length that keep every rule."
)


def schemas() -> dict[str, Any]:
    weekdays = {"type": "string", "enum": list(WEEKDAYS)}
    rules = {
        "type": "object",
        "description": "The owner's rules for agents (docs/rules.md); each optional.",
        "properties": {
            "workingHours": {
                "type": "object",
                "properties": {
                    d: {"type": "array", "items": _SPAN, "maxItems": 6} for d in WEEKDAYS
                },
                "additionalProperties": False,
                "description": "Each weekday's working hours; a weekday left out has none.",
            },
            "bufferMinutes": _minutes(0, 720, "Kept free before and after each meeting."),
            "maxMeetingsPerDay": _minutes(1, 100, "Meetings starting on one local day."),
            "maxMeetingMinutesPerDay": _minutes(1, 1440, "Minutes of meetings on one day."),
            "focus": {
                "type": "object",
                "properties": {
                    "minutes": _minutes(15, 1440, "The free block's length."),
                    "start": _CLOCK,
                    "end": _CLOCK,
                },
                "required": ["minutes", "start", "end"],
                "additionalProperties": False,
                "description": "Each working day keeps one free block that long in [start, end).",
            },
            "noMeetingDays": {"type": "array", "items": weekdays, "uniqueItems": True},
            "minNoticeMinutes": _minutes(0, 43_200, "A meeting starts at least this long ahead."),
            "maxDaysAhead": _minutes(1, 730, "A meeting starts at most this many days ahead."),
            "maxDurationMinutes": _minutes(1, 1440, "The longest meeting."),
            "onViolation": {"type": "string", "enum": ["refuse", "ask"]},
        },
        "required": ["onViolation"],
        "additionalProperties": False,
        "examples": [RULES_EXAMPLE],
    }
    answer = {
        "type": "object",
        "properties": {
            "rules": {"$ref": SCHEMA.format("Rules")},
            "bindsThisKey": {
                "type": "boolean",
                "description": "Whether they bind this key's writes (false: made exempt).",
            },
        },
        "required": ["rules", "bindsThisKey"],
        "additionalProperties": False,
    }
    return {"Rules": rules, "SchedulingRules": answer}


def paths() -> dict[str, Any]:
    return {RULES_PATH.removeprefix("/api/v1"): {"get": _get()}}


def _get() -> dict[str, Any]:
    return TAG.operation(
        operations.GET_RULES,
        "The owner's rules for agents",
        "The owner's rules for agents (working hours, buffers, meetings and "
        "minutes a day, focus time, no-meeting days, notice, how far ahead, longest meeting) "
        "and whether they bind the calling key, so that an agent can plan: findFreeTime "
        "offers only times that keep them, and a write that breaks them is refused (409 "
        "`rule_violation`, with suggestions) or waits for the owner. Any key may call it."
        + RATE_DOC,
        {
            "200": answer(
                "The rules, and whether they bind this key.",
                json_content(
                    "SchedulingRules",
                    example={"rules": RULES_EXAMPLE, "bindsThisKey": True},
                ),
            ),
            **errors(),
        },
    )


def adjust(doc_paths: dict[str, Any], schemas_out: dict[str, Any]) -> None:
    """Every write that creates an event or changes its time may answer 409
    ``rule_violation``; a dry run reports the rules it would break."""
    writes = (
        doc_paths["/calendar/events"]["post"],
        doc_paths["/calendar/events/{eventId}"]["patch"],
        doc_paths["/calendar/events/import"]["post"],
        doc_paths["/calendar/changes/{changeId}/undo"]["post"],
    )
    shared = responses()
    for write in writes:
        answers = write["responses"]
        described = problem_response(_VIOLATION_DOC, VIOLATION_EXAMPLE)
        earlier = answers.get("409")
        if earlier is not None:  # another 409 as well (ifFree's conflict, an undo's)
            if "$ref" in earlier:
                earlier = shared[earlier["$ref"].rsplit("/", 1)[1]]
            content = earlier["content"]["application/problem+json"]
            described["description"] = earlier["description"] + " Or " + _VIOLATION_DOC
            described["content"]["application/problem+json"] = {
                "schema": content["schema"],
                "examples": {
                    "other": {"value": content["example"]},
                    "rule_violation": {"value": VIOLATION_EXAMPLE},
                },
            }
        answers["409"] = described
        write["responses"] = dict(sorted(answers.items()))
    rule_errors = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"rule": {"type": "string"}, "message": {"type": "string"}},
            "required": ["rule", "message"],
        },
        "description": "The owner's rules for agents the write would break.",
    }
    times = {
        "type": "array",
        "items": {"$ref": SCHEMA.format("Interval")},
        "description": "With ruleViolations: up to 3 times of the same length that keep them.",
    }
    for name in ("DryRun", "ImportDryRun"):
        schemas_out[name]["properties"]["ruleViolations"] = rule_errors
        schemas_out[name]["properties"]["suggestions"] = times
