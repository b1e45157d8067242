"""The schema (SQLModel tables) and the public shapes, a module a concept.

One family per entity: the table class, and the pydantic shapes that the REST API, the MCP
tools and the OpenAPI document share (``EventCreate``, ``EventUpdate``, ``EventPublic``...), so
the fronts cannot drift. Hot paths read and write the tables with SQLAlchemy Core statements
(``events_t``: each table once, beside its model), not ORM objects.

- ``columns``: date-times stored as UTC, timezone-aware on the way out on every database
  (``UTCDateTime``, ``to_db``, ``from_db``, ``utc_text_of``);
- ``wire``: the camelCase JSON every public shape shares, and strict input;
- ``owners``: owners, their signed-in browsers, failed sign-ins;
- ``service``: what the service keeps for itself (its secrets, the address it serves on);
- ``keys``: API keys, their rate budgets, call history and idempotency records;
- ``oauth``: OAuth clients, authorization requests, tokens;
- ``calendars``: a calendar's table and public shape;
- ``events``: an event's table and shapes, and the tables incremental sync reads;
- ``webhooks``: the owner's endpoint, the outbox of deliveries, their attempts;
- ``ical``: feeds, their fetches, the UIDs of imported events;
- ``links``: scheduling links and the bookings made through them;
- ``connections``: connected calendars, their objects and busy time;
- ``availability``: the free/busy and free-time questions and answers;
- ``rules``: the owner's rules for agents;
- ``problems``: RFC 9457 problem details.

Importing the package defines every table (``SQLModel.metadata``). It re-exports each public
name; code of the core imports from the module of the concept.
"""

from __future__ import annotations

from collections.abc import Sequence

from calendar_service.platform.models.availability import (
    CalendarBusy,
    Conflicting,
    FreeBusyPublic,
    FreeBusyQuery,
    FreeTimePublic,
    FreeTimeQuery,
    Interval,
    WorkingHours,
)
from calendar_service.platform.models.calendars import (
    DEFAULT_CALENDAR_NAME,
    Calendar,
    CalendarPublic,
    calendars_t,
)
from calendar_service.platform.models.columns import UTCDateTime, from_db, to_db, utc_text_of
from calendar_service.platform.models.connections import (
    Source,
    connection_busy_t,
    connection_objects_t,
    connections_t,
)
from calendar_service.platform.models.events import (
    SERIES_ROWS,
    TITLE_MAX,
    TRANSPARENCIES,
    CancelledEvent,
    Event,
    EventCreate,
    EventList,
    EventPublic,
    EventSync,
    EventUpdate,
    SyncClock,
    event_sync_t,
    events_t,
    sync_clock_t,
)
from calendar_service.platform.models.ical import (
    IcalFeed,
    IcalFeedFetch,
    IcalUid,
    feeds_t,
    fetches_t,
    ical_uids_t,
)
from calendar_service.platform.models.keys import (
    ApiKey,
    Call,
    IdempotencyRecord,
    RateBucket,
    calls_t,
    keys_t,
    rate_buckets_t,
    records_t,
)
from calendar_service.platform.models.links import (
    LinkBooking,
    SchedulingLink,
    bookings_t,
    links_t,
)
from calendar_service.platform.models.oauth import (
    OAuthAuthorization,
    OAuthClient,
    OAuthToken,
    oauth_authorizations_t,
    oauth_clients_t,
    oauth_tokens_t,
)
from calendar_service.platform.models.owners import (
    OwnerSession,
    SignInFailure,
    User,
    failures_t,
    sessions_t,
    users_t,
)
from calendar_service.platform.models.problems import FieldErrorPublic, Problem
from calendar_service.platform.models.rules import (
    SchedulingRules,
    SchedulingRulesPublic,
    rules_t,
)
from calendar_service.platform.models.service import ServiceSecret, secrets_t
from calendar_service.platform.models.webhooks import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    attempts_t,
    deliveries_t,
    endpoints_t,
)

__all__: Sequence[str] = (
    "DEFAULT_CALENDAR_NAME",
    "SERIES_ROWS",
    "TITLE_MAX",
    "TRANSPARENCIES",
    "ApiKey",
    "Calendar",
    "CalendarBusy",
    "CalendarPublic",
    "Call",
    "CancelledEvent",
    "Conflicting",
    "Event",
    "EventCreate",
    "EventList",
    "EventPublic",
    "EventSync",
    "EventUpdate",
    "FieldErrorPublic",
    "FreeBusyPublic",
    "FreeBusyQuery",
    "FreeTimePublic",
    "FreeTimeQuery",
    "IcalFeed",
    "IcalFeedFetch",
    "IcalUid",
    "IdempotencyRecord",
    "Interval",
    "LinkBooking",
    "OAuthAuthorization",
    "OAuthClient",
    "OAuthToken",
    "OwnerSession",
    "Problem",
    "RateBucket",
    "SchedulingLink",
    "SchedulingRules",
    "SchedulingRulesPublic",
    "ServiceSecret",
    "SignInFailure",
    "Source",
    "SyncClock",
    "UTCDateTime",
    "User",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WorkingHours",
    "attempts_t",
    "bookings_t",
    "calendars_t",
    "calls_t",
    "connection_busy_t",
    "connection_objects_t",
    "connections_t",
    "deliveries_t",
    "endpoints_t",
    "event_sync_t",
    "events_t",
    "failures_t",
    "feeds_t",
    "fetches_t",
    "from_db",
    "ical_uids_t",
    "keys_t",
    "links_t",
    "oauth_authorizations_t",
    "oauth_clients_t",
    "oauth_tokens_t",
    "rate_buckets_t",
    "records_t",
    "rules_t",
    "secrets_t",
    "sessions_t",
    "sync_clock_t",
    "to_db",
    "users_t",
    "utc_text_of",
)
