"""Typed configuration, built once from the environment where the app is assembled.

Nothing here runs at import time: ``Config.from_env()`` is called by the CLI and by
``create_app``; tests build ``Config(...)`` directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from calendar_service.platform.errors import ConfigError

DEFAULT_RETRY_SCHEDULE = "5s,1m,5m,30m,2h,5h,10h,14h,20h,24h"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour|day|s|m|h|d)\s*$")
_RATE_UNITS = {"second": 1, "s": 1, "minute": 60, "m": 60, "hour": 3600, "h": 3600}
_RATE_UNITS.update({"day": 86400, "d": 86400})


def parse_duration(text: str) -> timedelta:
    """Parse ``90s``, ``5m``, ``2h``, ``30d`` or a bare number of seconds."""
    match = _DURATION.match(text)
    if not match:
        raise ConfigError(f"{text!r} is not a duration such as 30s, 5m, 2h or 30d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def parse_retry_schedule(text: str) -> tuple[timedelta, ...]:
    delays = tuple(parse_duration(part) for part in text.split(",") if part.strip())
    if not delays:
        raise ConfigError("CALENDAR_WEBHOOK_RETRY_SCHEDULE must list at least one delay")
    return delays


def parse_rate_limit(text: str) -> tuple[int, int]:
    """Parse ``600/minute`` into (requests, period seconds)."""
    match = _RATE.match(text)
    if not match or int(match.group(1)) < 1:
        raise ConfigError(f"{text!r} is not a rate such as 600/minute")
    return int(match.group(1)), _RATE_UNITS[match.group(2)]


DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_PROPOSAL_TTL = timedelta(days=7)  # CALENDAR_PROPOSAL_TTL


def served_base_url(host: str, port: int, *, tls: bool = False) -> str:
    """The address ``serve --host HOST --port PORT`` answers on: the base URL to use when
    ``CALENDAR_BASE_URL`` is not set. A wildcard host (all interfaces) is reached on loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # noqa: S104
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    return f"{'https' if tls else 'http'}://{host}:{port}"


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class Config:
    database_url: str = "sqlite:///calendar.db"
    service_name: str = "calendar"
    base_url: str = DEFAULT_BASE_URL
    webhook_allow_local: bool = False
    webhook_retry_schedule: tuple[timedelta, ...] = field(
        default_factory=lambda: parse_retry_schedule(DEFAULT_RETRY_SCHEDULE)
    )
    webhook_timeout_seconds: float = 10.0
    rate_limit: tuple[int, int] = (600, 60)
    # A scheduling link's public page and API: requests per link and per client address.
    booking_rate_limit: tuple[int, int] = (120, 60)
    call_history_days: int = 90
    sync_retention_days: int = 30
    api_key: str | None = None
    session_secret: str | None = None
    sqlite_synchronous: str = "NORMAL"
    # OAuth for remote MCP: how long an access token lives (a refresh token lives as long as
    # the owner's grant).
    oauth_access_token_lifetime: timedelta = timedelta(hours=1)
    # Time triggers missed by more than this (an outage) are skipped, not sent late.
    trigger_grace: timedelta = timedelta(hours=1)
    # How long a write that waits for the owner's approval (a proposal) stays pending.
    proposal_ttl: timedelta = DEFAULT_PROPOSAL_TTL
    # Invitations (docs/invitations.md): the SMTP server (smtp:// or smtps://, user and
    # password in the URL), the From address, recipients a key may invite a day, and the
    # secret inbound mail (iMIP replies) is posted with.
    smtp_url: str | None = None
    mail_from: str = "calendar@localhost"
    invites_per_day: int = 100
    inbound_secret: str | None = None
    # Connected calendars (docs/connections.md): how often an ``ics`` source is polled
    # (``caldav`` every minute, or this when shorter), and the key their secrets are sealed
    # with (None: one the service makes and keeps, ``service_secrets``).
    connection_poll: timedelta = timedelta(minutes=5)
    connection_key: str | None = None
    # Events a step of a connection's mirror removal deletes (``delivery.connection_removals``);
    # not a setting of the environment: tests lower it.
    connection_removal_step: int = 500

    @property
    def mail_configured(self) -> bool:
        return bool(self.smtp_url)

    @property
    def signature_header(self) -> str:
        return f"x-{self.service_name.lower()}-signature"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        env = os.environ if environ is None else environ
        name = env.get("CALENDAR_SERVICE_NAME", "calendar").strip().lower()
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", name):
            raise ConfigError("CALENDAR_SERVICE_NAME must be lower-case letters, digits and '-'")
        days = env.get("CALENDAR_CALL_HISTORY_DAYS", "90")
        if not days.isdigit() or int(days) < 1:
            raise ConfigError("CALENDAR_CALL_HISTORY_DAYS must be a whole number of days >= 1")
        sync_days = env.get("CALENDAR_SYNC_RETENTION_DAYS", "30")
        if not sync_days.isdigit() or int(sync_days) < 1:
            raise ConfigError("CALENDAR_SYNC_RETENTION_DAYS must be a whole number of days >= 1")
        access_lifetime = parse_duration(env.get("CALENDAR_OAUTH_ACCESS_TOKEN_LIFETIME", "1h"))
        if not timedelta(minutes=1) <= access_lifetime <= timedelta(days=1):
            raise ConfigError("CALENDAR_OAUTH_ACCESS_TOKEN_LIFETIME must be from 1m to 1d")
        grace = parse_duration(env.get("CALENDAR_TRIGGER_GRACE", "1h"))
        if not timedelta(0) <= grace <= timedelta(days=7):
            raise ConfigError("CALENDAR_TRIGGER_GRACE must be from 0s to 7d")
        proposal_ttl = parse_duration(env.get("CALENDAR_PROPOSAL_TTL", "7d"))
        if not timedelta(minutes=1) <= proposal_ttl <= timedelta(days=90):
            raise ConfigError("CALENDAR_PROPOSAL_TTL must be from 1m to 90d")
        smtp_url = env.get("CALENDAR_SMTP_URL") or None
        if smtp_url is not None and not re.match(r"smtps?://[^/?#]", smtp_url):
            raise ConfigError("CALENDAR_SMTP_URL must be smtp://host[:port] or smtps://...")
        invites = env.get("CALENDAR_INVITES_PER_DAY", "100")
        if not invites.isdigit():
            raise ConfigError("CALENDAR_INVITES_PER_DAY must be a whole number >= 0")
        mail_from = env.get("CALENDAR_MAIL_FROM") or "calendar@localhost"
        if not re.fullmatch(r"[^@\s<>\"]+@[^@\s<>\"]+", mail_from):
            raise ConfigError("CALENDAR_MAIL_FROM must be an address such as calendar@example.com")
        connection_poll = parse_duration(env.get("CALENDAR_CONNECTION_POLL", "5m"))
        if not timedelta(seconds=1) <= connection_poll <= timedelta(days=1):
            raise ConfigError("CALENDAR_CONNECTION_POLL must be from 1s to 1d")
        return cls(
            connection_poll=connection_poll,
            connection_key=env.get("CALENDAR_CONNECTION_KEY") or None,
            smtp_url=smtp_url,
            mail_from=mail_from,
            invites_per_day=int(invites),
            inbound_secret=env.get("CALENDAR_INBOUND_SECRET") or None,
            database_url=env.get("CALENDAR_DATABASE_URL", "sqlite:///calendar.db"),
            service_name=name,
            base_url=(env.get("CALENDAR_BASE_URL") or DEFAULT_BASE_URL).rstrip("/"),
            webhook_allow_local=_flag(env.get("CALENDAR_WEBHOOK_ALLOW_LOCAL")),
            webhook_retry_schedule=parse_retry_schedule(
                env.get("CALENDAR_WEBHOOK_RETRY_SCHEDULE", DEFAULT_RETRY_SCHEDULE)
            ),
            rate_limit=parse_rate_limit(env.get("CALENDAR_RATE_LIMIT", "600/minute")),
            booking_rate_limit=parse_rate_limit(
                env.get("CALENDAR_BOOKING_RATE_LIMIT", "120/minute")
            ),
            call_history_days=int(days),
            sync_retention_days=int(sync_days),
            api_key=env.get("CALENDAR_API_KEY") or None,
            session_secret=env.get("CALENDAR_SESSION_SECRET") or None,
            sqlite_synchronous=env.get("CALENDAR_SQLITE_SYNCHRONOUS", "NORMAL").upper(),
            oauth_access_token_lifetime=access_lifetime,
            trigger_grace=grace,
            proposal_ttl=proposal_ttl,
        )
