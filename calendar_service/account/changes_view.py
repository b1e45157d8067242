"""How the pages show a change (or a proposal): the event before and after, field by field.

``diff`` gives the rows of the before/after view the *Activity*, *Pending* and undo pages
share: for an update the fields that differ, for a create or a delete every field the event
has. Only words and values for the page; what changed is the core's (``changes``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

# The event's fields as the pages name them, in the order they are shown.
FIELDS = (
    ("title", "Title"),
    ("startsAt", "Starts"),
    ("endsAt", "Ends"),
    ("allDay", "All day"),
    ("recurrence", "Repeats"),
    ("location", "Location"),
    ("description", "Description"),
    ("transparency", "Shows as"),
    ("status", "Status"),
    ("calendar", "Calendar"),
    ("timeZone", "Time zone"),
)
KINDS = {"created": "Created", "updated": "Changed", "deleted": "Deleted"}


class Row(NamedTuple):
    label: str
    before: str  # "" where there was nothing
    after: str
    changed: bool


def _shown(name: str, value: Any) -> str:
    if value is None or value == []:
        return ""
    if name == "allDay":
        return "Yes" if value else "No"
    if name == "transparency":
        return "Free" if value == "transparent" else "Busy"
    if name == "recurrence":
        return "; ".join(str(line) for line in value)
    if name in ("startsAt", "endsAt") and isinstance(value, str) and "T" in value:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return f"{moment:%a} {moment.day} {moment:%b %Y, %H:%M} ({moment:%z})"
    return str(value)


def diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[Row]:
    """The rows of the before/after view of ``before`` and ``after`` (either ``None``)."""
    rows = []
    for name, label in FIELDS:
        old = _shown(name, (before or {}).get(name))
        new = _shown(name, (after or {}).get(name))
        if before is not None and after is not None and old == new:
            continue
        if not old and not new:
            continue
        rows.append(Row(label, old, new, old != new))
    return rows


def title_of(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """The event's title, as it is after (or was before, for a delete)."""
    shown = after or before or {}
    return str(shown.get("title") or "(untitled)")
