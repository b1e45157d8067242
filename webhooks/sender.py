"""One delivery attempt: check the target, sign, POST, read a little of the answer.

The ``WebhookClient`` is injected (one shared client per process; ``webhooks.transport.make_client``
builds it): its connections go only to the addresses the guard checked for this attempt.
Redirects are never followed; the whole attempt, DNS included, has one deadline. Secrets and
bodies are never logged; errors are recorded as short, secret-free strings.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from datetime import UTC, datetime

from calendar_service.delivery import webhook_targets
from calendar_service.delivery.deliveries import (
    ERROR_CHARS,
    RESPONSE_EXCERPT_CHARS,
    AttemptResult,
)
from calendar_service.platform.errors import WebhookTargetRefused
from webhooks import guard, signing
from webhooks.http11 import RequestFailed, WebhookClient

_EXCERPT_BYTES = RESPONSE_EXCERPT_CHARS * 4  # enough for the excerpt in any UTF-8 text


async def attempt(
    client: WebhookClient,
    *,
    url: str,
    msg_id: str,
    body: bytes,
    secrets: list[str],
    seed_header: str,
    allow_local: bool,
    deadline: float,
    now: datetime,
    resolver: webhook_targets.Resolve = webhook_targets.system_resolve,
) -> AttemptResult:
    """Check the target, sign for ``now`` and POST ``body`` within ``deadline`` seconds in all
    (DNS included); never raises for network trouble."""
    started = time.perf_counter()

    def done(**fields: object) -> AttemptResult:
        elapsed = (time.perf_counter() - started) * 1000
        return AttemptResult(at=now, duration_ms=round(elapsed, 3), **fields)  # type: ignore[arg-type]

    try:
        async with asyncio.timeout(deadline):
            target = await guard.check_target(url, allow_local=allow_local, resolve=resolver)
            headers = signing.signature_headers(
                secrets=secrets,
                msg_id=msg_id,
                timestamp=int(now.timestamp()),
                body=body,
                seed_header=seed_header,
            )
            headers["content-type"] = "application/json"
            answer = await client.post(target, body=body, headers=headers, max_body=_EXCERPT_BYTES)
    except TimeoutError:
        return done(error=f"timed out after {deadline:g} s")
    except WebhookTargetRefused as exc:
        return done(error=_clip(f"target refused: {exc.message}"))
    except RequestFailed as exc:
        return done(error=_clip(str(exc)))
    except OSError as exc:
        return done(error=_clip(f"{type(exc).__name__}: {exc}"))
    status = answer.status
    error = None
    if 300 <= status < 400:
        error = "redirect not followed: webhooks must be answered with a 2xx status"
    elif not 200 <= status < 300:
        error = f"HTTP {status}"
    excerpt = None
    if answer.body:
        excerpt = answer.body.decode("utf-8", errors="replace")[:RESPONSE_EXCERPT_CHARS]
    return done(
        status_code=status,
        response_excerpt=excerpt,
        error=error,
        retry_after=parse_retry_after(answer.retry_after, now=now),
    )


def parse_retry_after(value: str | None, *, now: datetime) -> float | None:
    """``Retry-After`` as seconds from ``now`` (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def _clip(text: str) -> str:
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"
