"""The OAuth 2.1 tables (remote MCP): clients, authorization requests, tokens."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, String, Text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field


class OAuthClient(SQLModel, table=True):
    """An OAuth client: registered (RFC 7591) or known by its metadata document's URL."""

    __tablename__ = "oauth_clients"

    client_id: str = Field(primary_key=True, max_length=512)
    secret_hash: str | None = Field(default=None, max_length=64)  # SHA-256 of the secret
    client_metadata: str = Field(sa_column=Column(Text, nullable=False))  # JSON, no secret
    source: str = Field(max_length=16)  # "registered" | "document"
    created_at: datetime = utc_field()  # for a document: when it was fetched


class OAuthAuthorization(SQLModel, table=True):
    """One authorization request: pending consent, then a code (its hash), then used."""

    __tablename__ = "oauth_authorizations"

    id: str = Field(primary_key=True, max_length=40)
    client_id: str = Field(max_length=512)
    redirect_uri: str = Field(sa_column=Column(Text, nullable=False))
    redirect_uri_explicit: bool
    state: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    code_challenge: str = Field(max_length=128)
    resource: str = Field(sa_column=Column(Text, nullable=False))
    scopes: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = utc_field()
    expires_at: datetime = utc_field()  # the request's, then (approved) the code's
    user_id: str | None = Field(default=None, max_length=40)
    code_hash: str | None = Field(
        default=None, sa_column=Column(String(64), nullable=True, unique=True)
    )
    permission: str | None = Field(default=None, max_length=16)
    calendar_id: str | None = Field(default=None, max_length=40)
    grant_expires_at: datetime | None = utc_field(nullable=True)
    approval: str | None = Field(default=None, max_length=16)  # the grant's, once approved
    may_invite: bool | None = None  # the grant's, once approved: it may send invitations
    key_id: str | None = Field(default=None, max_length=40)  # the grant, once exchanged
    used_at: datetime | None = utc_field(nullable=True)


class OAuthToken(SQLModel, table=True):
    """An access or refresh token (its hash) of a grant (an ``api_keys`` row of kind app)."""

    __tablename__ = "oauth_tokens"

    token_hash: str = Field(primary_key=True, max_length=64)
    kind: str = Field(max_length=8)  # "access" | "refresh"
    key_id: str = Field(foreign_key="api_keys.id", index=True, max_length=40)
    client_id: str = Field(max_length=512)
    resource: str = Field(sa_column=Column(Text, nullable=False))
    scopes: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = utc_field()
    expires_at: datetime = utc_field()
    used_at: datetime | None = utc_field(nullable=True)  # a refresh token, once rotated


oauth_clients_t = table_of(OAuthClient)
oauth_authorizations_t = table_of(OAuthAuthorization)
oauth_tokens_t = table_of(OAuthToken)
