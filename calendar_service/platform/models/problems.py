"""What every front answers when a call fails: RFC 9457 problem details."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import Field as PydanticField

from calendar_service.platform.models.availability import Conflicting, Interval


class FieldErrorPublic(BaseModel):
    field: str
    message: str


class RuleErrorPublic(BaseModel):
    rule: str = PydanticField(description="The rule broken, as named in the rules object.")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None
    errors: list[FieldErrorPublic | RuleErrorPublic] | None = PydanticField(
        default=None,
        description="validation_error: each bad field; rule_violation: each rule broken.",
    )
    suggestions: list[Interval] | None = PydanticField(
        default=None,
        description="rule_violation only: up to 3 times of the same length that keep the rules.",
    )
    conflicts: list[Conflicting] | None = PydanticField(
        default=None, description="ifFree's conflict only: the overlapping busy events."
    )
