"""Subscription feeds: made, listed and revoked by the owner; found by the token in their URL;
each fetch recorded in the feed's own history.

A feed's URL is ``{base}/ical/<token>.ics``. The token (43 base62 characters, 256 bits) is
the only credential a calendar app sends, so it is a secret: it is shown once, when the feed
is made, and only its SHA-256 is stored (``ical_feeds.token_hash``); the row found by the hash
is confirmed with a constant-time comparison. A revoked, unknown or malformed token is the
same plain 404.

``fetch_feed`` is a calendar app's whole fetch: the feed found, its version read, the text
rendered (again only when the version moved: ``RenderedFeeds``, off the event loop), 304 for a
matching ``If-None-Match``, and the fetch recorded, a revoked feed's too (then a 404).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from calendar_service.access.call_history import client_columns
from calendar_service.access.keys import owned_calendar
from calendar_service.calendar.calendars import CalendarRow, get_calendar_row
from calendar_service.interop.ical.export import (
    FeedContent,
    Rendered,
    read_calendar,
    render_calendar,
    version_of,
)
from calendar_service.platform.db import Database
from calendar_service.platform.errors import FieldError, NotFound, ValidationFailed
from calendar_service.platform.ids import new_id, random_base62
from calendar_service.platform.inputs import check_text
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.ical import feeds_t, fetches_t
from calendar_service.platform.timeutil import format_utc

TOKEN_CHARS = 43  # base62: 256 bits
_TOKEN = re.compile(rf"^[0-9A-Za-z]{{{TOKEN_CHARS}}}$")
PREFIX_CHARS = 6
FEED_PATH = "/ical/{token}.ics"


def feed_url(base_url: str, token: str) -> str:
    return base_url.rstrip("/") + FEED_PATH.format(token=token)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def feed_public(row: Any, *, calendar_name: str | None, fetches: int = 0) -> dict[str, Any]:
    """A feed as its owner sees it (never its token: only the first characters)."""
    return {
        "id": row.id,
        "calendarId": row.calendar_id,
        "calendar": calendar_name,
        "prefix": row.prefix,
        "createdAt": format_utc(row.created_at),
        "revokedAt": format_utc(row.revoked_at) if row.revoked_at else None,
        "lastFetchedAt": format_utc(row.last_fetched_at) if row.last_fetched_at else None,
        "state": "revoked" if row.revoked_at is not None else "active",
        "fetches": fetches,
    }


def create_feed(
    conn: Connection, *, user_id: str, calendar_id: str, base_url: str, now: datetime
) -> dict[str, Any]:
    """A new feed of the owner's calendar ``calendar_id``: its public record with ``url``
    (holding the token: shown this once, never stored)."""
    errors = check_text("calendarId", calendar_id)
    if not errors and not calendar_id:
        errors.append(FieldError("calendarId", "choose the calendar the feed shows"))
    calendar = None
    if not errors:
        calendar = owned_calendar(conn, user_id=user_id, calendar_id=calendar_id, errors=errors)
    if errors or calendar is None:
        raise ValidationFailed(errors)
    token = random_base62(TOKEN_CHARS)
    values = {
        "id": new_id("feed"),
        "user_id": user_id,
        "calendar_id": calendar.id,
        "token_hash": hash_token(token),
        "prefix": token[:PREFIX_CHARS],
        "created_at": now,
        "revoked_at": None,
        "last_fetched_at": None,
    }
    conn.execute(insert(feeds_t).values(**values))
    record = feed_public(SimpleNamespace(**values), calendar_name=calendar.name)
    return {**record, "url": feed_url(base_url, token)}


def list_feeds(conn: Connection, *, user_id: str) -> list[dict[str, Any]]:
    """The owner's feeds, newest first, with their calendar's name (``None``: a revoked feed
    of a deleted calendar) and how often each was fetched (within the history's retention)."""
    count = (
        select(func.count())
        .select_from(fetches_t)
        .where(fetches_t.c.feed_id == feeds_t.c.id)
        .scalar_subquery()
    )
    rows = conn.execute(
        select(feeds_t, calendars_t.c.name.label("calendar_name"), count.label("fetches"))
        .outerjoin(calendars_t, calendars_t.c.id == feeds_t.c.calendar_id)
        .where(feeds_t.c.user_id == user_id)
        .order_by(feeds_t.c.created_at.desc(), feeds_t.c.id)
    )
    return [feed_public(r, calendar_name=r.calendar_name, fetches=int(r.fetches)) for r in rows]


def get_feed(conn: Connection, *, user_id: str | None, feed_id: str) -> dict[str, Any]:
    """One feed of ``user_id`` (``None``: any owner, for the operator's CLI); 404 otherwise."""
    bad = check_text("feedId", feed_id)
    query = (
        select(feeds_t, calendars_t.c.name.label("calendar_name"))
        .outerjoin(calendars_t, calendars_t.c.id == feeds_t.c.calendar_id)
        .where(feeds_t.c.id == feed_id)
    )
    if user_id is not None:
        query = query.where(feeds_t.c.user_id == user_id)
    row = None if bad else conn.execute(query).first()
    if row is None:
        raise NotFound(f"No feed {feed_id!r}.")
    return feed_public(row, calendar_name=row.calendar_name)


def revoke_feed(
    conn: Connection, *, user_id: str | None, feed_id: str, now: datetime
) -> dict[str, Any]:
    """Revoke a feed: its URL answers 404 from the next fetch on. Revoking a revoked feed
    keeps the first time."""
    feed = get_feed(conn, user_id=user_id, feed_id=feed_id)
    if feed["revokedAt"] is None:
        conn.execute(update(feeds_t).where(feeds_t.c.id == feed_id).values(revoked_at=now))
        feed.update(revokedAt=format_utc(now), state="revoked")
    return feed


def list_fetches(
    conn: Connection, *, user_id: str | None, feed_id: str, limit: int = 100
) -> list[dict[str, Any]]:
    """A feed's fetches, newest first (404 for a feed that is not the owner's)."""
    get_feed(conn, user_id=user_id, feed_id=feed_id)
    rows = conn.execute(
        select(fetches_t)
        .where(fetches_t.c.feed_id == feed_id)
        .order_by(fetches_t.c.id.desc())
        .limit(max(1, min(limit, 1000)))
    )
    return [
        {
            "at": format_utc(r.at),
            "status": r.status,
            "events": r.events,
            "clientAddr": r.client_addr,
            "userAgent": r.user_agent,
        }
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class FeedRow:
    id: str
    user_id: str
    calendar: CalendarRow | None  # None: deleted (the feed is then revoked)
    revoked: bool


def find_feed(conn: Connection, *, token: str) -> FeedRow:
    """The feed whose token this is (revoked ones too: their fetches are recorded); a plain
    ``NotFound`` for anything else, malformed tokens without a database read."""
    if not _TOKEN.match(token):
        raise NotFound("No such feed.")
    digest = hash_token(token)
    row = conn.execute(
        select(feeds_t.c.id, feeds_t.c.user_id, feeds_t.c.calendar_id, feeds_t.c.revoked_at)
        .add_columns(feeds_t.c.token_hash)
        .where(feeds_t.c.token_hash == digest)
    ).first()
    if row is None or not hmac.compare_digest(row.token_hash, digest):
        raise NotFound("No such feed.")
    try:
        calendar: CalendarRow | None = get_calendar_row(conn, calendar_id=row.calendar_id)
    except NotFound:  # deleted: the deletion revoked the feed (and this holds regardless)
        calendar = None
    return FeedRow(row.id, row.user_id, calendar, row.revoked_at is not None or calendar is None)


def record_fetch(
    conn: Connection,
    *,
    feed_id: str,
    at: datetime,
    status: int,
    events: int,
    client_addr: str | None,
    user_agent: str | None,
) -> None:
    """One line of the feed's history (never the URL: it holds the token)."""
    conn.execute(
        insert(fetches_t).values(
            feed_id=feed_id,
            at=at,
            status=status,
            events=events,
            **client_columns(client_addr, user_agent),
        )
    )
    if status < 400:
        conn.execute(update(feeds_t).where(feeds_t.c.id == feed_id).values(last_fetched_at=at))


def purge_fetches(conn: Connection, *, now: datetime, keep_days: int) -> int:
    """Delete fetch history older than the retention period (the call history's)."""
    result = conn.execute(delete(fetches_t).where(fetches_t.c.at < now - timedelta(days=keep_days)))
    return int(result.rowcount or 0)


def open_feed(conn: Connection, *, token: str, now: datetime) -> tuple[FeedRow, Any]:
    """The feed ``token`` names and the version of what it serves (``export.version_of``;
    ``None`` for a revoked feed, which the front answers 404 once the fetch is recorded)."""
    feed = find_feed(conn, token=token)
    if feed.revoked or feed.calendar is None:
        return feed, None
    return feed, version_of(conn, calendar=feed.calendar, now=now)


def feed_content(conn: Connection, *, feed: FeedRow, now: datetime) -> FeedContent:
    """What the feed serves (``export.read_calendar``): a live feed's, whose calendar exists."""
    assert feed.calendar is not None
    return read_calendar(conn, calendar=feed.calendar, now=now)


def etag_matches(header: str | None, etag: str) -> bool:
    """``If-None-Match`` (RFC 9110 13.1.2, weak comparison) names ``etag``, or is ``*``."""
    if not header:
        return False
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


class RenderedFeeds:
    """The last text rendered of each calendar's feed, with the version it was rendered at
    (``export.version_of``): apps poll often and rendering a big calendar takes a while, so
    it is rendered again only when the version moved. In memory, per process, bounded."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[tuple[Any, ...], Rendered]] = OrderedDict()

    def get(self, calendar_id: str, version: tuple[Any, ...]) -> Rendered | None:
        found = self._items.get(calendar_id)
        if found is None or found[0] != version:
            return None
        self._items.move_to_end(calendar_id)
        return found[1]

    def put(self, calendar_id: str, version: tuple[Any, ...], rendered: Rendered) -> None:
        self._items[calendar_id] = (version, rendered)
        self._items.move_to_end(calendar_id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Fetched:
    """A feed's answer: 200 with ``rendered``, or 304 (``rendered`` gives the ``ETag``)."""

    status: int
    rendered: Rendered


async def fetch_feed(
    *,
    db: Database,
    token: str,
    now: datetime,
    if_none_match: str | None,
    client_addr: str | None,
    user_agent: str | None,
    cache: RenderedFeeds,
) -> Fetched:
    """A calendar app's fetch of the feed ``token`` names (see the module's docstring);
    ``NotFound`` for an unknown, malformed or revoked token, the revoked feed's fetch recorded
    first (its owner still sees that something asks for it)."""
    feed, version = await db.run(open_feed, token=token, now=now)

    async def record(status: int, events: int = 0) -> None:
        await db.run(
            record_fetch,
            feed_id=feed.id,
            at=now,
            status=status,
            events=events,
            client_addr=client_addr,
            user_agent=user_agent,
        )

    if version is None:
        await record(404)
        raise NotFound("No such feed.")
    assert feed.calendar is not None  # a feed with a version: live, its calendar there
    rendered = cache.get(feed.calendar.id, version)
    if rendered is None:
        # Read after the version: what is rendered is at least as new as what it is kept for.
        content = await db.run(feed_content, feed=feed, now=now)
        rendered = await asyncio.to_thread(render_calendar, content)  # off the event loop
        cache.put(feed.calendar.id, version, rendered)
    if etag_matches(if_none_match, rendered.etag):
        await record(304)
        return Fetched(304, rendered)
    await record(200, rendered.events)
    return Fetched(200, rendered)
