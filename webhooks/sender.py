"""One delivery attempt over httpx: check the target, sign, POST, read a little of the answer.

The ``httpx.AsyncClient`` is injected (one shared client per process;
``webhooks.transport.make_client`` builds the production one, whose connections go only to
addresses the guard checked). Redirects are never followed; the whole attempt, DNS included,
has one deadline. Secrets and bodies are never logged; errors are recorded as short,
secret-free strings.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import sniffio

from calendar_service import webhook_targets
from calendar_service.errors import WebhookTargetRefused
from webhooks import guard, signing

RESPONSE_EXCERPT_CHARS = 1000
ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one attempt did: ``status_code`` None means no HTTP answer (see ``error``)."""

    at: datetime
    duration_ms: float
    status_code: int | None = None
    response_excerpt: str | None = None
    error: str | None = None
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return self.status_code is not None and 200 <= self.status_code < 300


async def attempt(
    client: httpx.AsyncClient,
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
    # httpcore's locks ask sniffio which library runs, at each request and answer: told once
    # for this task (a delivery's), it no longer looks for the running task every time.
    sniffio.current_async_library_cvar.set("asyncio")

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
            with guard.pinned(target):
                # The one deadline above bounds the whole attempt; none per read or write.
                request = client.build_request(
                    "POST", url, content=body, headers=headers, timeout=None
                )
                response = await client.send(request, stream=True)
                try:
                    excerpt = await _read_excerpt(response)
                finally:
                    await response.aclose()
    except TimeoutError:
        return done(error=f"timed out after {deadline:g} s")
    except WebhookTargetRefused as exc:
        return done(error=_clip(f"target refused: {exc.message}"))
    except httpx.HTTPError as exc:
        return done(error=_clip(describe_error(exc)))
    except (httpx.InvalidURL, OSError) as exc:
        return done(error=_clip(f"{type(exc).__name__}: {exc}"))
    error = None
    if 300 <= response.status_code < 400:
        error = "redirect not followed: webhooks must be answered with a 2xx status"
    elif not 200 <= response.status_code < 300:
        error = f"HTTP {response.status_code}"
    return done(
        status_code=response.status_code,
        response_excerpt=excerpt,
        error=error,
        retry_after=parse_retry_after(response.headers.get("retry-after"), now=now),
    )


async def _read_excerpt(response: httpx.Response) -> str | None:
    """At most ``RESPONSE_EXCERPT_CHARS`` of the answer, without downloading the rest."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        chunks.append(chunk)
        size += len(chunk)
        if size >= RESPONSE_EXCERPT_CHARS * 4:
            break
    if not chunks:
        return None
    return b"".join(chunks).decode("utf-8", errors="replace")[:RESPONSE_EXCERPT_CHARS]


def describe_error(exc: httpx.HTTPError) -> str:
    """A short account of a transport failure (no URL, headers or body)."""
    kinds: dict[type[httpx.HTTPError], str] = {
        httpx.ConnectTimeout: "connection timed out",
        httpx.ReadTimeout: "read timed out",
        httpx.WriteTimeout: "write timed out",
        httpx.PoolTimeout: "no free connection in time",
        httpx.ConnectError: "connection failed",
        httpx.ReadError: "read failed",
        httpx.WriteError: "write failed",
        httpx.RemoteProtocolError: "protocol error",
    }
    kind = kinds.get(type(exc), type(exc).__name__)
    detail = str(exc).strip()
    if "CERTIFICATE_VERIFY_FAILED" in detail:
        kind, detail = "TLS certificate verification failed", detail.rsplit("]", 1)[-1].strip()
    return f"{kind}: {detail}" if detail else kind


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
