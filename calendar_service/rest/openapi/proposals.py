"""Approvals: a write that waits for the owner answers 202 with its proposal, and the key polls
it (``getProposal``). ``adjust`` adds the 202 to every write and ``awaitsApproval`` to the dry
run's answer."""

from __future__ import annotations

from typing import Any

from calendar_service.governance.change_shapes import ProposalPublic
from calendar_service.operations import catalog as operations
from calendar_service.rest.openapi.changes import TAG
from calendar_service.rest.openapi.examples import EVENT_EXAMPLE
from calendar_service.rest.openapi.parameters import id_parameter
from calendar_service.rest.openapi.refs import (
    OK_HEADERS,
    RATE_DOC,
    SCHEMA,
    answer,
    json_content,
    named_by,
    ref_headers,
)
from calendar_service.rest.openapi.responses import errors
from calendar_service.rest.routes import PROPOSALS_PATH

_PROPOSAL_ID = "prop_3Jk9Lm2Np4Qr6St8Uv0Wx2Yz"
PROPOSAL_EXAMPLE = {
    "id": _PROPOSAL_ID,
    "status": "pending",
    "kind": "deleted",
    "eventId": EVENT_EXAMPLE["id"],
    "calendarId": EVENT_EXAMPLE["calendarId"],
    "before": EVENT_EXAMPLE,
    "after": None,
    "createdAt": "2026-02-21T08:12:40Z",
    "expiresAt": "2026-02-28T08:12:40Z",
    "operation": "deleteCalendarEvent",
    "actor": {"type": "app", "id": "key_5Kp8Qw2Er4Ty6Ui8Op0As2D", "name": "Claude"},
    "transport": "mcp",
    "requestId": "req_2Zb7Xc9Vn1Mq3Wr5Et7Yu9Io",
}
APPROVED_EXAMPLE = {
    **PROPOSAL_EXAMPLE,
    "status": "approved",
    "decidedAt": "2026-02-21T09:30:02Z",
    "changeIds": ["chg_066133b51c2d3e4f5a6b7c8d9e0f1a"],
}
FAILED_EXAMPLE = {
    **PROPOSAL_EXAMPLE,
    "status": "failed",
    "decidedAt": "2026-02-21T09:30:02Z",
    "code": "conflict",
    "reason": f"The event {EVENT_EXAMPLE['id']} changed since the change was proposed: nothing "
    "was changed. The key may propose it again on the event as it is now.",
}
_WAITS = (
    "The key's writes wait for the owner's approval (its `approval`: `destructive` for "
    "updates and deletes, `all` for every write): nothing was changed yet. The body is the "
    "proposal; poll it at `Location` (getProposal)."
)
_IDEMPOTENT_WAITS = (
    " A retry with the same Idempotency-Key answers the same proposal, as it is now "
    "(`Idempotent-Replayed: true`), and proposes nothing new."
)


def schemas() -> dict[str, Any]:
    schema = ProposalPublic.model_json_schema(
        by_alias=True, ref_template=SCHEMA.replace("{}", "{model}"), mode="serialization"
    )
    schema.pop("$defs", None)
    schema.pop("title", None)
    required = set(schema.get("required", ()))
    event_or_null = {"oneOf": [{"$ref": SCHEMA.format("Event")}, {"type": "null"}]}
    for name, prop in schema["properties"].items():
        prop.pop("title", None)
        if name not in required and "anyOf" in prop:
            branches = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
            prop.update(branches[0])
            prop.pop("default", None)
    props = schema["properties"]
    for name in ("before", "after"):
        doc = props[name].get("description")
        props[name] = {**event_or_null, **({"description": doc} if doc else {})}
    props["actor"] = {"$ref": SCHEMA.format("Actor")}
    props["newSeries"] = {"$ref": SCHEMA.format("Event")}
    props["changes"]["items"] = {"$ref": SCHEMA.format("DryRun")}
    schema["examples"] = [PROPOSAL_EXAMPLE, APPROVED_EXAMPLE, FAILED_EXAMPLE]
    return {"Proposal": schema}


def parameters() -> dict[str, Any]:
    return id_parameter(
        "proposalId", "The proposal's id, as a write that waited answered it (`id`).", _PROPOSAL_ID
    )


def paths() -> dict[str, Any]:
    item = PROPOSALS_PATH.removeprefix("/api/v1") + "/{proposalId}"
    return {item: named_by("proposalId", get=_get())}


def _get() -> dict[str, Any]:
    return TAG.operation(
        operations.GET_PROPOSAL,
        "Get a proposal: a write that waits for the owner",
        "A write of a key whose writes wait for the owner's approval answers "
        "202 with a proposal; this is how the key learns what became of it: `pending` "
        "(waiting), `approved` (made: `changeIds`), `rejected`, `expired` (not decided within "
        "CALENDAR_PROPOSAL_TTL, 7 days by default) or `failed` (approved, but the event had "
        "changed since: nothing was made, `reason` says why). Only the key that made it "
        "reaches it; any other id is a 404." + RATE_DOC,
        {
            "200": answer(
                "The proposal.",
                json_content(
                    "Proposal",
                    examples={
                        "pending": {"value": PROPOSAL_EXAMPLE},
                        "approved": {"value": APPROVED_EXAMPLE},
                        "failed": {"value": FAILED_EXAMPLE},
                    },
                ),
            ),
            **errors("404"),
        },
    )


def adjust(doc_paths: dict[str, Any], schemas_out: dict[str, Any]) -> None:
    """Every write may answer 202 with a proposal; a dry run says whether it would wait."""
    waiting: dict[str, Any] = {
        "description": _WAITS,
        "headers": {
            **ref_headers(*OK_HEADERS),
            "Location": {
                "description": "The proposal (getProposal).",
                "schema": {"type": "string"},
            },
        },
        "content": json_content("Proposal", example=PROPOSAL_EXAMPLE),
    }
    writes = (
        doc_paths["/calendar/events"]["post"],
        doc_paths["/calendar/events/{eventId}"]["patch"],
        doc_paths["/calendar/events/{eventId}"]["delete"],
        doc_paths["/calendar/events/import"]["post"],
        doc_paths["/calendar/changes/{changeId}/undo"]["post"],
    )
    for write in writes:
        write["responses"]["202"] = waiting
        write["responses"] = dict(sorted(write["responses"].items()))
    create = doc_paths["/calendar/events"]["post"]["responses"]
    create["202"] = {
        **waiting,
        "description": _WAITS + _IDEMPOTENT_WAITS,
        "headers": {**waiting["headers"], **ref_headers("Idempotent-Replayed")},
    }
    schemas_out["DryRun"]["properties"]["awaitsApproval"] = {
        "const": True,
        "description": "Present when the write would wait for the owner's approval (a 202 "
        "with a proposal) instead of being made.",
    }
    schemas_out["ImportDryRun"]["properties"]["awaitsApproval"] = schemas_out["DryRun"][
        "properties"
    ]["awaitsApproval"]
