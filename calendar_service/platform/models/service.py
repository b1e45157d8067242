"""What the service keeps for itself in the database, shared by every process on it."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field


class ServiceSecret(SQLModel, table=True):
    """Secrets the service generates for itself, shared by every process on the database
    (the settings session-signing key when ``CALENDAR_SESSION_SECRET`` is not set); and, under
    a name of its own, the address ``serve`` serves on (``served_address``: not a secret)."""

    __tablename__ = "service_secrets"

    name: str = Field(primary_key=True, max_length=64)
    value: str = Field(max_length=200)
    created_at: datetime = utc_field()


secrets_t = table_of(ServiceSecret)
