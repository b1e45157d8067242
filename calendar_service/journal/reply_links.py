"""Signed reply links: accept, tentative, decline, one set per attendee, event and sequence.

A link's token is ``<payload>.<signature>``, both base64url: the payload names the event, the
attendee's email and the invitation's ``SEQUENCE``; the signature is HMAC-SHA-256 over it
with the service's own key (``service_secrets.reply_link_key``), compared with
``hmac.compare_digest``. No sign-in: whoever holds the link answers for that attendee, as
with Google's and Outlook's. A token altered, or signed with another key, is refused
(``read_token``); one for an older ``SEQUENCE`` than the event's is refused by ``replies``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

import orjson

REPLY_PATH = "/invitations/reply"
RESPONSES = ("accepted", "tentative", "declined")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, b"reply-link." + payload.encode(), hashlib.sha256).digest())


def make_token(*, key: bytes, event_id: str, email: str, sequence: int) -> str:
    payload = _b64(orjson.dumps([event_id, email, sequence]))
    return f"{payload}.{_sign(key, payload)}"


def read_token(key: bytes, token: str) -> tuple[str, str, int] | None:
    """``(event id, email, sequence)`` of a token signed with ``key``; ``None`` otherwise."""
    payload, dot, signature = token.partition(".")
    if not dot or len(token) > 2000:
        return None
    if not hmac.compare_digest(_sign(key, payload).encode(), signature.encode()):
        return None
    try:
        event_id, email, sequence = orjson.loads(_unb64(payload))
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        return None
    if not isinstance(event_id, str) or not isinstance(email, str) or type(sequence) is not int:
        return None
    return event_id, email, sequence


def reply_links(
    *, base_url: str, key: bytes, event_id: str, email: str, sequence: int
) -> dict[str, str]:
    """The three links of one invitation (``{response: url}``)."""
    token = make_token(key=key, event_id=event_id, email=email, sequence=sequence)
    return {r: f"{base_url}{REPLY_PATH}?t={token}&r={r}" for r in RESPONSES}
