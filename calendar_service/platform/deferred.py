"""``Later``: an operation's result whose remaining work needs no database.

An operation that has read all it needs may leave CPU-heavy work (expanding series) for after
its transaction: it returns ``Later(finish)``, ``gateway.perform`` records the call and commits
as for any result, and the async fronts run ``finish`` on a thread (``gateway.finished``), so
that the work holds neither the event loop nor a transaction (nor SQLite's write lock, nor a
pooled PostgreSQL connection). ``finish`` gives what the operation would have returned; it
must not raise a ``CalendarError`` (the call is already recorded as done).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Later:
    finish: Callable[[], Any]

    def then(self, step: Callable[[Any], Any]) -> Later:
        """This work followed by ``step`` applied to what it gives."""
        finish = self.finish
        return Later(lambda: step(finish()))


def finish(value: Any) -> Any:
    """``value``, its work done here and now if it is a ``Later``."""
    return value.finish() if isinstance(value, Later) else value
