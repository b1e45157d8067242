"""The connected calendars' poller (docs/connections.md), and CalDAV discovery for the CLI and
the settings pages.

``ConnectionPoller.tick`` (an interval job of ``webhooks.scheduler``, in ``serve`` and in
``worker``) claims the connections due (``delivery.connections.claim_due``: a lease, so one
host polls each at a time; a dead host's lease runs out after ``LEASE`` and another claims
it), then polls each. It also runs the removals of mirror calendars (``remove_mirrors``,
``delivery.connection_removals``), a step a transaction, one host per job.

- ``ics``: one GET, conditional (``If-None-Match`` with the last ETag, ``If-Modified-Since``
  with the last ``Last-Modified``); 304 changes no copy. A changed file is read off the event
  loop (``interop.ical.connected``: bounded as an import is) and its busy time replaces the
  last copy in one transaction.
- ``caldav``: ``sync-collection`` (RFC 6578) from the last token; a server that does not offer
  it is read by ``getctag`` (unchanged: nothing more) and the members' ETags; changed objects
  are fetched with ``calendar-multiget`` in batches and each read as above.

Every request goes through the webhooks' SSRF guard (the URL checked, the connection pinned
to the checked addresses, no proxies), follows at most ``MAX_REDIRECTS`` redirects (each
checked again), and is bounded in time (``REQUEST_SECONDS``; the poll in ``POLL_SECONDS``)
and size (``MAX_BODY``). A failure keeps the last good copy and says why in words an owner can
act on; neither a password nor a URL's path is ever logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta, tzinfo
from typing import Any

import httpx
from sqlalchemy import Connection, select

from calendar_service.delivery import connection_removals as removals
from calendar_service.delivery import connections as store
from calendar_service.interop.ical import connected
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database, atomic
from calendar_service.platform.errors import (
    CalendarError,
    FieldError,
    ValidationFailed,
    WebhookTargetRefused,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.sealed import sealing_key
from calendar_service.platform.timeutil import utcnow, zone
from webhooks import caldav_client as remote
from webhooks import guard
from webhooks.transport import make_httpx_client

logger = logging.getLogger("webhooks.connections")

REQUEST_SECONDS = 20.0
POLL_SECONDS = 40.0
"""A poll's whole time: within ``store.LEASE``, so a lease never runs out under a live poll."""
MAX_BODY = connected.MAX_BYTES
MAX_XML_BODY = 32 * 1024 * 1024
MAX_REDIRECTS = 3
TICK_SECONDS = 1.0
CONCURRENT_POLLS = 4
REMOVAL_PAUSE_SECONDS = 0.02
"""Between two steps of a mirror's removal: other connections' writes take SQLite's lock."""


class PollFailed(Exception):
    """A poll's failure, in words an owner can act on (never a secret)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    status: int
    headers: httpx.Headers
    body: bytes


class Remote:
    """Requests to one source, through the guard, with its credentials."""

    def __init__(
        self,
        *,
        allow_local: bool,
        username: str | None = None,
        password: str | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.allow_local = allow_local
        self.auth = httpx.BasicAuth(username, password) if username and password else None
        self.client = make_httpx_client(verify=verify, connections=2)
        self.requests = 0

    async def close(self) -> None:
        await self.client.aclose()

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        limit: int = MAX_BODY,
    ) -> Fetched:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                target = await guard.check_target(url, allow_local=self.allow_local)
            except WebhookTargetRefused as exc:
                raise PollFailed(str(exc).replace("The webhook host", "The host")) from None
            host = target.host
            self.requests += 1
            try:
                with guard.pinned(target):
                    fetched = await self._send(method, url, headers, body, limit)
            except httpx.TimeoutException:
                raise PollFailed(
                    f"{host} did not answer within {REQUEST_SECONDS:.0f} seconds; retrying at "
                    "the next poll"
                ) from None
            except httpx.HTTPError as exc:
                raise PollFailed(
                    f"could not connect to {host} ({type(exc).__name__}): check that the "
                    "address is right and the server is up"
                ) from None
            if fetched.status in (301, 302, 303, 307, 308) and "location" in fetched.headers:
                url = remote.absolute(url, fetched.headers["location"])
                continue
            return fetched
        raise PollFailed(f"more than {MAX_REDIRECTS} redirects: check the address")

    async def dav(self, method: str, url: str, *, depth: str, body: bytes) -> Fetched:
        """A WebDAV request (PROPFIND, REPORT) with an XML body."""
        headers = {"depth": depth, "content-type": "application/xml; charset=utf-8"}
        return await self.request(method, url, headers=headers, body=body, limit=MAX_XML_BODY)

    async def _send(
        self, method: str, url: str, headers: dict[str, str] | None, body: bytes | None, limit: int
    ) -> Fetched:
        request = self.client.build_request(
            method, url, headers=headers, content=body, timeout=REQUEST_SECONDS
        )
        response = await self.client.send(request, stream=True, auth=self.auth)
        try:
            data = bytearray()
            async for chunk in response.aiter_bytes():
                data.extend(chunk)
                if len(data) > limit:
                    raise PollFailed(
                        f"the answer is larger than {limit // (1024 * 1024)} MiB: a connected "
                        "calendar may be at most that big"
                    )
        finally:
            await response.aclose()
        return Fetched(response.status_code, response.headers, bytes(data))


def refusal(status: int, what: str) -> PollFailed:
    """An HTTP error status in an owner's words."""
    if status in (401, 403):
        advice = (
            "check the username and app password"
            if what == "caldav"
            else "the address may have been reset: copy it again from the calendar's settings"
        )
        return PollFailed(f"the server refused access (HTTP {status}): {advice}")
    if status in (404, 410):
        return PollFailed(
            f"the calendar was not found (HTTP {status}): it may have been deleted or "
            "unpublished; check the address"
        )
    if status >= 500:
        return PollFailed(f"the server failed (HTTP {status}); retrying at the next poll")
    return PollFailed(f"the server answered HTTP {status}")


# ---------------------------------------------------------------------------------------------
# Discovery


async def discover(
    url: str,
    *,
    username: str,
    password: str,
    allow_local: bool,
    verify: ssl.SSLContext | bool = True,
) -> list[remote.FoundCalendar]:
    """The calendars (of events) of a CalDAV account, from its base URL."""
    client = Remote(allow_local=allow_local, username=username, password=password, verify=verify)
    try:
        principal = await _href_prop(client, url, "d:current-user-principal")
        if principal is None:
            root = remote.absolute(url, "/.well-known/caldav")
            principal = await _href_prop(client, root, "d:current-user-principal")
        principal = principal or url
        home = await _href_prop(client, principal, "c:calendar-home-set") or principal
        found = await client.dav(
            "PROPFIND",
            home,
            depth="1",
            body=remote.propfind_body(
                "d:resourcetype", "d:displayname", "c:supported-calendar-component-set"
            ),
        )
        if found.status != 207:
            raise refusal(found.status, "caldav")
        return remote.calendars_in(home, _multistatus(found.body))
    finally:
        await client.close()


async def discover_calendars(
    url: str,
    *,
    username: str,
    password: str,
    allow_local: bool,
    field: str = "url",
    verify: ssl.SSLContext | bool = True,
) -> list[tuple[str, str]]:
    """``discover`` for the owner's surfaces (the CLI, the settings pages): the account's
    calendars of events as (collection URL, name); a failure, or none found, is a
    ``ValidationFailed`` naming ``field``."""
    try:
        found = await discover(
            url, username=username, password=password, allow_local=allow_local, verify=verify
        )
    except PollFailed as exc:
        raise ValidationFailed([FieldError(field, f"no CalDAV account found: {exc}")]) from None
    if not found:
        raise ValidationFailed([FieldError(field, "the account holds no calendar of events")])
    return [(f.url, f.name) for f in found]


async def _href_prop(client: Remote, url: str, prop: str) -> str | None:
    found = await client.dav("PROPFIND", url, depth="0", body=remote.propfind_body(prop))
    if found.status in (401, 403):
        raise refusal(found.status, "caldav")
    if found.status != 207:
        return None
    for answer in _multistatus(found.body).answers:
        href = remote.href_in(next(iter(answer.props.values()), None))
        if href:
            return remote.absolute(url, href)
    return None


def _multistatus(body: bytes) -> remote.Multistatus:
    try:
        return remote.parse_multistatus(body)
    except remote.RemoteXMLError as exc:
        raise PollFailed(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# Polling


class ConnectionPoller:
    """Claims due connections and polls them (module docstring)."""

    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        verify: ssl.SSLContext | bool = True,
        owner: str | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self.verify = verify
        self.owner = owner or f"{socket.gethostname()[:40]}:{os.getpid()}:{new_id('poll')}"
        self._key: bytes | None = None
        self._running: set[asyncio.Task[None]] = set()
        self._ticking = False
        self._removing: asyncio.Task[None] | None = None
        self.polls = 0
        self.requests = 0  # sent by this poller's polls (benchmarks)

    async def key(self) -> bytes:
        if self._key is None:
            self._key = await self.db.run(
                lambda conn: sealing_key(conn, configured=self.config.connection_key, now=utcnow())
            )
        return self._key

    async def tick(self) -> None:
        if self._ticking:
            return
        self._ticking = True
        try:
            if self._removing is None or self._removing.done():
                self._removing = asyncio.get_running_loop().create_task(self.remove_mirrors())
            free = CONCURRENT_POLLS - len(self._running)
            if free <= 0:
                return
            key = await self.key()
            jobs = await self.db.run(
                store.claim_due, owner=self.owner, now=utcnow(), key=key, limit=free
            )
            for job in jobs:
                task = asyncio.get_running_loop().create_task(self.poll(job))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
        except Exception:
            logger.exception("claiming connected calendars failed")
        finally:
            self._ticking = False

    async def remove_mirrors(self) -> None:
        """Run the removals of mirrors no live runner holds (``connection_removals``), one
        after another, a step at a time: each step one transaction off the event loop, then
        the requests that waited for it and a pause in which others take SQLite's lock."""
        try:
            while removal_id := await self.db.run(removals.claim, runner=self.owner, now=utcnow()):
                while await self.db.run_off_loop(
                    _in_transaction(removals.step),
                    removal_id=removal_id,
                    runner=self.owner,
                    now=utcnow(),
                    most=self.config.connection_removal_step,
                ):
                    await self.db.let_waiting_through()
                    await asyncio.sleep(REMOVAL_PAUSE_SECONDS)
        except Exception:  # the lease runs out, and a runner takes the job up again
            logger.exception("removing a connected calendar's mirror failed")

    async def poll_now(self, connection_id: str) -> bool:
        """Poll one connection in this process now (``connections sync``, and after adding
        one); False when another host holds its lease (it polls it)."""
        jobs = await self.db.run(
            store.claim_due,
            owner=self.owner,
            now=utcnow(),
            key=await self.key(),
            limit=1,
            connection_id=connection_id,
        )
        for job in jobs:
            await self.poll(job)
        return bool(jobs)

    async def close(self) -> None:
        if self._removing is not None:
            self._removing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._removing
        for task in list(self._running):
            task.cancel()
        for task in list(self._running):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def every(self, kind: str) -> timedelta:
        return store.poll_every(kind, self.config.connection_poll)

    async def poll(self, job: store.PollJob) -> None:
        """Poll one claimed connection and record what it found (or why it failed)."""
        every = self.every(job.kind)
        try:
            async with asyncio.timeout(POLL_SECONDS):
                if job.kind == "ics":
                    await self._poll_ics(job, every)
                else:
                    await self._poll_caldav(job, every)
        except (PollFailed, CalendarError, connected.TooManyIntervals) as exc:
            await self._failed(job, _reason(exc), every)
        except TimeoutError:
            await self._failed(
                job, f"the poll took more than {POLL_SECONDS:.0f} seconds; retrying", every
            )
        except Exception:
            logger.exception("polling connection %s failed", job.id)
            await self._failed(job, "an internal error; retrying at the next poll", every)
        finally:
            self.polls += 1

    async def _failed(self, job: store.PollJob, reason: str, every: timedelta) -> None:
        # The reason stays out of the log: it may quote the outsider's text (a line of the file).
        logger.info("connected calendar %s failing (the reason is on its status)", job.id)
        await self.db.run(
            store.record_failure,
            job=job,
            owner=self.owner,
            reason=reason,
            now=utcnow(),
            every=every,
        )

    async def _zone(self, user_id: str) -> tzinfo:
        def read(conn: Connection) -> str | None:
            return conn.execute(
                select(calendars_t.c.time_zone).where(
                    calendars_t.c.user_id == user_id, calendars_t.c.is_default.is_(True)
                )
            ).scalar()

        return zone(await self.db.run(read) or "UTC")

    async def _poll_ics(self, job: store.PollJob, every: timedelta) -> None:
        headers: dict[str, str] = {"accept": "text/calendar, */*;q=0.5"}
        if job.has_copy and not job.full:
            if job.etag:
                headers["if-none-match"] = job.etag
            if job.last_modified:
                headers["if-modified-since"] = job.last_modified
        client = Remote(allow_local=self.config.webhook_allow_local, verify=self.verify)
        try:
            fetched = await client.request("GET", job.url, headers=headers)
        finally:
            self.requests += client.requests
            await client.close()
        if fetched.status == 304 and job.has_copy:
            await self.db.run(
                store.record_unchanged, job=job, owner=self.owner, now=utcnow(), every=every
            )
            return
        if fetched.status != 200:
            raise refusal(fetched.status, "ics")
        tz = await self._zone(job.user_id)
        busy = await asyncio.to_thread(
            connected.busy_of_text,
            fetched.body,
            tz=tz,
            now=utcnow(),
            details=job.visibility == "details",
        )
        await self.db.run_off_loop(
            _in_transaction(store.record_ics),
            job=job,
            owner=self.owner,
            busy=busy,
            etag=fetched.headers.get("etag"),
            last_modified=fetched.headers.get("last-modified"),
            now=utcnow(),
            every=every,
        )

    async def _poll_caldav(self, job: store.PollJob, every: timedelta) -> None:
        assert job.collection_url is not None
        client = Remote(
            allow_local=self.config.webhook_allow_local,
            username=job.username,
            password=job.password,
            verify=self.verify,
        )
        try:
            await self._caldav(client, job, every)
        finally:
            self.requests += client.requests
            await client.close()

    async def _caldav(self, client: Remote, job: store.PollJob, every: timedelta) -> None:
        url = job.collection_url
        assert url is not None
        token = None if job.full or not job.has_copy else job.sync_token
        synced = await client.dav("REPORT", url, depth="0", body=remote.sync_collection_body(token))
        if synced.status in (403, 409) and token is not None:  # the token expired: from scratch
            token = None
            synced = await client.dav(
                "REPORT", url, depth="0", body=remote.sync_collection_body(None)
            )
        if synced.status in (401, 404, 410) or synced.status >= 500:
            raise refusal(synced.status, "caldav")
        # ``full``: every object is read again (a first read, or the horizon moving on).
        full = token is None
        if synced.status == 207:
            status = _multistatus(synced.body)
            members = {
                a.href: a.text("{DAV:}getetag")
                for a in status.answers
                if a.status == 200 and not remote.same_path(a.href, url)
            }
            removed = [a.href for a in status.answers if a.status == 404]
            new_token, ctag = status.sync_token, job.ctag
        else:  # no sync-collection: getctag, then the members' ETags
            ctag_answer = await self._propfind(client, url, "0", "cs:getctag")
            ctag = next(
                (a.text("{http://calendarserver.org/ns/}getctag") for a in ctag_answer), None
            )
            if ctag and ctag == job.ctag and not job.full and job.has_copy:
                await self.db.run(
                    store.record_unchanged, job=job, owner=self.owner, now=utcnow(), every=every
                )
                return
            listed = await self._propfind(client, url, "1", "d:getetag")
            members = {
                a.href: a.text("{DAV:}getetag") for a in listed if not remote.same_path(a.href, url)
            }
            # The listing is complete: what it no longer holds is gone.
            removed, new_token = [h for h in job.objects if h not in members], None
            full = job.full or not job.has_copy
        wanted = [
            h for h, etag in members.items() if full or etag is None or job.objects.get(h) != etag
        ]
        if (
            not full
            and not wanted
            and not removed
            and new_token == job.sync_token
            and (ctag == job.ctag)
        ):
            await self.db.run(
                store.record_unchanged, job=job, owner=self.owner, now=utcnow(), every=every
            )
            return
        tz = await self._zone(job.user_id)
        changed: dict[str, tuple[str | None, connected.Busy]] = {}
        for i in range(0, len(wanted), remote.MULTIGET_BATCH):
            batch = wanted[i : i + remote.MULTIGET_BATCH]
            got = await client.dav("REPORT", url, depth="1", body=remote.multiget_body(batch))
            if got.status != 207:
                raise refusal(got.status, "caldav")
            for answer in _multistatus(got.body).answers:
                data = answer.text("{urn:ietf:params:xml:ns:caldav}calendar-data")
                if answer.status != 200 or data is None:
                    continue
                busy = await asyncio.to_thread(
                    _read_object, data.encode(), tz, job.visibility == "details"
                )
                changed[answer.href] = (answer.text("{DAV:}getetag"), busy)
        await self.db.run_off_loop(
            _in_transaction(store.record_caldav),
            job=job,
            owner=self.owner,
            changed=changed,
            removed=removed,
            sync_token=new_token,
            ctag=ctag,
            full=full,
            now=utcnow(),
            every=every,
        )

    async def _propfind(
        self, client: Remote, url: str, depth: str, prop: str
    ) -> list[remote.Answer]:
        found = await client.dav("PROPFIND", url, depth=depth, body=remote.propfind_body(prop))
        if found.status != 207:
            raise refusal(found.status, "caldav")
        return _multistatus(found.body).answers


def _read_object(data: bytes, tz: tzinfo, details: bool) -> connected.Busy:
    """One CalDAV object's busy time (and its events, with ``details``); an object that
    cannot be read gives none (counted)."""
    try:
        return connected.busy_of_text(data, tz=tz, now=utcnow(), details=details)
    except CalendarError:
        return connected.Busy(skipped=1)


def _in_transaction(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(conn: Connection, **kwargs: Any) -> Any:
        with atomic(conn):
            return fn(conn, **kwargs)

    return run


def _reason(exc: BaseException) -> str:
    if isinstance(exc, CalendarError):
        errors = getattr(exc, "errors", None)
        detail = "; ".join(e["message"] for e in errors) if errors else str(exc)
        return f"the calendar could not be read: {detail}"
    return str(exc)
