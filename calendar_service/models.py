"""The schema (SQLModel tables) and the public shapes of each entity.

One family per entity: the table class, and the pydantic shapes that the REST API, the MCP tools
and the OpenAPI document share (``EventCreate``, ``EventUpdate``, ``EventPublic``...), so the fronts
cannot drift. Hot paths read and write the tables with SQLAlchemy Core statements
(``Event.__table__``), not ORM objects.

Date-times are stored as UTC; ``UTCDateTime`` makes them timezone-aware on the way out on every
database (SQLite keeps ISO text, PostgreSQL ``timestamptz``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonDict
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from calendar_service.recurrence import MAX_LINE
from calendar_service.schema_patterns import COLOR_PATTERN, TOOL_DATE_OR_DATE_TIME_PATTERN
from calendar_service.timeutil import RANGE_TEXT, from_utc_text, utc_text

TITLE_MAX = 300
DEFAULT_CALENDAR_NAME = "Личное"


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC ``datetime`` on every backend.

    PostgreSQL: ``timestamptz``. SQLite: the fixed-width UTC text of ``timeutil.utc_text``
    (``2026-03-02T08:30:00.000000Z``, which sorts in time order); hot paths that read rows
    straight from the driver format that text without parsing it (``timeutil.format_utc``)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String())
        return dialect.type_descriptor(self.impl)

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | str | None:
        return None if value is None else to_db(value, dialect.name)

    def process_result_value(self, value: datetime | str | None, dialect: Any) -> datetime | None:
        return None if value is None else from_db(value)


def to_db(value: datetime, dialect_name: str) -> datetime | str:
    """A date-time as the driver takes it for a ``UTCDateTime`` column."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTCDateTime column")
    return utc_text(value) if dialect_name == "sqlite" else value.astimezone(UTC)


def from_db(value: datetime | str) -> datetime:
    """A ``UTCDateTime`` column's value as the driver returns it, as an aware UTC datetime."""
    if type(value) is str:
        return from_utc_text(value)
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class utc_text_of(FunctionElement[str]):  # lower case: used like a SQL function
    """A ``UTCDateTime`` column as the text SQLite stores (``timeutil.utc_text``), on every
    backend: PostgreSQL formats it in the query, so hot paths read the same text everywhere
    and turn it into RFC 3339 by slicing (no datetime objects per value)."""

    type = String()
    inherit_cache = True
    name = "utc_text_of"


@compiles(utc_text_of)
def _utc_text_of_stored(element: utc_text_of, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.clauses, **kw))


@compiles(utc_text_of, "postgresql")
def _utc_text_of_postgresql(element: utc_text_of, compiler: Any, **kw: Any) -> str:
    column = compiler.process(element.clauses, **kw)
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"


def _dt(nullable: bool = False, index: bool = False) -> Any:
    return Field(sa_column=Column(UTCDateTime(), nullable=nullable, index=index))


# ---------------------------------------------------------------------------------------------
# Tables


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: str = Field(primary_key=True, max_length=40)
    email: str = Field(sa_column=Column(String(320), nullable=False, unique=True))
    password_hash: str | None = Field(default=None, max_length=200)
    created_at: datetime = _dt()


class Calendar(SQLModel, table=True):
    __tablename__ = "calendars"
    __table_args__ = (UniqueConstraint("user_id", "name", name="uq_calendars_user_name"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    name: str = Field(max_length=200)
    time_zone: str = Field(default="UTC", max_length=64)
    is_default: bool = False
    # Longest event ever stored in this calendar (seconds). It only grows; the list query uses
    # it to bound ``starts_at`` from below so that the index does the overlap work.
    max_event_seconds: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    # Counts the changes of the calendar's series and their exceptions, kept by triggers on
    # ``events`` (migration 0006): the list reads a calendar's series from memory while it is
    # unchanged (``events.queries.window_series``). 0: the calendar never had a series.
    series_version: int = Field(
        default=0, sa_column=Column(BigInteger, nullable=False, server_default="0")
    )
    created_at: datetime = _dt()
    # "#rrggbb" (lower case), or NULL: none chosen.
    color: str | None = Field(default=None, max_length=7)


SERIES_ROWS = text("recurrence IS NOT NULL")
"""The rows that are series (the partial index ``ix_events_series`` holds only them)."""


class Event(SQLModel, table=True):
    """A single event, a series (``recurrence`` set) or an exception of a series (a changed or
    cancelled occurrence: ``recurring_event_id`` and ``original_starts_at`` set, ``id`` the
    occurrence id). See ``calendar_service.recurrence``."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_calendar_start", "calendar_id", "starts_at", "id"),
        # The list finds the series that may occur in a window here, without reading their
        # rows (queries.SERIES_KEYS); only series rows are in it.
        Index(
            "ix_events_series",
            "calendar_id",
            "starts_at",
            "recurrence_ends_at",
            "id",
            "updated_at",
            sqlite_where=SERIES_ROWS,
            postgresql_where=SERIES_ROWS,
        ),
        Index("ix_events_recurring", "recurring_event_id", "original_starts_at"),
    )

    # 64: an occurrence id is its series' id, "_" and a 16-character UTC stamp.
    id: str = Field(primary_key=True, max_length=64)
    calendar_id: str = Field(foreign_key="calendars.id", max_length=40)
    title: str = Field(max_length=TITLE_MAX)
    starts_at: datetime = _dt()
    ends_at: datetime = _dt()
    all_day: bool = False
    description: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    location: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = _dt()
    updated_at: datetime = _dt()
    # Series: the normalized RFC 5545 lines (JSON array); starts_at/ends_at are DTSTART/DTEND.
    recurrence: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # Series: the start of the rule's last instance and the end of the last occurrence,
    # computed when written (NULL: endless).
    recurrence_last_start: datetime | None = _dt(nullable=True)
    recurrence_ends_at: datetime | None = _dt(nullable=True)
    # Exceptions: the series and the occurrence's original start.
    recurring_event_id: str | None = Field(default=None, max_length=64)
    original_starts_at: datetime | None = _dt(nullable=True)
    # "confirmed" | "cancelled" (a cancelled occurrence of a series)
    status: str = Field(
        default="confirmed",
        sa_column=Column(String(16), nullable=False, server_default="confirmed"),
    )
    # "opaque" (busy: the default) | "transparent" (shown, but free time): Google's field.
    transparency: str = Field(
        default="opaque",
        sa_column=Column(String(16), nullable=False, server_default="opaque"),
    )
    # Timed series: the IANA zone whose wall clock it repeats at, when not its calendar's
    # (Google's start.timeZone); NULL: the calendar's zone.
    time_zone: str | None = Field(default=None, max_length=64)


class EventSync(SQLModel, table=True):
    """The last change of each event changed in the last ``CALENDAR_SYNC_RETENTION_DAYS``: what a
    sync token's next sync returns (``events.sync``). Written by triggers on ``events``
    (migration 0009), whatever wrote the event; a deleted event's row is its tombstone.

    ``seq`` is when the change was made, in the order sync tokens read: on PostgreSQL the
    writing transaction's id (``pg_current_xact_id()``), compared with the snapshot a token
    holds; on SQLite the next value of ``sync_clock`` (one writer at a time). See docs/sync.md."""

    __tablename__ = "event_sync"
    __table_args__ = (
        Index("ix_event_sync_calendar_seq", "calendar_id", "seq", "event_id"),
        Index("ix_event_sync_changed_at", "changed_at"),
    )

    event_id: str = Field(primary_key=True, max_length=64)
    calendar_id: str = Field(max_length=40)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    deleted: bool = False
    changed_at: datetime = _dt()


class SyncClock(SQLModel, table=True):
    """SQLite's change counter (one row): ``event_sync.seq`` of the last change. PostgreSQL
    has the table too but numbers changes by transaction id."""

    __tablename__ = "sync_clock"

    id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    value: int = Field(sa_column=Column(BigInteger, nullable=False))


class RateBucket(SQLModel, table=True):
    """One key's shared request budget (a token bucket), as every process on this database
    sees it: ``tokens`` left at ``updated_at`` (Unix seconds). Processes lease tokens from it
    in batches (``ratelimit``); a row idle for a day is a full bucket and is purged."""

    __tablename__ = "rate_buckets"

    key_id: str = Field(primary_key=True, max_length=40)
    tokens: float = Field(sa_column=Column(Float, nullable=False))
    updated_at: float = Field(sa_column=Column(Float, nullable=False))


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
    created_at: datetime = _dt()
    expires_at: datetime = _dt()
    revoked_at: datetime | None = _dt(nullable=True)
    # Who or what revoked it (REVOKED_BY in keys); NULL on rows revoked before it was kept.
    revoked_by: str | None = Field(default=None, max_length=16)
    # "key": a static API key; "app": what the owner granted a connected app (OAuth), whose
    # secret_hash is of a random secret never shown: it is reached through oauth_tokens only.
    kind: str = Field(
        default="key", sa_column=Column(String(8), nullable=False, server_default="key")
    )
    # Which of its writes wait for the owner (``changes.proposals``): "none" | "destructive"
    # (updates and deletes) | "all".
    approval: str = Field(
        default="none", sa_column=Column(String(16), nullable=False, server_default="none")
    )


class OAuthClient(SQLModel, table=True):
    """An OAuth client: registered (RFC 7591) or known by its metadata document's URL."""

    __tablename__ = "oauth_clients"

    client_id: str = Field(primary_key=True, max_length=512)
    secret_hash: str | None = Field(default=None, max_length=64)  # SHA-256 of the secret
    client_metadata: str = Field(sa_column=Column(Text, nullable=False))  # JSON, no secret
    source: str = Field(max_length=16)  # "registered" | "document"
    created_at: datetime = _dt()  # for a document: when it was fetched


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
    created_at: datetime = _dt()
    expires_at: datetime = _dt()  # the request's, then (approved) the code's
    user_id: str | None = Field(default=None, max_length=40)
    code_hash: str | None = Field(
        default=None, sa_column=Column(String(64), nullable=True, unique=True)
    )
    permission: str | None = Field(default=None, max_length=16)
    calendar_id: str | None = Field(default=None, max_length=40)
    grant_expires_at: datetime | None = _dt(nullable=True)
    approval: str | None = Field(default=None, max_length=16)  # the grant's, once approved
    key_id: str | None = Field(default=None, max_length=40)  # the grant, once exchanged
    used_at: datetime | None = _dt(nullable=True)


class OAuthToken(SQLModel, table=True):
    """An access or refresh token (its hash) of a grant (an ``api_keys`` row of kind app)."""

    __tablename__ = "oauth_tokens"

    token_hash: str = Field(primary_key=True, max_length=64)
    kind: str = Field(max_length=8)  # "access" | "refresh"
    key_id: str = Field(foreign_key="api_keys.id", index=True, max_length=40)
    client_id: str = Field(max_length=512)
    resource: str = Field(sa_column=Column(Text, nullable=False))
    scopes: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = _dt()
    expires_at: datetime = _dt()
    used_at: datetime | None = _dt(nullable=True)  # a refresh token, once rotated


class Call(SQLModel, table=True):
    """One request made with an existing key: the key's call history."""

    __tablename__ = "calls"
    # One index only: every request writes a row, and each index is a page more to commit.
    # Retention purges through it too (history.purge_calls).
    __table_args__ = (Index("ix_calls_key_at", "key_id", "at"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    key_id: str = Field(foreign_key="api_keys.id", max_length=40)
    at: datetime = _dt()
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

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    key_id: str = Field(foreign_key="api_keys.id", max_length=40)
    idem_key: str = Field(max_length=255)
    fingerprint: str = Field(max_length=64)
    status_code: int | None = None
    response: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = _dt(index=True)
    completed_at: datetime | None = _dt(nullable=True)


class WebhookEndpoint(SQLModel, table=True):
    __tablename__ = "webhook_endpoints"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", unique=True, max_length=40)
    url: str = Field(max_length=2048)
    secret: str = Field(max_length=100)
    previous_secret: str | None = Field(default=None, max_length=100)
    previous_secret_expires_at: datetime | None = _dt(nullable=True)
    status: str = Field(default="active", max_length=16)  # "active" | "disabled"
    disabled_reason: str | None = Field(default=None, max_length=200)
    failing_since: datetime | None = _dt(nullable=True)
    created_at: datetime = _dt()
    updated_at: datetime = _dt()


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
    next_attempt_at: datetime = _dt()
    lease_until: datetime | None = _dt(nullable=True)
    last_status_code: int | None = None
    last_error: str | None = Field(default=None, max_length=500)
    created_at: datetime = _dt()
    completed_at: datetime | None = _dt(nullable=True)


class WebhookAttempt(SQLModel, table=True):
    __tablename__ = "webhook_attempts"

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    delivery_id: str = Field(foreign_key="webhook_deliveries.id", index=True, max_length=40)
    at: datetime = _dt()
    status_code: int | None = None
    duration_ms: float = 0.0
    response_excerpt: str | None = Field(default=None, max_length=1000)
    error: str | None = Field(default=None, max_length=500)


class OwnerSession(SQLModel, table=True):
    """A browser signed in to the settings pages. The cookie carries a random token; only its
    SHA-256 is stored, so a copy of this table signs nobody in."""

    __tablename__ = "owner_sessions"

    id: str = Field(primary_key=True, max_length=64)  # sha256 hex of the cookie's token
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    csrf_token: str = Field(max_length=64)  # the synchronizer token every form must echo
    # Changes when the password does: a new password signs every browser out.
    password_fingerprint: str = Field(max_length=64)
    created_at: datetime = _dt()
    expires_at: datetime = _dt(index=True)


class SignInFailure(SQLModel, table=True):
    """A failed sign-in, counted per email and per client address to throttle guessing."""

    __tablename__ = "sign_in_failures"
    __table_args__ = (Index("ix_sign_in_failures_bucket_at", "bucket", "at"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    bucket: str = Field(max_length=64)  # sha256 hex of "email:…" or "addr:…", never the text
    at: datetime = _dt(index=True)


class ServiceSecret(SQLModel, table=True):
    """Secrets the service generates for itself, shared by every process on the database
    (the settings session-signing key when ``CALENDAR_SESSION_SECRET`` is not set); and, under
    a name of its own, the address ``serve`` serves on (``served_address``: not a secret)."""

    __tablename__ = "service_secrets"

    name: str = Field(primary_key=True, max_length=64)
    value: str = Field(max_length=200)
    created_at: datetime = _dt()


class IcalFeed(SQLModel, table=True):
    """A calendar's iCalendar subscription feed (``/ical/<token>.ics``). The URL's token is
    the secret: only its SHA-256 is stored, so a copy of this table subscribes nobody."""

    __tablename__ = "ical_feeds"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    # No foreign key: a feed revoked with its deleted calendar keeps it, and its history.
    calendar_id: str = Field(max_length=40)
    token_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    prefix: str = Field(max_length=40)  # the token's first characters, to tell feeds apart
    created_at: datetime = _dt()
    revoked_at: datetime | None = _dt(nullable=True)
    last_fetched_at: datetime | None = _dt(nullable=True)


class IcalFeedFetch(SQLModel, table=True):
    """One fetch of a feed: its own history, which its owner reads (never the URL)."""

    __tablename__ = "ical_feed_fetches"
    __table_args__ = (Index("ix_ical_feed_fetches_feed_at", "feed_id", "at"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    feed_id: str = Field(foreign_key="ical_feeds.id", max_length=40)
    at: datetime = _dt()
    status: int  # 200, or 304 (the client's copy was current)
    events: int  # VEVENTs served (0 for a 304)
    client_addr: str | None = Field(default=None, max_length=64)
    user_agent: str | None = Field(default=None, max_length=512)


class IcalUid(SQLModel, table=True):
    """The iCalendar UID (and RECURRENCE-ID, for an occurrence imported on its own) an event
    was imported with, per calendar: what makes importing the same file twice a no-op, and
    the UID the feed gives the event back under."""

    __tablename__ = "ical_uids"
    __table_args__ = (UniqueConstraint("calendar_id", "uid_hash", name="uq_ical_uids_calendar"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    calendar_id: str = Field(foreign_key="calendars.id", max_length=40)
    uid_hash: str = Field(max_length=64)  # sha256 hex of the UID (and RECURRENCE-ID)
    uid: str = Field(sa_column=Column(Text, nullable=False))
    event_id: str = Field(sa_column=Column(String(64), nullable=False, index=True))


# ---------------------------------------------------------------------------------------------
# Public shapes (wire format: camelCase JSON)


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class _Input(_Wire):
    # Strict types: "true" is not a boolean and 5 is not a title. Unknown fields are refused
    # so that a typo such as "startAt" is an error rather than a silently ignored value.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, strict=True, extra="forbid"
    )


# What an input date-time may be (a date, a time with or without an offset): JSON Schema's
# ``format: date-time`` would refuse the dates and local times the core accepts and the
# descriptions invite (see ``schema_patterns``).
_INPUT_TIME: JsonDict = {"pattern": TOOL_DATE_OR_DATE_TIME_PATTERN}

_DATE_TIME_DOC = (
    "RFC 3339 date-time, e.g. 2026-03-02T09:30:00+01:00. Without an offset it is read in the "
    "target calendar's time zone. With allDay, a date (2026-03-02) or a midnight date-time. "
    f"From {RANGE_TEXT}."
)


_RECURRENCE_DOC = (
    "Makes a recurring series: RFC 5545 lines as Google Calendar takes them, one RRULE line "
    'plus any EXDATE/RDATE lines, e.g. ["RRULE:FREQ=WEEKLY;BYDAY=MO"] (every Monday at '
    'startsAt\'s time), ["RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU;COUNT=10"], '
    '["RRULE:FREQ=MONTHLY;BYDAY=-1FR", "EXDATE:20260327T090000Z"]. FREQ is DAILY, WEEKLY, '
    "MONTHLY or YEARLY; COUNT or UNTIL, not both. startsAt/endsAt are the first occurrence; "
    "the series repeats at the same local time in the calendar's time zone. All-day series "
    "take dates (EXDATE;VALUE=DATE:20260309)."
)


_TIME_ZONE_DOC = (
    "IANA time zone of the event's wall clock, e.g. America/New_York (Google Calendar's "
    "start.timeZone); default: the calendar's. startsAt/endsAt and recurrence date-times "
    "without an offset are read in it, and a series repeats at the same local time in it "
    "(a New York series in a Berlin calendar stays at 10:00 New York time when the two "
    "change their clocks on different dates). Timed events only; kept by series (shown on "
    "them), a single event keeps none."
)


TRANSPARENCIES = ("opaque", "transparent")
_TRANSPARENCY_DOC = (
    "opaque (the default): the event blocks its time (busy); transparent: it is shown but "
    "leaves its time free (queryFreeBusy and findFreeTime ignore it), Google Calendar's field."
)
_IF_FREE_DOC = (
    "Create the event only if none of the target calendar's busy (opaque) events or "
    "occurrences overlaps it, checked atomically with the insert: otherwise 409 with code "
    "conflict and the overlapping times. For agents booking a slot others may be taking."
)


def _color_branch(schema: dict[str, Any]) -> None:
    """``color``'s string branch with the pattern the core checks (``calendars.check_color``)."""
    for branch in schema["anyOf"]:
        if branch.get("type") == "string":
            branch["pattern"] = COLOR_PATTERN


class CalendarPublic(_Wire):
    id: str
    name: str
    time_zone: str = PydanticField(description="IANA time zone, e.g. Europe/Berlin")
    is_default: bool
    color: str | None = PydanticField(
        description="The calendar's colour as #rrggbb (lower case), or null: none chosen.",
        json_schema_extra=_color_branch,
    )


def _recurrence_lines(schema: dict[str, Any]) -> None:
    """The ``recurrence`` property's array branch with the limits of its lines, which the core
    checks (``recurrence.parse_recurrence``): published by every front that shows the schema
    (the OpenAPI document, the MCP tools' input schemas)."""
    for branch in schema["anyOf"]:
        if branch.get("type") == "array":
            branch["minItems"] = 1
            branch["items"] = {"type": "string", "minLength": 1, "maxLength": MAX_LINE}


class EventCreate(_Input):
    """CreateEvent: the body of ``POST /api/v1/calendar/events``."""

    title: str = PydanticField(
        description="1 to 300 characters after trimming.",
        json_schema_extra={"maxLength": TITLE_MAX, "minLength": 1},
    )
    starts_at: str = PydanticField(description=_DATE_TIME_DOC, json_schema_extra=_INPUT_TIME)
    ends_at: str = PydanticField(
        description=_DATE_TIME_DOC + " Must not be before startsAt.",
        json_schema_extra=_INPUT_TIME,
    )
    calendar_id: str | None = PydanticField(
        default=None, description="Identifier of the target calendar."
    )
    calendar: str | None = PydanticField(
        default=None,
        description=(
            "Name of the target calendar (default: the key's calendar, or "
            f"{DEFAULT_CALENDAR_NAME!r} for an all-calendars key). If calendarId is also sent, "
            "both must name the same one."
        ),
        json_schema_extra={"default": DEFAULT_CALENDAR_NAME},
    )
    all_day: bool = False
    description: str | None = None
    location: str | None = None
    recurrence: list[str] | None = PydanticField(
        default=None, description=_RECURRENCE_DOC, json_schema_extra=_recurrence_lines
    )
    transparency: str = PydanticField(
        default="opaque",
        description=_TRANSPARENCY_DOC,
        json_schema_extra={"enum": list(TRANSPARENCIES)},
    )
    if_free: bool = PydanticField(default=False, description=_IF_FREE_DOC)
    time_zone: str | None = PydanticField(
        default=None, description=_TIME_ZONE_DOC, json_schema_extra={"maxLength": 64}
    )


class EventUpdate(_Input):
    """The body of ``PATCH /api/v1/calendar/events/{eventId}``: only the fields sent change."""

    title: str | None = PydanticField(default=None, json_schema_extra={"maxLength": TITLE_MAX})
    starts_at: str | None = PydanticField(default=None, json_schema_extra=_INPUT_TIME)
    ends_at: str | None = PydanticField(default=None, json_schema_extra=_INPUT_TIME)
    all_day: bool | None = None
    description: str | None = None
    location: str | None = None
    recurrence: list[str] | None = PydanticField(
        default=None,
        description=_RECURRENCE_DOC
        + " On a series: the new rule (null turns the series into a single event).",
        json_schema_extra=_recurrence_lines,
    )
    transparency: str | None = PydanticField(
        default=None,
        description=_TRANSPARENCY_DOC,
        json_schema_extra={"enum": list(TRANSPARENCIES)},
    )
    time_zone: str | None = PydanticField(
        default=None,
        description=_TIME_ZONE_DOC
        + " On a series: the zone it repeats in from now on (its startsAt stays the same "
        "instant unless sent too); null: its calendar's.",
        json_schema_extra={"maxLength": 64},
    )


class EventPublic(_Wire):
    id: str
    calendar_id: str
    calendar: str = PydanticField(description="Name of the event's calendar.")
    title: str
    starts_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    ends_at: str = PydanticField(
        description="Exclusive end; for all-day events the midnight after the last day.",
        json_schema_extra={"format": "date-time"},
    )
    all_day: bool
    description: str | None
    location: str | None
    created_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    updated_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    transparency: str = PydanticField(
        description=_TRANSPARENCY_DOC,
        json_schema_extra={"enum": list(TRANSPARENCIES)},
    )
    recurrence: list[str] | None = PydanticField(
        default=None,
        description="Series only (singleEvents=false, or a get of the series' id): its "
        "RFC 5545 lines, normalized (EXDATE/RDATE and UNTIL in UTC, or dates for all-day).",
    )
    time_zone: str | None = PydanticField(
        default=None,
        description="Series only: the IANA zone whose wall clock it repeats at (its own, "
        "or its calendar's).",
    )
    recurring_event_id: str | None = PydanticField(
        default=None,
        description="Occurrences of a series only: the series' id. An occurrence's id is "
        "<seriesId>_<original start, UTC basic format> (<seriesId>_<YYYYMMDD> all-day).",
    )
    original_starts_at: str | None = PydanticField(
        default=None,
        description="Occurrences of a series only: the start the rule gave it (it keeps it "
        "when moved).",
        json_schema_extra={"format": "date-time"},
    )


class CancelledEvent(_Wire):
    """In a sync only: an event deleted, or an occurrence of a series cancelled, since the
    sync token was issued."""

    id: str
    status: Literal["cancelled"]
    recurring_event_id: str | None = PydanticField(
        default=None, description="A cancelled occurrence only: its series' id."
    )
    original_starts_at: str | None = PydanticField(
        default=None,
        description="A cancelled occurrence only: the start the rule gave it.",
        json_schema_extra={"format": "date-time"},
    )


class EventList(_Wire):
    calendars: list[CalendarPublic] = PydanticField(
        description="The calendars accessible to the key."
    )
    events: list[EventPublic | CancelledEvent] = PydanticField(
        description="Events overlapping [timeMin, timeMax), ordered by startsAt then id. With "
        "syncToken: the events created, changed or deleted since, in the order of the changes "
        "(deleted ones, and cancelled occurrences, as status cancelled)."
    )
    next_page_token: str | None = PydanticField(
        default=None, description="Present when more events remain: pass it back as pageToken."
    )
    next_sync_token: str | None = PydanticField(
        default=None,
        description="On the last page: pass it back as syncToken later to get every change "
        "made since this list (or sync) began. Opaque; expires after "
        "CALENDAR_SYNC_RETENTION_DAYS (default 30), then 410 sync_token_expired.",
    )


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


def _table(model: type[SQLModel]) -> Table:
    """A model's table: SQLModel does not declare ``__table__`` to type checkers."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


# The tables, as the core's SQLAlchemy Core statements use them (one definition each).
users_t = _table(User)
calls_t = _table(Call)
keys_t = _table(ApiKey)
oauth_clients_t = _table(OAuthClient)
oauth_authorizations_t = _table(OAuthAuthorization)
oauth_tokens_t = _table(OAuthToken)
secrets_t = _table(ServiceSecret)
sessions_t = _table(OwnerSession)
failures_t = _table(SignInFailure)
records_t = _table(IdempotencyRecord)
events_t = _table(Event)
calendars_t = _table(Calendar)
endpoints_t = _table(WebhookEndpoint)
deliveries_t = _table(WebhookDelivery)
attempts_t = _table(WebhookAttempt)
feeds_t = _table(IcalFeed)
fetches_t = _table(IcalFeedFetch)
ical_uids_t = _table(IcalUid)
event_sync_t = _table(EventSync)
sync_clock_t = _table(SyncClock)
rate_buckets_t = _table(RateBucket)


# ---------------------------------------------------------------------------------------------
# Availability (free/busy, finding a time): see calendar_service.availability

_BOUND_DOC = "RFC 3339 date-time, or a date (that day's midnight). Without an offset it is read in "
_BUSY_BOUND_DOC = _BOUND_DOC + "the first calendar's time zone."
_FREE_BOUND_DOC = _BOUND_DOC + "timeZone (default: the first calendar's)."
_CALENDAR_IDS_DOC = (
    "The calendars to look at (at most 50); default: every calendar the key reaches, the "
    "default calendar first."
)


class FreeBusyQuery(_Input):
    """The body of ``POST /api/v1/calendar/freeBusy`` (``queryFreeBusy``)."""

    time_min: str = PydanticField(description=_BUSY_BOUND_DOC, json_schema_extra=_INPUT_TIME)
    time_max: str = PydanticField(
        description=_BUSY_BOUND_DOC + " Exclusive; at most 92 days after timeMin.",
        json_schema_extra=_INPUT_TIME,
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description=_CALENDAR_IDS_DOC,
        json_schema_extra={"minItems": 1, "maxItems": 50},
    )


class WorkingHours(_Input):
    """When slots may be: from ``start`` to ``end`` local time on ``days``."""

    start: str = PydanticField(
        description="Local time HH:MM (24-hour clock) the working day starts, e.g. 09:00.",
        json_schema_extra={"pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    )
    end: str = PydanticField(
        description="Local time HH:MM it ends (exclusive, after start; 24:00 for midnight).",
        json_schema_extra={"pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    )
    days: list[str] | None = PydanticField(
        default=None,
        description="Working days, each once, of MO TU WE TH FR SA SU; default MO to FR.",
        json_schema_extra={"minItems": 1, "maxItems": 7, "uniqueItems": True},
    )


class FreeTimeQuery(_Input):
    """The body of ``POST /api/v1/calendar/freeTime`` (``findFreeTime``)."""

    time_min: str = PydanticField(description=_FREE_BOUND_DOC, json_schema_extra=_INPUT_TIME)
    time_max: str = PydanticField(
        description=_FREE_BOUND_DOC + " Exclusive; at most 92 days after timeMin.",
        json_schema_extra=_INPUT_TIME,
    )
    # Any: the core reads it (``availability._whole``) as JSON Schema's integer, which takes
    # 30.0 too; 30.5, true and "30" are refused there.
    duration_minutes: Any = PydanticField(
        description="How long the free time must be: 1 to 1440 minutes.",
        json_schema_extra={"type": "integer", "minimum": 1, "maximum": 1440},
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description=_CALENDAR_IDS_DOC + " A slot is free in every one of them.",
        json_schema_extra={"minItems": 1, "maxItems": 50},
    )
    time_zone: str | None = PydanticField(
        default=None,
        description="IANA time zone of the slots, the working hours and bounds without an "
        "offset (default: the first calendar's), e.g. Europe/Berlin.",
    )
    working_hours: WorkingHours | None = PydanticField(
        default=None, description="Only slots within these local hours (default: any time)."
    )
    limit: Any = PydanticField(
        default=None,
        description="At most this many slots: 1 to 100, default 10.",
        json_schema_extra={
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": 100}, {"type": "null"}]
        },
    )


class Interval(_Wire):
    starts_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    ends_at: str = PydanticField(
        description="Exclusive end.", json_schema_extra={"format": "date-time"}
    )


class CalendarBusy(_Wire):
    id: str
    name: str
    busy: list[Interval] = PydanticField(
        description="Busy intervals, merged (overlapping or touching ones are one), clipped to "
        "the window, in time order, in the calendar's time zone."
    )


class FreeBusyPublic(_Wire):
    time_min: str = PydanticField(json_schema_extra={"format": "date-time"})
    time_max: str = PydanticField(json_schema_extra={"format": "date-time"})
    calendars: list[CalendarBusy]


class FreeTimePublic(_Wire):
    time_zone: str = PydanticField(description="The zone the slots are shown and found in.")
    slots: list[Interval] = PydanticField(
        description="Start times, earliest first, on a grid of 15 minutes (or of the duration "
        "when shorter), where every calendar is free for the whole duration (slots may "
        "overlap each other)."
    )


class Conflicting(_Wire):
    starts_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    ends_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    id: str | None = PydanticField(default=None, description="Only for keys that may read it.")
    title: str | None = PydanticField(default=None, description="Only for keys that may read it.")


Problem.model_rebuild()
