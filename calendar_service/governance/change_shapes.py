"""The change log's public shapes, which the OpenAPI document and the MCP tools share: a change
(``ChangePublic``), who made it (``Actor``), a page of them (``ChangeList``); a write that waits
for the owner (``ProposalPublic``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from pydantic.alias_generators import to_camel

_EVENT_DOC = "The event as the API showed it"


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Actor(_Wire):
    type: Literal["key", "app", "owner", "system", "attendee", "guest"] = PydanticField(
        description="key: an API key; app: a connected app (OAuth); owner: the owner in "
        "person (settings pages, CLI); attendee: an attendee's reply to an invitation; guest: "
        "a person booking through a scheduling link (id: the link's)."
    )
    id: str | None = PydanticField(default=None, description="The key's (or the owner's) id.")
    name: str = PydanticField(
        description="The key's or app's name, the owner's email, or the attendee's."
    )


class ChangePublic(_Wire):
    """One change to an event: what it was before and after, who made it, through what."""

    id: str = PydanticField(description="chg_…: what undoChange takes.")
    at: str = PydanticField(json_schema_extra={"format": "date-time"})
    kind: Literal["created", "updated", "deleted"]
    event_id: str = PydanticField(
        description="The event, series or occurrence changed (a scope=following change: the "
        "series ended there)."
    )
    recurring_event_id: str | None = PydanticField(
        default=None, description="An occurrence's change: its series' id."
    )
    calendar_id: str
    actor: Actor
    transport: Literal["rest", "mcp", "caldav", "settings", "cli", "import", "link"] = (
        PydanticField(
            description="caldav: a calendar app; link: an attendee's reply link, or a "
            "scheduling link's booking."
        )
    )
    request_id: str | None = PydanticField(
        default=None, description="The request's id, as in the key's call history."
    )
    before: dict[str, Any] | None = PydanticField(
        description=_EVENT_DOC + " before (null: a create's)."
    )
    after: dict[str, Any] | None = PydanticField(
        description=_EVENT_DOC + " after (null: a delete's)."
    )
    reply: dict[str, Any] | None = PydanticField(
        default=None,
        description="An attendee's reply: {email, responseStatus} (actor attendee).",
    )
    new_series: dict[str, Any] | None = PydanticField(
        default=None,
        description="A change of an occurrence and the following ones: the new series it "
        "started there (undone with the change).",
    )
    occurrences: int | None = PydanticField(
        default=None,
        description="A change of a series: how many of its occurrences it touched (null: endless).",
    )
    undoes: str | None = PydanticField(default=None, description="An undo: the change undone.")
    undone_by: str | None = PydanticField(
        default=None, description="The undo that undid this change, if any."
    )
    proposal_id: str | None = PydanticField(
        default=None,
        description="A change that waited for the owner's approval: its proposal (prop_…).",
    )
    approved_by: Actor | None = PydanticField(
        default=None, description="A change that waited: the owner who approved it."
    )


class ChangeList(_Wire):
    changes: list[ChangePublic] = PydanticField(description="Newest first.")
    next_page_token: str | None = PydanticField(
        default=None, description="Present when more remain: pass it back as pageToken."
    )


class ProposalPublic(_Wire):
    """A write that waits for the owner's approval (the key's ``approval``): the change it
    would make, and what became of it."""

    id: str = PydanticField(description="prop_…: what getProposal takes.")
    status: Literal["pending", "approved", "rejected", "expired", "failed"] = PydanticField(
        description="pending: waits for the owner; approved: made (changeIds); rejected: not "
        "made; expired: not decided in time, not made; failed: approved, but the event had "
        "changed since, not made (reason)."
    )
    kind: Literal["created", "updated", "deleted"]
    event_id: str
    calendar_id: str
    before: dict[str, Any] | None = PydanticField(
        description=_EVENT_DOC + " when proposed (null: a create's)."
    )
    after: dict[str, Any] | None = PydanticField(
        description="The event as it would be (null: a delete's)."
    )
    created_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    expires_at: str = PydanticField(
        json_schema_extra={"format": "date-time"},
        description="Still pending then, it expires (CALENDAR_PROPOSAL_TTL).",
    )
    operation: str = PydanticField(description="The operation the key called.")
    actor: Actor
    transport: Literal["rest", "mcp", "caldav"]
    request_id: str | None = PydanticField(
        default=None, description="The request's id, as in the key's call history."
    )
    changes: list[dict[str, Any]] | None = PydanticField(
        default=None, description="An import: every change it would make (kind, before, after)."
    )
    occurrences: int | None = None
    new_series: dict[str, Any] | None = None
    undoes: str | None = PydanticField(default=None, description="An undo: the change undone.")
    decided_at: str | None = PydanticField(default=None, json_schema_extra={"format": "date-time"})
    change_ids: list[str] | None = PydanticField(
        default=None, description="Approved: the changes made (listChanges shows them)."
    )
    rule_violations: list[dict[str, str]] | None = PydanticField(
        default=None,
        description="The owner's rules for agents it breaks ({rule, message}): it waits "
        "because the owner asked to decide such writes (onViolation: ask); or, failed with "
        "code rule_violation, the rules it broke when approved.",
    )
    code: str | None = PydanticField(
        default=None, description="Failed: why (conflict, rule_violation)."
    )
    reason: str | None = PydanticField(default=None, description="Failed: why, in words.")
