"""Signing a webhook body: the seed's header and the Standard Webhooks headers.

One secret, two keys (both derived from the ``whsec_…`` string the owner was shown):

- ``x-<service>-signature: v1=<hex>`` is HMAC-SHA256 over the raw body, keyed with the **whole
  secret string exactly as shown** (``whsec_`` prefix included, as UTF-8 bytes). This is what the
  product specification promises.
- ``webhook-signature: v1,<base64>`` is the Standard Webhooks signature: HMAC-SHA256 over
  ``{webhook-id}.{webhook-timestamp}.{body}``, keyed with the **base64-decoded part after
  ``whsec_``** (32 bytes). Standard verifier libraries (``standardwebhooks``, svix) compute it.

While a rotated-out secret is still valid, every value is repeated for each secret, newest
first: ``v1=<new>,v1=<old>`` and ``v1,<new> v1,<old>``. A receiver accepts the delivery when any
value matches the secret it knows.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format's prefix, not a secret


def secret_key_bytes(secret: str) -> bytes:
    """The Standard Webhooks key: the base64-decoded part after ``whsec_``."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    return base64.b64decode(encoded + "=" * (-len(encoded) % 4))


def seed_signature(secret: str, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``body`` keyed with the secret string as shown."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    """The base64 Standard Webhooks signature of ``{msg_id}.{timestamp}.{body}``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key_bytes(secret), signed, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def signature_headers(
    *,
    secrets: Sequence[str],
    msg_id: str,
    timestamp: int,
    body: bytes,
    seed_header: str,
) -> dict[str, str]:
    """Every signing header of one attempt, one value per secret still valid (newest first)."""
    if not secrets:
        raise ValueError("at least one signing secret is needed")
    return {
        seed_header: ",".join(f"v1={seed_signature(s, body)}" for s in secrets),
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            f"v1,{standard_signature(s, msg_id=msg_id, timestamp=timestamp, body=body)}"
            for s in secrets
        ),
    }
