"""The time triggers' tables: the plan, the planner's place, and what each owner's plan covers.

``trigger_plan`` holds one row per occurrence, kind (``starting``, ``ended``) and offset
(minutes before the start; ``0`` for ``ended``), planned a horizon ahead and found by due time
(``ix_trigger_plan_due``): the job never looks at events to know what is due. ``status``:
``planned`` → ``fired`` (its deliveries queued) or ``skipped`` (missed by more than the
grace). ``event`` is the occurrence as the API shows it, as of the last re-plan.

``trigger_state`` has one row: the change feed's position the planner has read up to (a sync
position, ``events.sync.Position``, as JSON) and how far ahead it has planned.
``trigger_users`` says, per owner, which offsets (and whether ``ended``) the plan holds rows
for: when an owner's endpoints ask for others, the owner's horizon is planned again.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, Integer, String, Table, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from calendar_service.platform.models import UTCDateTime

PLANNED = "planned"
FIRED = "fired"
SKIPPED = "skipped"


class TriggerPlan(SQLModel, table=True):
    __tablename__ = "trigger_plan"
    __table_args__ = (
        UniqueConstraint("event_id", "kind", "minutes_before", name="uq_trigger_plan_occurrence"),
        Index("ix_trigger_plan_due", "status", "due_at"),
        Index("ix_trigger_plan_series", "series_id"),
        Index("ix_trigger_plan_user", "user_id", "due_at"),
    )

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    user_id: str = Field(max_length=40)
    calendar_id: str = Field(max_length=40)
    event_id: str = Field(max_length=64)  # the event's or the occurrence's id
    series_id: str | None = Field(default=None, max_length=64)  # an occurrence's series
    kind: str = Field(max_length=8)  # "starting" | "ended"
    minutes_before: int
    due_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    status: str = Field(max_length=8)
    event: str = Field(sa_column=Column(Text, nullable=False))  # JSON, as the API shows it
    fired_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))


class TriggerState(SQLModel, table=True):
    __tablename__ = "trigger_state"

    id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    position: str = Field(sa_column=Column(Text, nullable=False))
    planned_until: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    updated_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class TriggerUser(SQLModel, table=True):
    __tablename__ = "trigger_users"

    user_id: str = Field(sa_column=Column(String(40), primary_key=True))
    offsets: str = Field(sa_column=Column(Text, nullable=False))  # JSON list, ascending
    ended: bool
    planned_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


def _table(model: type[SQLModel]) -> Table:
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


plan_t = _table(TriggerPlan)
state_t = _table(TriggerState)
trigger_users_t = _table(TriggerUser)
