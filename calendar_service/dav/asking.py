"""What a CalDAV request's XML document asks, read into the core's plain values
(``caldav.asked``): a PROPFIND's properties, a REPORT's kind, filter and properties, a
PROPPATCH's names, a MKCALENDAR's settings. A document that asks what cannot be answered
raises (``DavRefused`` with its precondition, or ``BadRequest``); the routes hand that to
the core as the request's ``problem``."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from xml.etree.ElementTree import Element

from calendar_service.interop.caldav.asked import (
    TEXT_FIELDS,
    CalendarQuery,
    Multiget,
    NewCalendar,
    Report,
    SyncCollection,
    TextMatch,
    Wanted,
    Window,
)
from calendar_service.interop.caldav.names import c, d
from calendar_service.platform.errors import BadRequest, DavRefused


def propfind(root: Element | None) -> Wanted:
    """From a ``DAV:propfind`` document (an empty body is ``allprop``)."""
    if root is None:
        return Wanted(allprop=True)
    if root.tag != d("propfind"):
        raise BadRequest("A PROPFIND body must be a DAV:propfind element.")
    if root.find(d("propname")) is not None:
        return Wanted(propname=True)
    return _wanted(root.find(d("prop")))


def report(root: Element | None) -> Report:
    """A REPORT's document: ``calendar-query``, ``calendar-multiget`` or ``sync-collection``."""
    if root is None:
        raise BadRequest(
            "A REPORT needs a body: calendar-query, calendar-multiget or sync-collection."
        )
    wanted = _wanted(root.find(d("prop")))
    if root.tag == c("calendar-query"):
        possible, window, texts = _filter(root)
        return CalendarQuery(wanted, window, tuple(texts), possible)
    if root.tag == c("calendar-multiget"):
        return Multiget(wanted, tuple((h.text or "").strip() for h in root.findall(d("href"))))
    if root.tag == d("sync-collection"):
        return SyncCollection(wanted, (root.findtext(d("sync-token")) or "").strip())
    raise DavRefused(
        "Reports supported: calendar-query, calendar-multiget, sync-collection.",
        d("supported-report"),
    )


def proppatch(root: Element | None) -> tuple[str, ...]:
    """The names of the properties a ``DAV:propertyupdate`` sets or removes."""
    if root is None or root.tag != d("propertyupdate"):
        raise BadRequest("A PROPPATCH body must be a DAV:propertyupdate element.")
    return tuple(
        dict.fromkeys(p.tag for part in root for prop in part.findall(d("prop")) for p in prop)
    )


def mkcalendar(root: Element | None) -> NewCalendar:
    """What a ``CALDAV:mkcalendar`` body sets (nothing without a body)."""
    if root is None:
        return NewCalendar()
    if root.tag != c("mkcalendar"):
        raise BadRequest("A MKCALENDAR body must be a CALDAV:mkcalendar element.")
    props = {
        p.tag: p
        for part in root.findall(d("set"))
        for prop in part.findall(d("prop"))
        for p in prop
    }
    shown, zone = props.get(d("displayname")), props.get(c("calendar-timezone"))
    return NewCalendar(
        None if shown is None else shown.text, None if zone is None else (zone.text or "")
    )


def _wanted(prop: Element | None) -> Wanted:
    if prop is None:
        return Wanted(allprop=True)
    names = tuple(dict.fromkeys(p.tag for p in prop))
    data = prop.find(c("calendar-data"))
    if data is None:
        return Wanted(names)
    found = data.find(c("expand"))
    if found is None:
        return Wanted(names, calendar_data=True)
    low, high = _range(found, "expand")
    if low is None or high is None:
        raise DavRefused("expand needs a start and an end.", c("valid-filter"))
    return Wanted(names, calendar_data=True, expand=(low, high))


_UTC_TIME = re.compile(r"[0-9]{8}T[0-9]{6}Z")


def _time(value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    text = value.strip()
    try:
        if not _UTC_TIME.fullmatch(text):
            raise ValueError(text)
        return datetime(
            int(text[0:4]), int(text[4:6]), int(text[6:8]),
            int(text[9:11]), int(text[11:13]), int(text[13:15]), tzinfo=UTC,
        )  # fmt: skip
    except ValueError:
        raise DavRefused(
            f"The {what} must be a UTC date-time such as 20260101T000000Z.", c("valid-filter")
        ) from None


def _range(range_element: Element, what: str) -> Window:
    low = _time(range_element.get("start"), what)
    high = _time(range_element.get("end"), what)
    if low is None and high is None:
        raise DavRefused(f"The {what} needs a start or an end.", c("valid-filter"))
    if low is not None and high is not None and high <= low:
        raise DavRefused(f"The {what} must end after it starts.", c("valid-filter"))
    return low, high


_UNSUPPORTED = (
    "Filters supported: comp-filter, time-range, and text-match on UID, SUMMARY, DESCRIPTION "
    "and LOCATION."
)


def _text_match(prop: Element) -> TextMatch:
    name = (prop.get("name") or "").upper()
    tests = list(prop)
    match = tests[0] if len(tests) == 1 else None
    if name not in TEXT_FIELDS or match is None or match.tag != c("text-match"):
        raise DavRefused(_UNSUPPORTED, c("supported-filter"))
    collation = match.get("collation") or "i;ascii-casemap"
    if collation not in ("i;ascii-casemap", "i;octet"):
        raise DavRefused(
            "text-match collations supported: i;ascii-casemap, i;octet.",
            c("supported-collation"),
        )
    negate = (match.get("negate-condition") or "no").lower() == "yes"
    return TextMatch(TEXT_FIELDS[name], match.text or "", collation == "i;ascii-casemap", negate)


def _filter(body: Element) -> tuple[bool, Window, list[TextMatch]]:
    """Whether any object can match (a query for to-dos cannot), the window, and the text
    matches an object must pass."""
    found = body.find(c("filter"))
    top = None if found is None else found.find(c("comp-filter"))
    if (
        found is None
        or top is None
        or len(found) != 1
        or (top.get("name") or "").upper() != "VCALENDAR"
    ):
        raise DavRefused(
            "A calendar-query's filter is one comp-filter named VCALENDAR.", c("valid-filter")
        )
    window: Window = (None, None)
    texts: list[TextMatch] = []
    possible = True
    for inner in top:
        if inner.tag == c("is-not-defined"):
            possible = False
        elif inner.tag != c("comp-filter"):
            raise DavRefused(_UNSUPPORTED, c("supported-filter"))
        elif (inner.get("name") or "").upper() != "VEVENT":
            possible = False  # only events here
        else:
            for test in inner:
                if test.tag == c("time-range"):
                    window = _range(test, "time-range")
                elif test.tag == c("is-not-defined"):
                    possible = False
                elif test.tag == c("prop-filter"):
                    texts.append(_text_match(test))
                else:
                    raise DavRefused(_UNSUPPORTED, c("supported-filter"))
    return possible, window, texts


__all__ = ["mkcalendar", "propfind", "proppatch", "report"]
