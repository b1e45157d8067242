"""OAuth 2.1 for remote MCP: clients, authorization requests and codes, tokens

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 03:40:00

What the owner grants a connected app is an ``api_keys`` row of kind ``app`` (``kind``, new
here; every existing key is a ``key``), so that scoping, permission checks, call history and
revocation are the keys' own. ``oauth_clients`` holds registered clients (the secret's SHA-256
only) and fetched Client ID Metadata Documents; ``oauth_authorizations`` one authorization
request each, pending the owner's consent, then its code (hash only), then used;
``oauth_tokens`` access and refresh tokens (hashes only) of a grant.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from migrations._frozen import UTCDateTime

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_String = sa.String


def upgrade() -> None:
    op.add_column(
        "api_keys",
        sa.Column("kind", sa.String(length=8), nullable=False, server_default="key"),
    )
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", _String(length=512), nullable=False),
        sa.Column("secret_hash", _String(length=64), nullable=True),
        sa.Column("client_metadata", sa.Text(), nullable=False),
        sa.Column("source", _String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("client_id"),
    )
    op.create_table(
        "oauth_authorizations",
        sa.Column("id", _String(length=40), nullable=False),
        sa.Column("client_id", _String(length=512), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("redirect_uri_explicit", sa.Boolean(), nullable=False),
        sa.Column("state", sa.Text(), nullable=True),
        sa.Column("code_challenge", _String(length=128), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        sa.Column("scopes", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("user_id", _String(length=40), nullable=True),
        sa.Column("code_hash", sa.String(length=64), nullable=True),
        sa.Column("permission", _String(length=16), nullable=True),
        sa.Column("calendar_id", _String(length=40), nullable=True),
        sa.Column("grant_expires_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("key_id", _String(length=40), nullable=True),
        sa.Column("used_at", UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code_hash"),
    )
    op.create_table(
        "oauth_tokens",
        sa.Column("token_hash", _String(length=64), nullable=False),
        sa.Column("kind", _String(length=8), nullable=False),
        sa.Column("key_id", _String(length=40), nullable=False),
        sa.Column("client_id", _String(length=512), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        sa.Column("scopes", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("used_at", UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["key_id"], ["api_keys.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_oauth_tokens_key_id", "oauth_tokens", ["key_id"])


def downgrade() -> None:
    op.drop_index("ix_oauth_tokens_key_id", table_name="oauth_tokens")
    op.drop_table("oauth_tokens")
    op.drop_table("oauth_authorizations")
    op.drop_table("oauth_clients")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("kind")
