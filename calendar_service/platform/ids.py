"""Identifiers: a short type prefix and 22 base62 characters, the time to the millisecond and then
89 drawn bits (``new_id``)."""

from __future__ import annotations

import os
import threading
import time

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ID_CHARS = 22
# A random byte below 248 (= 4 x 62) picks a character uniformly; 248-255 are dropped.
_TO_CHAR = bytes(ord(ALPHABET[i % 62]) for i in range(256))
_DROPPED = bytes(range(248, 256))


def base62(data: bytes) -> str:
    """``data`` as a big-endian number in base62 (for checksums)."""
    number = int.from_bytes(data, "big")
    out = []
    while number:
        number, rem = divmod(number, 62)
        out.append(ALPHABET[rem])
    return "".join(reversed(out)) or "0"


_POOL_BYTES = 4096


class _Pool:
    """Base62 characters for ids, drawn from the OS's CSPRNG 4 KB at a time, handed out in order.

    One ``os.urandom`` call per ~260 ids instead of one per id: each call releases the GIL,
    and under load the loop's thread then waits to take it back (the list's CPU per request
    fell by about 5 %: docs/performance.md). The characters are never handed out twice: the
    pool is taken under a lock, and a forked child starts with an empty one
    (``os.register_at_fork``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.chars = b""
        self.at = 0

    def take(self, length: int) -> str:
        with self.lock:
            at = self.at
            if at + length > len(self.chars):
                self.chars, at = _fresh_chars(length), 0
            self.at = at + length
            return self.chars[at : at + length].decode()

    def forget(self) -> None:
        self.lock = threading.Lock()
        self.chars, self.at = b"", 0


def _fresh_chars(length: int) -> bytes:
    while True:  # 248/256 of the bytes are kept: ~3,970 characters a draw
        chars = os.urandom(_POOL_BYTES).translate(_TO_CHAR, _DROPPED)
        if len(chars) >= length:
            return chars


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def random_base62(length: int) -> str:
    """``length`` uniformly random base62 characters straight from the OS's CSPRNG (for
    secrets such as feed tokens; ids draw theirs from ``_POOL``)."""
    while True:
        chars = os.urandom(length + length // 2).translate(_TO_CHAR, _DROPPED)
        if len(chars) >= length:
            return chars[:length].decode()


_TIME_CHARS = 7  # milliseconds since 2020 in base62: 62**7 ms is 111 years
_EPOCH_MS = 1_577_836_800_000  # 2020-01-01T00:00:00Z


_PAIRS = tuple(a + b for a in ALPHABET for b in ALPHABET)  # 0..3843 as two characters
_last_time: tuple[int, str] = (-1, "")


def _time_chars(ms: int) -> str:
    """``ms`` as 7 base62 characters (kept for the millisecond: ids come in bursts)."""
    global _last_time
    last_ms, text = _last_time
    if ms != last_ms:
        high, low = divmod(ms, 3844)
        high, mid = divmod(high, 3844)
        first, second = divmod(high, 3844)
        text = ALPHABET[first % 62] + _PAIRS[second] + _PAIRS[mid] + _PAIRS[low]
        _last_time = (ms, text)
    return text


def new_id(prefix: str) -> str:
    """``usr_…``, ``cal_…``, ``ev_…``, ``key_…``, ``evt_…`` (webhook messages), ``req_…``:
    22 base62 characters, the first 7 the time to the millisecond, the other 15 drawn (89 bits).

    Ids made later sort after (within a process, and across processes to their clocks), so a
    table keyed or indexed by them grows at its right edge: a create writes one page of each
    such index, the last, which the creates of a group commit share, instead of a page drawn at
    random from the whole index (each written to the WAL, then checkpointed). The time says no
    more than the row's own ``created_at``; the drawn part keeps ids unguessable."""
    ms = time.time_ns() // 1_000_000 - _EPOCH_MS
    return f"{prefix}_{_time_chars(ms)}{_POOL.take(ID_CHARS - _TIME_CHARS)}"
