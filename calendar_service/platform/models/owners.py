"""The owners' tables: who owns calendars, and the browsers signed in to the settings pages."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, String
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import serial_id, table_of, utc_field


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: str = Field(primary_key=True, max_length=40)
    email: str = Field(sa_column=Column(String(320), nullable=False, unique=True))
    password_hash: str | None = Field(default=None, max_length=200)
    created_at: datetime = utc_field()


class OwnerSession(SQLModel, table=True):
    """A browser signed in to the settings pages. The cookie carries a random token; only its
    SHA-256 is stored, so a copy of this table signs nobody in."""

    __tablename__ = "owner_sessions"

    id: str = Field(primary_key=True, max_length=64)  # sha256 hex of the cookie's token
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    csrf_token: str = Field(max_length=64)  # the synchronizer token every form must echo
    # Changes when the password does: a new password signs every browser out.
    password_fingerprint: str = Field(max_length=64)
    created_at: datetime = utc_field()
    expires_at: datetime = utc_field(index=True)


class SignInFailure(SQLModel, table=True):
    """A failed sign-in, counted per email and per client address to throttle guessing."""

    __tablename__ = "sign_in_failures"
    __table_args__ = (Index("ix_sign_in_failures_bucket_at", "bucket", "at"),)

    id: int | None = serial_id()
    bucket: str = Field(max_length=64)  # sha256 hex of "email:…" or "addr:…", never the text
    at: datetime = utc_field(index=True)


users_t = table_of(User)
sessions_t = table_of(OwnerSession)
failures_t = table_of(SignInFailure)
