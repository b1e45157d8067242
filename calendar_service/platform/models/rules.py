"""The owner's rules for agents (``calendar.rules``): one row per owner who has set any, the
rules as the JSON object the API shows (checked before they are stored)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field as PydanticField
from sqlalchemy import Column, Text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field
from calendar_service.platform.models.wire import Wire


class SchedulingRules(SQLModel, table=True):
    __tablename__ = "scheduling_rules"

    user_id: str = Field(primary_key=True, foreign_key="users.id", max_length=40)
    rules: str = Field(sa_column=Column(Text, nullable=False))  # the rules object, as JSON
    updated_at: datetime = utc_field()


rules_t = table_of(SchedulingRules)


class SchedulingRulesPublic(Wire):
    """``getSchedulingRules``: the owner's rules for agents, and whether they bind the key."""

    rules: dict[str, Any] = PydanticField(
        description="The owner's rules (docs/rules.md): workingHours, bufferMinutes, "
        "maxMeetingsPerDay, maxMeetingMinutesPerDay, focus, noMeetingDays, minNoticeMinutes, "
        "maxDaysAhead, maxDurationMinutes (each only when set) and onViolation."
    )
    binds_this_key: bool = PydanticField(
        description="Whether they bind this key's writes (false for a key the owner made exempt)."
    )
