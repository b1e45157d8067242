"""A bounded, thread-safe LRU for what the list keeps in memory between requests (expanded
chunks of series, series' plans, each calendar's series): values that are pure functions of
their keys, so any request may fill and any may read them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class Lru:
    """At most ``size`` entries and, given ``most_weight``, entries weighing at most that
    together (each weighs what ``put`` is told, 1 by default); the least recently used go
    first."""

    def __init__(self, size: int, *, most_weight: int | None = None) -> None:
        self._size = size
        self._most_weight = most_weight
        self._weight = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value for ``key``, or ``None``."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: Any, *, weight: int = 1) -> None:
        with self._lock:
            replaced = self._entries.pop(key, None)
            if replaced is not None:
                self._weight -= replaced[1]
            self._entries[key] = (value, weight)
            self._weight += weight
            most = self._most_weight
            while len(self._entries) > self._size or (
                most is not None and self._weight > most and len(self._entries) > 1
            ):
                self._weight -= self._entries.popitem(last=False)[1][1]
