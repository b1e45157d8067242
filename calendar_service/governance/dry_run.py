"""What a dry run answers (``?dryRun=true``, ``dryRun: true``): the change the write would have
made, ``{dryRun: true, kind, eventId, before, after}`` (with a series edit's ``occurrences``
and a split's ``newSeries``), made by running the write and rolling it back
(``gateway.perform``). A write that would change nothing (a PATCH without fields, a replayed
``Idempotency-Key``) answers ``kind: null`` and the event as it is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_KEPT = ("occurrences", "newSeries", "undoes")


def dry_change(change: dict[str, Any]) -> dict[str, Any]:
    """One change as a dry run shows it."""
    answer = {
        "dryRun": True,
        "kind": change["kind"],
        "eventId": change["eventId"],
        "before": change["before"],
        "after": change["after"],
    }
    for name in _KEPT:
        if name in change:
            answer[name] = change[name]
    return answer


def dry_answer(value: Any, made: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A write of one event (create, update, delete, undo): its change, or none."""
    if made:
        return dry_change(made[-1])
    event = value[0] if isinstance(value, tuple) else value
    return {"dryRun": True, "kind": None, "eventId": event["id"], "before": event, "after": event}


def dry_import_answer(report: dict[str, Any], made: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An import: its report, and each change it would have made."""
    return {**report, "dryRun": True, "changes": [dry_change(c) for c in made]}
