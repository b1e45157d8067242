"""Secrets the service must use again but never show (a connected calendar's password, an
``ics`` URL with its token): sealed with AES-GCM before they are stored.

The key is ``CALENDAR_CONNECTION_KEY`` when set (any text: its SHA-256 is the key), else derived
from a secret the service makes once and keeps (``service_secrets``), so that every process
on the database shares it. A sealed value is ``v1.<nonce>.<ciphertext>`` (URL-safe base64); a
value that does not open (another key, a changed row) raises ``ValueError`` and is never
shown.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from datetime import datetime

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection

from calendar_service.platform.service_secrets import kept_secret

SEALING_SECRET_NAME = "connection_sealing"  # noqa: S105 - a row name, not a secret
_AAD = b"calendar-service.connection-secret"


def sealing_key(conn: Connection, *, configured: str | None, now: datetime) -> bytes:
    """The 256-bit key secrets are sealed with."""
    if configured:
        return hashlib.sha256(configured.encode()).digest()
    secret = kept_secret(conn, name=SEALING_SECRET_NAME, now=now)
    return hmac.new(secret.encode(), b"calendar-service.sealing", hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal(key: bytes, value: str) -> str:
    nonce = os.urandom(12)
    return f"v1.{_b64(nonce)}.{_b64(AESGCM(key).encrypt(nonce, value.encode(), _AAD))}"


def unseal(key: bytes, sealed: str) -> str:
    try:
        version, nonce, body = sealed.split(".")
        if version != "v1":
            raise ValueError("unknown version")
        return AESGCM(key).decrypt(_unb64(nonce), _unb64(body), _AAD).decode()
    except Exception:
        raise ValueError("the sealed secret does not open with this key") from None
