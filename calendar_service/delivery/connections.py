"""Connected calendars kept (docs/connections.md): the owner adds, lists, syncs and removes
them; the poller (``webhooks.connections``) claims the ones due and records what it read.

- A source's URL passes the webhook SSRF rules (``webhook_targets``) when it is added, and
  again before every request (``webhooks.guard``). An ``ics`` URL (which often carries a
  secret token: Google's secret address) and a ``caldav`` password are sealed at rest
  (``platform.sealed``); what is shown is ``url_masked`` (scheme and host only).
- A ``caldav`` account's calendars, picked by the owner, are one connection each: each is one
  entry of ``queryFreeBusy``'s ``calendars``.
- One host polls a connection at a time: ``claim_due`` takes a lease (``LEASE``) by a
  conditional update that only one process can win; a host that dies leaves its lease to
  expire, and another claims the connection then. Each ``record_*`` writes only while the
  lease is still this poller's.
- A failing source keeps its last good copy (only a successful read replaces busy rows),
  shows ``status: failing`` and ``last_error``, and the owner's webhook gets
  ``calendar.connection.failing`` once an outage and ``calendar.connection.recovered`` after.
- What the poller writes is not the owner's change: no change log, no event webhooks.
- ``visibility: details``: a read-only calendar of the owner mirrors the connection
  (``connection_mirror``), made and filled when the visibility becomes ``details``; when it
  becomes ``busy`` again or the connection goes, hidden at once and deleted in steps by a
  job (``connection_removals``), with the copy of a removed connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection, delete, insert, or_, select, update

from calendar_service.delivery import webhook_targets
from calendar_service.delivery.connection_mirror import make_mirror, write_mirror
from calendar_service.delivery.connection_removals import detach
from calendar_service.delivery.webhook_targets import Resolve
from calendar_service.interop.ical.connected import Busy
from calendar_service.journal.webhook_outbox import record_notification
from calendar_service.platform.db.rows import owned_row
from calendar_service.platform.errors import (
    FieldError,
    ValidationFailed,
    WebhookTargetRefused,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.columns import from_db
from calendar_service.platform.models.connections import (
    connection_busy_t,
    connection_objects_t,
    connections_t,
)
from calendar_service.platform.sealed import seal, unseal
from calendar_service.platform.timeutil import format_utc

KINDS = ("ics", "caldav")
VISIBILITIES = ("busy", "details")
LEASE = timedelta(seconds=45)
"""How long a claim lasts: a poll is bounded well within it (``webhooks.connections``)."""
CALDAV_POLL = timedelta(minutes=1)
NAME_MAX = 200
ERROR_MAX = 500
MAX_CONNECTIONS = 50
FAILING = "calendar.connection.failing"
RECOVERED = "calendar.connection.recovered"


def poll_every(kind: str, configured: timedelta) -> timedelta:
    """``ics``: ``CALENDAR_CONNECTION_POLL``; ``caldav``: every minute (or that, if shorter)."""
    return configured if kind == "ics" else min(CALDAV_POLL, configured)


def mask_url(url: str) -> str:
    """What is shown of a source's URL: its scheme and host, never its path or query (where
    secret tokens live)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    shown = f"{parts.scheme}://{parts.hostname}{port}"
    return shown + "/…" if (parts.path not in ("", "/") or parts.query) else shown + "/"


def check_source_url(url: Any, *, allow_local: bool, resolve: Resolve, field: str = "url") -> str:
    """A source URL as the webhook SSRF rules take it (``webcal://`` read as ``https://``);
    refusals name ``field``."""
    if not isinstance(url, str) or not url.strip():
        raise ValidationFailed([FieldError(field, "must be an https:// URL")])
    url = url.strip()
    if url.lower().startswith("webcal://"):
        url = "https://" + url[len("webcal://") :]
    try:
        webhook_targets.check_endpoint_url(url, allow_local=allow_local, resolve=resolve)
    except ValidationFailed as exc:
        raise ValidationFailed([FieldError(field, e["message"]) for e in exc.errors]) from None
    except WebhookTargetRefused as exc:
        message = (
            str(exc)
            .replace("The webhook host", "The host")
            .replace(
                "webhooks go to public addresses only",
                "calendars are read from public addresses only",
            )
        )
        raise ValidationFailed([FieldError(field, message)]) from None
    return url


def _check_fields(name: Any, visibility: Any) -> tuple[str, str]:
    errors: list[FieldError] = []
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name.strip()) > NAME_MAX
        or "\0" in name
    ):
        errors.append(FieldError("name", f"must be 1 to {NAME_MAX} characters"))
    if visibility not in VISIBILITIES:
        errors.append(FieldError("visibility", "must be busy or details"))
    if errors:
        raise ValidationFailed(errors)
    return str(name).strip(), str(visibility)


def _limit(conn: Connection, user_id: str, adding: int) -> None:
    count = len(
        conn.execute(select(connections_t.c.id).where(connections_t.c.user_id == user_id)).all()
    )
    if count + adding > MAX_CONNECTIONS:
        raise ValidationFailed(
            [FieldError("url", f"an owner may connect at most {MAX_CONNECTIONS} calendars")]
        )


def _insert(conn: Connection, values: dict[str, Any], now: datetime) -> str:
    connection_id = new_id("conn")
    conn.execute(
        insert(connections_t).values(
            id=connection_id,
            status="pending",
            counts_for_availability=True,
            failing_notified=False,
            events=0,
            longest_seconds=0,
            poll_seconds=60,
            next_poll_at=now,
            created_at=now,
            **values,
        )
    )
    return connection_id


def add_ics(
    conn: Connection,
    *,
    user_id: str,
    url: str,
    name: str | None,
    visibility: str,
    key: bytes,
    now: datetime,
) -> dict[str, Any]:
    """Connect an ``ics`` URL (already passed ``check_source_url``); polled at once."""
    shown = name if name is not None else urlsplit(url).hostname or "Connected calendar"
    name, visibility = _check_fields(shown, visibility)
    _limit(conn, user_id, 1)
    connection_id = _insert(
        conn,
        dict(
            user_id=user_id,
            kind="ics",
            name=name,
            url_masked=mask_url(url),
            url_sealed=seal(key, url),
            visibility=visibility,
        ),
        now,
    )
    if visibility == "details":
        make_mirror(conn, connection=_row(conn, user_id, connection_id), now=now)
    return get_connection(conn, user_id=user_id, connection_id=connection_id)


@dataclass(frozen=True, slots=True)
class Picked:
    """A calendar of a CalDAV account the owner picked: its collection URL and name."""

    url: str
    name: str


def add_caldav(
    conn: Connection,
    *,
    user_id: str,
    url: str,
    username: str,
    password: str,
    calendars: Iterable[Picked],
    visibility: str,
    key: bytes,
    now: datetime,
) -> list[dict[str, Any]]:
    """Connect the picked calendars of a CalDAV account (found by ``webhooks.connections``'s
    discovery from ``url``): one connection each, the password sealed in each."""
    picked = list(calendars)
    if not isinstance(username, str) or not username or len(username) > 256:
        raise ValidationFailed([FieldError("username", "must be 1 to 256 characters")])
    if not isinstance(password, str) or not password or len(password) > 1024:
        raise ValidationFailed([FieldError("password", "must be 1 to 1024 characters")])
    _limit(conn, user_id, len(picked))
    sealed = seal(key, password)
    ids = []
    for calendar in picked:
        name, visibility = _check_fields(calendar.name[:NAME_MAX], visibility)
        ids.append(
            _insert(
                conn,
                dict(
                    user_id=user_id,
                    kind="caldav",
                    name=_unique_name(conn, user_id, name),
                    url_masked=mask_url(url),
                    url_sealed=seal(key, url),
                    username=username,
                    password_sealed=sealed,
                    collection_url=calendar.url,
                    visibility=visibility,
                ),
                now,
            )
        )
    if visibility == "details":
        for i in ids:
            make_mirror(conn, connection=_row(conn, user_id, i), now=now)
    return [get_connection(conn, user_id=user_id, connection_id=i) for i in ids]


def _unique_name(conn: Connection, user_id: str, name: str) -> str:
    taken = set(
        conn.execute(
            select(connections_t.c.name).where(connections_t.c.user_id == user_id)
        ).scalars()
    )
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name} ({n})", n + 1
    return candidate


def connection_public(row: Any) -> dict[str, Any]:
    """A connection as ``connections list`` shows it (no secret: the URL masked)."""
    synced = from_db(row.synced_at) if row.synced_at is not None else None
    found: dict[str, Any] = {
        "id": row.id,
        "kind": row.kind,
        "name": row.name,
        "url": row.url_masked,
        "visibility": row.visibility,
        "countsForAvailability": bool(row.counts_for_availability),
        "status": row.status,
        "syncedAt": format_utc(synced) if synced is not None else None,
        "events": int(row.events),
    }
    if row.kind == "caldav":
        found["username"] = row.username
    if row.last_error is not None:
        found["lastError"] = row.last_error
    return found


def list_connections(conn: Connection, *, user_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(connections_t)
        .where(connections_t.c.user_id == user_id)
        .order_by(connections_t.c.created_at, connections_t.c.id)
    ).all()
    return [connection_public(r) for r in rows]


def _row(conn: Connection, user_id: str | None, connection_id: str) -> Any:
    missing = f"No connected calendar {connection_id!r}: see connections list."
    return owned_row(conn, connections_t, connection_id, user_id=user_id, missing=missing)


def get_connection(conn: Connection, *, user_id: str | None, connection_id: str) -> dict[str, Any]:
    return connection_public(_row(conn, user_id, connection_id))


def owner_of(conn: Connection, *, connection_id: str) -> str:
    return str(_row(conn, None, connection_id).user_id)


def request_sync(
    conn: Connection, *, user_id: str | None, connection_id: str, now: datetime
) -> dict[str, Any]:
    """Poll the connection as soon as a poller is free (its lease, if any, left alone)."""
    _row(conn, user_id, connection_id)
    conn.execute(
        update(connections_t).where(connections_t.c.id == connection_id).values(next_poll_at=now)
    )
    return get_connection(conn, user_id=user_id, connection_id=connection_id)


def set_visibility(
    conn: Connection, *, user_id: str | None, connection_id: str, visibility: Any, now: datetime
) -> dict[str, Any]:
    """``details``: a read-only mirror calendar is made, and the source read again whole at
    once to fill it; ``busy``: the mirror is hidden at once and a job deletes it with its
    events (``connection_removals``; the busy time stays)."""
    row = _row(conn, user_id, connection_id)
    if visibility not in VISIBILITIES:
        raise ValidationFailed([FieldError("visibility", "must be busy or details")])
    values: dict[str, Any] = {"visibility": visibility}
    if visibility == "details" and row.visibility != "details":
        make_mirror(conn, connection=row, now=now)
        values |= _READ_AGAIN | {"next_poll_at": now}
    elif visibility == "busy":
        detach(conn, connection_id=connection_id, user_id=row.user_id, removed=False, now=now)
    conn.execute(update(connections_t).where(connections_t.c.id == connection_id).values(**values))
    return get_connection(conn, user_id=user_id, connection_id=connection_id)


_READ_AGAIN: dict[str, Any] = dict(
    etag=None, last_modified=None, sync_token=None, ctag=None, expanded_at=None
)
"""A connection's validators forgotten: its next poll reads the whole source."""


def remove_connection(
    conn: Connection, *, user_id: str | None, connection_id: str, now: datetime
) -> None:
    """Remove the connection with its sealed secrets at once; its copy (mirror, busy time,
    objects) is hidden at once and deleted in steps (``connection_removals``). The
    connection's row goes first: a poll recording meanwhile holds it locked (``_held``), so
    this waits for that poll, whose writes the job then deletes too."""
    row = _row(conn, user_id, connection_id)
    conn.execute(delete(connections_t).where(connections_t.c.id == connection_id))
    detach(conn, connection_id=connection_id, user_id=row.user_id, removed=True, now=now)


# ---------------------------------------------------------------------------------------------
# The poller's side


@dataclass(frozen=True, slots=True)
class PollJob:
    """A connection claimed for one poll, with its secrets opened (kept in memory only)."""

    id: str
    user_id: str
    kind: str
    url: str
    username: str | None
    password: str | None
    collection_url: str | None
    etag: str | None
    last_modified: str | None
    sync_token: str | None
    ctag: str | None
    visibility: str  # details: the events are read too, for the mirror calendar
    has_copy: bool
    full: bool  # re-read even if unchanged: the expansion horizon must move on
    objects: dict[str, str | None]  # caldav: href → ETag, as last read


REEXPAND_AFTER = timedelta(days=7)
_AS_STORED = (
    "id", "user_id", "kind", "username", "collection_url",
    "etag", "last_modified", "sync_token", "ctag", "visibility",
)  # fmt: skip
"""``PollJob``'s fields read as the connection's row has them."""


def claim_due(
    conn: Connection,
    *,
    owner: str,
    now: datetime,
    key: bytes,
    limit: int = 10,
    connection_id: str | None = None,
) -> list[PollJob]:
    """Claim up to ``limit`` connections due for a poll whose lease is free or expired (only
    ``connection_id``, due or not, when given: ``connections sync``)."""
    at = now
    query = select(connections_t.c.id).where(
        or_(connections_t.c.lease_until.is_(None), connections_t.c.lease_until < at)
    )
    if connection_id is not None:
        query = query.where(connections_t.c.id == connection_id)
    else:
        query = query.where(connections_t.c.next_poll_at <= at)
    due = conn.execute(query.order_by(connections_t.c.next_poll_at).limit(limit)).scalars()
    jobs = []
    for found_id in list(due):
        won = conn.execute(
            update(connections_t)
            .where(
                connections_t.c.id == found_id,
                or_(connections_t.c.lease_until.is_(None), connections_t.c.lease_until < at),
            )
            .values(lease_owner=owner, lease_until=now + LEASE)
        ).rowcount
        if won != 1:
            continue  # another host claimed it first
        row = _row(conn, None, found_id)
        objects = dict(
            conn.execute(
                select(connection_objects_t.c.href, connection_objects_t.c.etag).where(
                    connection_objects_t.c.connection_id == found_id
                )
            ).all()
        )
        expanded = from_db(row.expanded_at) if row.expanded_at is not None else None
        try:
            url = unseal(key, row.url_sealed)
            password = unseal(key, row.password_sealed) if row.password_sealed else None
        except ValueError:
            _fail(
                conn,
                row,
                owner,
                "the stored secret cannot be opened (the service's key "
                "changed): remove the connection and add it again",
                now,
                LEASE,
            )
            continue
        jobs.append(
            PollJob(
                **{name: getattr(row, name) for name in _AS_STORED},
                url=url,
                password=password,
                has_copy=row.synced_at is not None,
                full=expanded is None or now - expanded > REEXPAND_AFTER,
                objects=objects,
            )
        )
    return jobs


def _held(conn: Connection, connection_id: str, owner: str) -> Any:
    """The connection's row if this poller still holds its lease (else None: drop the work),
    locked on PostgreSQL until the poll's transaction ends (``remove_connection`` waits)."""
    query = select(connections_t).where(
        connections_t.c.id == connection_id, connections_t.c.lease_owner == owner
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    return conn.execute(query).first()


def _done_values(conn: Connection, now: datetime, every: timedelta) -> dict[str, Any]:
    return dict(
        lease_owner=None,
        lease_until=None,
        checked_at=now,
        next_poll_at=now + every,
        poll_seconds=max(1, int(every.total_seconds())),
    )


def _succeeded(
    conn: Connection, row: Any, now: datetime, every: timedelta, job: PollJob, **values: Any
) -> None:
    values = _done_values(conn, now, every) | values
    if row.visibility == "details" and job.visibility != "details":
        # Made ``details`` while this poll read busy time only: read it all again at once.
        values |= _READ_AGAIN | {"next_poll_at": now}
    _settle(conn, row, None, now, synced_at=now, **values)


def record_unchanged(
    conn: Connection, *, job: PollJob, owner: str, now: datetime, every: timedelta
) -> bool:
    """The source answered that nothing changed (304, same ctag or sync token): one small
    update of the poll's own state, no copy written."""
    row = _held(conn, job.id, owner)
    if row is None:
        return False
    _succeeded(conn, row, now, every, job)
    return True


def _insert_busy(conn: Connection, connection_id: str, href: str, busy: Busy) -> None:
    rows = [
        {
            "connection_id": connection_id,
            "href": href,
            "starts_at": s,
            "ends_at": e,
            "all_day": busy.all_day_only((s, e)),
        }
        for s, e in sorted(busy.intervals)
    ]
    for i in range(0, len(rows), 5000):
        conn.execute(insert(connection_busy_t), rows[i : i + 5000])


def record_ics(
    conn: Connection,
    *,
    job: PollJob,
    owner: str,
    busy: Busy,
    etag: str | None,
    last_modified: str | None,
    now: datetime,
    every: timedelta,
) -> bool:
    """A new copy of an ``ics`` source: its busy rows replaced whole."""
    row = _held(conn, job.id, owner)
    if row is None:
        return False
    conn.execute(delete(connection_busy_t).where(connection_busy_t.c.connection_id == job.id))
    _insert_busy(conn, job.id, "", busy)
    if row.visibility == "details" and job.visibility == "details":
        write_mirror(conn, connection_id=job.id, changed={"": busy.details}, now=now)
    _succeeded(
        conn,
        row,
        now,
        every,
        job,
        etag=etag,
        last_modified=last_modified,
        events=busy.events,
        longest_seconds=busy.longest,
        expanded_at=now,
    )
    return True


def record_caldav(
    conn: Connection,
    *,
    job: PollJob,
    owner: str,
    changed: dict[str, tuple[str | None, Busy]],
    removed: Iterable[str],
    sync_token: str | None,
    ctag: str | None,
    full: bool,
    now: datetime,
    every: timedelta,
) -> bool:
    """What changed on a ``caldav`` source: the changed objects' busy rows replaced, the
    removed ones' deleted (``full``: every object was read, so those not read are gone)."""
    row = _held(conn, job.id, owner)
    if row is None:
        return False
    busy_c, objects_c = connection_busy_t.c, connection_objects_t.c
    gone = set(removed)
    if full:
        gone |= set(job.objects) - set(changed)
    for href in gone | set(changed):
        conn.execute(
            delete(connection_busy_t).where(busy_c.connection_id == job.id, busy_c.href == href)
        )
        conn.execute(
            delete(connection_objects_t).where(
                objects_c.connection_id == job.id, objects_c.href == href
            )
        )
    longest = 0 if full else int(row.longest_seconds)
    for href, (etag, busy) in changed.items():
        conn.execute(
            insert(connection_objects_t).values(connection_id=job.id, href=href, etag=etag)
        )
        _insert_busy(conn, job.id, href, busy)
        longest = max(longest, busy.longest)
    if row.visibility == "details" and job.visibility == "details":
        write_mirror(
            conn,
            connection_id=job.id,
            changed={href: busy.details for href, (_, busy) in changed.items()},
            removed=gone - changed.keys(),
            now=now,
        )
    events = len(job.objects.keys() - gone - changed.keys()) + len(changed)
    values: dict[str, Any] = dict(
        sync_token=sync_token, ctag=ctag, events=events, longest_seconds=longest
    )
    if full:
        values["expanded_at"] = now
    _succeeded(conn, row, now, every, job, **values)
    return True


def record_failure(
    conn: Connection, *, job: PollJob, owner: str, reason: str, now: datetime, every: timedelta
) -> bool:
    """The poll failed: the last good copy stays; ``failing`` with the reason; the owner's
    webhook told once an outage."""
    row = _held(conn, job.id, owner)
    if row is None:
        return False
    _fail(conn, row, owner, reason, now, every)
    return True


def _fail(
    conn: Connection, row: Any, owner: str, reason: str, now: datetime, every: timedelta
) -> None:
    _settle(conn, row, reason[:ERROR_MAX], now, **_done_values(conn, now, every))


def _settle(conn: Connection, row: Any, error: str | None, now: datetime, **values: Any) -> None:
    """A poll's end: ``ok``, or ``failing`` with ``error``, and ``values``; the owner's webhook
    told when it changes (an outage once, and its end)."""
    failing = error is not None
    status = "failing" if failing else "ok"
    if row.failing_notified != failing:
        shown = connection_public(row) | {"status": status}
        if failing:
            shown["lastError"] = error
        record_notification(
            conn,
            user_id=row.user_id,
            event_type=FAILING if failing else RECOVERED,
            data={"connection": shown},
            now=now,
        )
    conn.execute(
        update(connections_t)
        .where(connections_t.c.id == row.id)
        .values(status=status, last_error=error, failing_notified=failing, **values)
    )
