"""Identifiers: a short type prefix and 128 bits of randomness in base62 (Stripe style)."""

from __future__ import annotations

import secrets

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def base62(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = []
    while number:
        number, rem = divmod(number, 62)
        out.append(ALPHABET[rem])
    return "".join(reversed(out)) or "0"


def new_id(prefix: str, nbytes: int = 16) -> str:
    """``usr_…``, ``cal_…``, ``ev_…``, ``key_…``, ``evt_…`` (webhook messages)."""
    return f"{prefix}_{base62(secrets.token_bytes(nbytes)).rjust(22, '0')}"
