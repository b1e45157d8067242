"""A bounded, thread-safe LRU for what the list keeps in memory between requests (expanded
chunks of series, series' plans, each calendar's series): values that are pure functions of
their keys, so any request may fill and any may read them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class Lru:
    """At most ``size`` entries; the least recently used goes first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value for ``key``, or ``None``."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
