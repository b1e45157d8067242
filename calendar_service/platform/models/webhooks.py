"""The webhooks' tables: the owner's endpoint, the outbox of deliveries, each attempt."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, Text, text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import serial_id, table_of, utc_field

OWNER_ENDPOINT = text("key_id IS NULL")
# An endpoint's status: ``active``, ``disabled``, ``deleted``.
ENDPOINT_DELETED = "deleted"
"""The owner's own endpoint among ``webhook_endpoints`` (the others are keys' subscriptions)."""


class WebhookEndpoint(SQLModel, table=True):
    """An owner's own webhook endpoint (``key_id`` NULL, at most one an owner) or a key's
    subscription (``calendar_service.delivery.subscriptions``): where deliveries go, signed with
    ``secret``."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        Index(
            "ux_webhook_endpoints_owner",
            "user_id",
            unique=True,
            sqlite_where=OWNER_ENDPOINT,
            postgresql_where=OWNER_ENDPOINT,
        ),
        Index("ix_webhook_endpoints_user_key", "user_id", "key_id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    url: str = Field(max_length=2048)
    secret: str = Field(max_length=100)
    previous_secret: str | None = Field(default=None, max_length=100)
    previous_secret_expires_at: datetime | None = utc_field(nullable=True)
    status: str = Field(default="active", max_length=16)  # "active" | "disabled"
    disabled_reason: str | None = Field(default=None, max_length=200)
    failing_since: datetime | None = utc_field(nullable=True)
    created_at: datetime = utc_field()
    updated_at: datetime = utc_field()
    # A subscription's key (no foreign key: keys are kept, revoked); NULL: the owner's own.
    key_id: str | None = Field(default=None, max_length=40)
    # JSON lists: the event types it takes (NULL: the change types), the calendars (NULL:
    # every one its key reaches), calendar.event.starting's minutes before (NULL: none).
    events: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    calendar_ids: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    minutes_before: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class WebhookDelivery(SQLModel, table=True):
    """The outbox: one row per change per endpoint, written in the change's transaction."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_user", "user_id", "created_at"),
    )

    id: str = Field(primary_key=True, max_length=40)  # "evt_…": the stable webhook-id
    user_id: str = Field(foreign_key="users.id", max_length=40)
    endpoint_id: str = Field(foreign_key="webhook_endpoints.id", max_length=40)
    event_type: str = Field(max_length=64)
    payload: str = Field(sa_column=Column(Text, nullable=False))
    # pending → succeeded, or retrying → failed
    status: str = Field(default="pending", max_length=16)
    attempts: int = 0
    next_attempt_at: datetime = utc_field()
    lease_until: datetime | None = utc_field(nullable=True)
    last_status_code: int | None = None
    last_error: str | None = Field(default=None, max_length=500)
    created_at: datetime = utc_field()
    completed_at: datetime | None = utc_field(nullable=True)


class WebhookAttempt(SQLModel, table=True):
    __tablename__ = "webhook_attempts"

    id: int | None = serial_id()
    delivery_id: str = Field(foreign_key="webhook_deliveries.id", index=True, max_length=40)
    at: datetime = utc_field()
    status_code: int | None = None
    duration_ms: float = 0.0
    response_excerpt: str | None = Field(default=None, max_length=1000)
    error: str | None = Field(default=None, max_length=500)


endpoints_t = table_of(WebhookEndpoint)
deliveries_t = table_of(WebhookDelivery)
attempts_t = table_of(WebhookAttempt)
