"""The ``mail_outbox`` table (migration 0018): one invitation or cancellation to one recipient.

A row is written in the transaction of the change it tells of (``invitations``), unique on
``(change_id, event_id, recipient)`` so that no change mails anyone twice, and sent by the
worker (``webhooks.mail``) as the webhook outbox is: claimed under a short lease, retried with
backoff, each attempt counted. ``payload`` (JSON) is what the message is made of
(``messages.build``), made into the RFC 5322 text when it is sent, off the request.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, Integer, Table, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from calendar_service.platform.models import UTCDateTime

PENDING = "pending"
RETRYING = "retrying"
SENT = "sent"
FAILED = "failed"
OPEN = (PENDING, RETRYING)
REQUEST = "REQUEST"
CANCEL = "CANCEL"


class MailMessage(SQLModel, table=True):
    """One message to one recipient (see the module's docstring)."""

    __tablename__ = "mail_outbox"
    __table_args__ = (
        UniqueConstraint(
            "change_id", "event_id", "recipient", name="uq_mail_outbox_change_recipient"
        ),
        Index("ix_mail_outbox_user_created", "user_id", "created_at"),
        Index("ix_mail_outbox_due", "status", "next_attempt_at"),
        Index("ix_mail_outbox_key_created", "key_id", "created_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(max_length=40)  # the owner, the organizer
    key_id: str | None = Field(default=None, max_length=40)  # the key that asked for it
    change_id: str = Field(max_length=40)
    event_id: str = Field(max_length=64)
    recipient: str = Field(max_length=320)
    method: str = Field(max_length=16)  # REQUEST | CANCEL
    subject: str = Field(sa_column=Column(Text, nullable=False))
    payload: str = Field(sa_column=Column(Text, nullable=False))  # JSON (messages.build)
    status: str = Field(max_length=16)
    attempts: int = Field(sa_column=Column(Integer, nullable=False))
    next_attempt_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    lease_until: datetime | None = Field(
        default=None, sa_column=Column(UTCDateTime(), nullable=True)
    )
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    sent_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))


def _table() -> Table:
    table: Table = MailMessage.__table__  # type: ignore[attr-defined]
    return table


mail_t = _table()
