"""409 ``read_only_calendar`` on every write that names a connected calendar's read-only mirror
(docs/connections.md): creates into it, changes and deletions of its events, imports into it
and scheduling links that would book into it."""

from __future__ import annotations

from typing import Any

from calendar_service.rest.openapi.examples import problem_example
from calendar_service.rest.openapi.responses import problem_response, responses

EXAMPLE = problem_example(
    409,
    "read_only_calendar",
    "Read-only calendar",
    "The calendar 'Work' is read-only: it shows the connected calendar "
    "'conn_0Bc1dEfGh2iJkLmNoPqRsT', whose events are changed where they are kept. Nothing was "
    "written; write to another calendar (calendarId), or change the event at its source.",
)
DOC = (
    "`read_only_calendar`: the calendar is a connected calendar shown in full (`readOnly: "
    "true`, with its `source`): its events are changed where they are kept, never here."
)
WRITES = (
    ("/calendar/events", "post"),
    ("/calendar/events/{eventId}", "patch"),
    ("/calendar/events/{eventId}", "delete"),
    ("/calendar/events/import", "post"),
    ("/calendar/schedulingLinks", "post"),
)


def adjust(doc_paths: dict[str, Any]) -> None:
    """Add ``read_only_calendar`` to each write's 409 (beside any 409 it had)."""
    shared = responses()
    for path, method in WRITES:
        operation = doc_paths[path][method]
        answers = operation["responses"]
        described = problem_response(DOC, EXAMPLE)
        earlier = answers.get("409")
        if earlier is not None:
            if "$ref" in earlier:
                earlier = shared[earlier["$ref"].rsplit("/", 1)[1]]
            content = earlier["content"]["application/problem+json"]
            examples = dict(content.get("examples") or {"other": {"value": content["example"]}})
            described["description"] = earlier["description"] + " Or " + DOC
            described["content"]["application/problem+json"] = {
                "schema": content["schema"],
                "examples": {**examples, "read_only_calendar": {"value": EXAMPLE}},
            }
        answers["409"] = described
        operation["responses"] = dict(sorted(answers.items()))
