"""Identifiers: a short type prefix and 22 random base62 characters (131 bits; Stripe style)."""

from __future__ import annotations

import secrets

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ID_CHARS = 22
# A random byte below 248 (= 4 x 62) picks a character uniformly; 248-255 are dropped.
_TO_CHAR = bytes(ord(ALPHABET[i % 62]) for i in range(256))
_DROPPED = bytes(range(248, 256))


def base62(data: bytes) -> str:
    """``data`` as a big-endian number in base62 (for checksums; ids use ``random_base62``)."""
    number = int.from_bytes(data, "big")
    out = []
    while number:
        number, rem = divmod(number, 62)
        out.append(ALPHABET[rem])
    return "".join(reversed(out)) or "0"


def random_base62(length: int) -> str:
    """``length`` uniformly random base62 characters from the OS's CSPRNG.

    Maps random bytes to characters in C (``bytes.translate``), dropping the few bytes that
    would bias the draw; every request makes at least one id, and the arithmetic way took
    several microseconds."""
    while True:
        chars = secrets.token_bytes(length + length // 2).translate(_TO_CHAR, _DROPPED)
        if len(chars) >= length:
            return chars[:length].decode()


def new_id(prefix: str) -> str:
    """``usr_…``, ``cal_…``, ``ev_…``, ``key_…``, ``evt_…`` (webhook messages), ``req_…``."""
    return f"{prefix}_{random_base62(ID_CHARS)}"
