"""What the scheduling links' public API (``rest.links``) and page (``account.booking_pages``)
share: a guest's request budget, per link and per client address, and a guest's write, which
runs through ``gateway.perform`` as the link's key's (transport ``link``), in its history
under the path's template (never the token: it is the link's secret)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request

from calendar_service.access.keys import Principal
from calendar_service.access.ratelimit import RateState
from calendar_service.asgi.context import header, request_id, service_key, services
from calendar_service.calendar import booking
from calendar_service.journal.invitations import MailPolicy
from calendar_service.operations.catalog import Operation
from calendar_service.operations.gateway import CallContext, Outcome, finished, perform
from calendar_service.platform import service_secrets
from calendar_service.platform.timeutil import utcnow


def _bucket(prefix: str, value: str) -> str:
    return prefix + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:32]


def _spend(conn: Connection, *, limiter: Any, buckets: list[str]) -> RateState:
    now = time.time()
    states = [limiter.spend(conn, key_id=bucket, now=now) for bucket in buckets]
    return min(states, key=lambda state: state.remaining)  # the budget nearer its end


async def spend_budget(request: Request, token: str) -> RateState:
    """Spend one request of the link's budget and of the client address's (429
    ``rate_limited`` when either is used up); what is left of the one nearer its end, for the
    answer's ``RateLimit-*`` headers."""
    svc = services(request)
    client = request.scope.get("client")
    buckets = [_bucket("gl_", token)]
    if client:
        buckets.append(_bucket("ga_", str(client[0])))
    return await svc.db.run(_spend, limiter=svc.guest_limiter, buckets=buckets)


def _principal(conn: Connection, *, token: str, manage: bool) -> Principal:
    now = utcnow()
    if manage:
        return booking.managed(conn, manage_token=token, now=now).link.principal
    return booking.open_link(conn, token=token, now=now).principal


async def mail_policy(request: Request) -> MailPolicy:
    key = await service_key(request, service_secrets.reply_link_key)
    return MailPolicy.of(services(request).config, key)


async def guest_write(
    request: Request,
    op: Operation,
    *,
    token: str,
    manage: bool,
    path: str,
    args: Callable[[], Mapping[str, Any]],
) -> Outcome[Any]:
    """``op`` (a booking, a cancel, a reschedule) for the link (or, ``manage``, the booking)
    ``token`` names: the link's key's write through ``gateway.perform``, recorded in its
    history as ``path`` (the route's template)."""
    svc = services(request)
    principal = await svc.db.run(_principal, token=token, manage=manage)
    scope = request.scope
    client = scope.get("client")
    ctx = CallContext(
        transport="link",
        operation=op.name,
        method=scope["method"],
        path=path,
        client_addr=client[0] if client else None,
        user_agent=header(scope, b"user-agent"),
        request_id=request_id(request),
        started=scope.get("state", {}).get("started", time.perf_counter()),
    )
    outcome: Outcome[Any] = await svc.db.run_grouped(
        perform,
        principal=principal,
        ctx=ctx,
        op=op,
        args=args,
        limiter=svc.limiter,
        proposal_ttl=svc.config.proposal_ttl,
    )
    return await finished(outcome)
