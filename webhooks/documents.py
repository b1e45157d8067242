"""Fetching a document from a URL an outsider chose, through the webhooks' SSRF guard.

OAuth clients may be known by the URL of their Client ID Metadata Document (``mcp_tools.oauth``):
the service then fetches that URL, which anyone can name. It goes out exactly as a webhook does:
the URL and every address it resolves to checked by ``guard.check_target`` (no private,
loopback or link-local address unless ``CALENDAR_WEBHOOK_ALLOW_LOCAL``), the connection pinned to
the checked addresses, TLS verified, no redirects, no proxies; and the answer is bounded in time
and size.
"""

from __future__ import annotations

import ssl

import httpx

from calendar_service.platform.errors import CalendarError
from webhooks import guard
from webhooks.transport import make_httpx_client

MAX_DOCUMENT = 64 * 1024
TIMEOUT_SECONDS = 5.0


class DocumentRefused(CalendarError, code="document_refused", status=400, title="Document refused"):
    """A document not fetched: not an https URL, answered other than 200, or over 64 KiB."""


async def fetch_document(
    url: str, *, allow_local: bool, verify: ssl.SSLContext | bool = True
) -> bytes:
    """The body of a JSON document at the https ``url`` (200 only, at most 64 KiB)."""
    if not url.startswith("https://"):
        raise DocumentRefused("only https URLs are fetched")
    target = await guard.check_target(url, allow_local=allow_local)
    async with make_httpx_client(verify=verify) as client:
        with_timeout = httpx.Timeout(TIMEOUT_SECONDS)
        with guard.pinned(target):
            return await _read(client, url, with_timeout)


async def _read(client: httpx.AsyncClient, url: str, limit: httpx.Timeout) -> bytes:
    async with client.stream("GET", url, timeout=limit) as response:
        if response.status_code != 200:
            raise DocumentRefused(f"answered {response.status_code}")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > MAX_DOCUMENT:
                raise DocumentRefused("larger than 64 KiB")
    return bytes(body)
