"""Page tokens: which page of which list query comes next, signed so that only the server
makes them.

A page token is ``base64url(mac || payload)``: the payload is the last row's start and id, and
the sync position taken at the list's first page (``sync.Position``: the last page's
``nextSyncToken`` is made of it, so a change made while the pages are read is in the next
sync); the MAC an HMAC-SHA256 (cut to 16 bytes) with the server's page-token key over the
query the page belongs to (the key, its owner and calendar, the window) and the payload. A
token is opaque to callers; one the server did not make, or made for another query, is refused
before anything in it is read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from calendar_service.access.keys import Principal
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.timeutil import check_instant, from_utc_text, utc_text

_MAC_BYTES = 16
_TOKEN_MAX = 512


def bad_page_token() -> ValidationFailed:
    return ValidationFailed(
        [
            FieldError(
                "pageToken",
                "is not a page token returned by this query; start again without pageToken",
            )
        ]
    )


def token_mac(key: bytes, query: bytes, payload: bytes) -> bytes:
    digest = hmac.new(key, query + b"\n" + payload, hashlib.sha256).digest()
    return digest[:_MAC_BYTES]


def token_query(
    principal: Principal,
    low: datetime | None,
    high: datetime | None,
    *,
    single_events: bool = True,
    chosen: Sequence[str] | None = None,
    search: str | None = None,
) -> bytes:
    """What a token is bound to. The window's instants, not the text that named them; a list
    of series (``singleEvents=false``) is another query than one of occurrences; a list
    narrowed to some calendars (``chosen``: their ids, however ``calendarIds`` named them)
    another than one of every calendar the key reaches, or of other calendars; a search
    (``search``: ``Search.token_part``) another than the list, or another search."""
    parts = [
        principal.key_id,
        principal.user_id,
        principal.calendar_id or "",
        "" if low is None else utc_text(low),
        "" if high is None else utc_text(high),
    ]
    if not single_events:
        parts.append("series")
    if chosen is not None:
        parts.append("calendars:" + ",".join(sorted(chosen)))
    if search is not None:
        parts.append(search)
    return "\x1f".join(parts).encode()


def encode_token(key: bytes, query: bytes, starts_at: str, event_id: str, position: Any) -> str:
    """``starts_at`` is the stored UTC text of the page's last event (``utc_text``);
    ``position``: the list's sync position (``sync.Position.compact``), carried along."""
    return signed(key, query, orjson.dumps([starts_at, event_id, position]))


def signed(key: bytes, query: bytes, payload: bytes) -> str:
    """``payload`` with its MAC for ``query``, as URL-safe base64 without padding."""
    raw = token_mac(key, query, payload) + payload
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def verified(key: bytes, query: bytes, token: str, *, most: int = _TOKEN_MAX) -> bytes | None:
    """The payload of a token ``signed`` made for ``query``, else ``None``: only the text this
    server wrote (no character outside the alphabet, which a lenient decoder would skip, and no
    other spelling of the same bytes), at most ``most`` characters, with a MAC that holds."""
    if len(token) > most:
        return None
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
    except (ValueError, binascii.Error):
        return None
    if base64.urlsafe_b64encode(raw).decode().rstrip("=") != token:
        return None
    mac, payload = raw[:_MAC_BYTES], raw[_MAC_BYTES:]
    if len(mac) != _MAC_BYTES or not hmac.compare_digest(mac, token_mac(key, query, payload)):
        return None
    return payload


def decode_token(key: bytes, query: bytes, token: str) -> tuple[datetime, str, Any]:
    """The start and id after which the next page begins, and the sync position it carries
    (checked by the caller); a 400 for any token this server did not make for ``query``."""
    payload = verified(key, query, token)
    if payload is None:
        raise bad_page_token()
    # Made by this server for this query; still read as carefully as any input.
    try:
        starts_text, event_id, position = orjson.loads(payload)
        starts_at = check_instant(from_utc_text(starts_text))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise bad_page_token() from None
    if not isinstance(event_id, str) or "\x00" in event_id:  # no id has a NUL
        raise bad_page_token()
    return starts_at, event_id, position
