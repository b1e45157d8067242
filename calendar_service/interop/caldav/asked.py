"""What a CalDAV request asks, as plain values: the front reads them from the request's XML
document (``dav.asking``), the core answers them (``resources``, ``reports``, ``writing``).

What a document asks that cannot be answered (a filter not supported, a time that is not
UTC) the front hands over as the request's ``problem``: the core raises it once the resource
is found, as it does a PUT's body that cannot be read, so that a path that does not exist is
404 whatever its body asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calendar_service.interop.caldav.objects import DavObject

Window = tuple[datetime | None, datetime | None]
"""A time range: its start and its end (UTC), either open."""

TEXT_FIELDS = {
    "UID": "uid",
    "SUMMARY": "title",
    "DESCRIPTION": "description",
    "LOCATION": "location",
}
"""The properties a ``text-match`` may test, and the object's field each is."""


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a PROPFIND (or a report's ``DAV:prop``) asks for: ``names`` (Clark), or every
    property (``allprop``), or their names only (``propname``); a report's
    ``calendar-data`` (``calendar_data``), its occurrences expanded over ``expand``."""

    names: tuple[str, ...] = ()
    allprop: bool = False
    propname: bool = False
    calendar_data: bool = False
    expand: tuple[datetime, datetime] | None = None


@dataclass(frozen=True, slots=True)
class TextMatch:
    """A ``prop-filter`` with a ``text-match`` (RFC 4791 §9.7.5): a substring of the
    property, ``i;ascii-casemap`` (the default) or ``i;octet``; ``negate``: must not hold."""

    field: str  # "uid", or a row's column
    text: str
    casemap: bool
    negate: bool

    def holds(self, obj: DavObject) -> bool:
        values = [obj.uid] if self.field == "uid" else [getattr(r, self.field) for r in obj.rows]
        wanted = self.text.lower() if self.casemap else self.text
        found = any(wanted in (v.lower() if self.casemap else v) for v in values if v is not None)
        return found != self.negate


@dataclass(frozen=True, slots=True)
class CalendarQuery:
    """``calendar-query`` (RFC 4791 §7.8): the objects in ``window`` passing ``texts``;
    ``possible`` is false when no event can match (a query for to-dos)."""

    wanted: Wanted
    window: Window = (None, None)
    texts: tuple[TextMatch, ...] = ()
    possible: bool = True


@dataclass(frozen=True, slots=True)
class Multiget:
    """``calendar-multiget`` (RFC 4791 §7.9): the objects at ``hrefs``."""

    wanted: Wanted
    hrefs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SyncCollection:
    """``sync-collection`` (RFC 6578): the changes since ``token`` (empty: everything)."""

    wanted: Wanted
    token: str


Report = CalendarQuery | Multiget | SyncCollection


@dataclass(frozen=True, slots=True)
class NewCalendar:
    """What a ``MKCALENDAR`` body sets: the ``displayname``, and the text of its
    ``calendar-timezone`` (a VCALENDAR with a VTIMEZONE)."""

    display_name: str | None = None
    time_zone_text: str | None = None


__all__ = [
    "TEXT_FIELDS",
    "CalendarQuery",
    "Multiget",
    "NewCalendar",
    "Report",
    "SyncCollection",
    "TextMatch",
    "Wanted",
    "Window",
]
