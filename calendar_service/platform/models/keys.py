"""The keys' tables: an API key, and what its use leaves behind (its shared rate budget, its
call history, its idempotency records)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Index,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import serial_id, table_of, utc_field


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    name: str = Field(max_length=200)
    prefix: str = Field(max_length=40)
    secret_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    permission: str = Field(max_length=16)  # "read" | "write" | "freebusy"
    # No foreign key: a key revoked with its deleted calendar keeps the calendar's id.
    calendar_id: str | None = Field(default=None, max_length=40)
    created_at: datetime = utc_field()
    expires_at: datetime = utc_field()
    revoked_at: datetime | None = utc_field(nullable=True)
    # Who or what revoked it (REVOKED_BY in keys); NULL on rows revoked before it was kept.
    revoked_by: str | None = Field(default=None, max_length=16)
    # "key": a static API key; "app": what the owner granted a connected app (OAuth), whose
    # secret_hash is of a random secret never shown: it is reached through oauth_tokens only.
    kind: str = Field(
        default="key", sa_column=Column(String(8), nullable=False, server_default="key")
    )
    # Which of its writes wait for the owner (``governance.proposals``): "none" | "destructive"
    # (updates and deletes) | "all".
    approval: str = Field(
        default="none", sa_column=Column(String(16), nullable=False, server_default="none")
    )
    # Whether it may send invitations by email (``sendUpdates=all``; migration 0018).
    may_invite: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )
    # Whether the owner's rules for agents bind its writes (``calendar.rules``): "bound" |
    # "exempt" (migration 0029).
    rules: str = Field(
        default="bound", sa_column=Column(String(8), nullable=False, server_default="bound")
    )
    # An app password: the key signs a calendar app in with HTTP Basic (CalDAV), the owner's
    # email as the user name and the secret as the password. Only such keys are taken there.
    app_password: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )


class RateBucket(SQLModel, table=True):
    """One key's shared request budget (a token bucket), as every process on this database
    sees it: ``tokens`` left at ``updated_at`` (Unix seconds). Processes lease tokens from it
    in batches (``ratelimit``); a row idle for a day is a full bucket and is purged."""

    __tablename__ = "rate_buckets"

    key_id: str = Field(primary_key=True, max_length=40)
    tokens: float = Field(sa_column=Column(Float, nullable=False))
    updated_at: float = Field(sa_column=Column(Float, nullable=False))


class Call(SQLModel, table=True):
    """One request made with an existing key: the key's call history."""

    __tablename__ = "calls"
    # One index only: every request writes a row, and each index is a page more to commit.
    # Retention purges through it too (history.purge_calls).
    __table_args__ = (Index("ix_calls_key_at", "key_id", "at"),)

    id: int | None = serial_id()
    key_id: str = Field(foreign_key="api_keys.id", max_length=40)
    at: datetime = utc_field()
    transport: str = Field(max_length=8)  # "rest" | "mcp"
    operation: str = Field(max_length=64)
    method: str = Field(max_length=16)
    path: str = Field(max_length=512)
    status: int
    latency_ms: float
    client_addr: str | None = Field(default=None, max_length=64)
    user_agent: str | None = Field(default=None, max_length=512)
    request_id: str | None = Field(default=None, max_length=64)
    # A dry run (``?dryRun=true``): every check ran, nothing was written (migration 0014).
    dry_run: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )


class IdempotencyRecord(SQLModel, table=True):
    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("key_id", "idem_key", name="uq_idempotency_key"),)

    id: int | None = serial_id()
    key_id: str = Field(foreign_key="api_keys.id", max_length=40)
    idem_key: str = Field(max_length=255)
    fingerprint: str = Field(max_length=64)
    status_code: int | None = None
    response: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = utc_field(index=True)
    completed_at: datetime | None = utc_field(nullable=True)


keys_t = table_of(ApiKey)
rate_buckets_t = table_of(RateBucket)
calls_t = table_of(Call)
records_t = table_of(IdempotencyRecord)
