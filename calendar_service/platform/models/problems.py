"""What every front answers when a call fails: RFC 9457 problem details."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import Field as PydanticField

from calendar_service.platform.models.availability import Conflicting


class FieldErrorPublic(BaseModel):
    field: str
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None
    errors: list[FieldErrorPublic] | None = None
    conflicts: list[Conflicting] | None = PydanticField(
        default=None, description="ifFree's conflict only: the overlapping busy events."
    )
