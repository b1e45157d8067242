"""What the CalDAV core deals in, without XML: the WebDAV and CalDAV names of properties and
preconditions (Clark notation: ``d("getetag")``, ``c("calendar-data")``) and the answers the
core gives (``Multistatus``: responses of properties as plain values; what a request asks is
``asked``'s). The front (``dav.documents``, ``dav.asking``, ``dav.multistatus``) parses
request bodies, reads what they ask and writes every XML answer;
the two helpers both it and the connected-calendar client use, which need no XML library, are
here: ``escape_text`` (character data escaped) and ``within_bounds`` (a parsed document's size).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

DAV = "DAV:"
CALDAV = "urn:ietf:params:xml:ns:caldav"
CS = "http://calendarserver.org/ns/"
APPLE = "http://apple.com/ns/ical/"
OURS = "urn:x-calendar-service:dav"


def qn(namespace: str, name: str) -> str:
    """An element's name in Clark notation: ``{DAV:}prop``."""
    return f"{{{namespace}}}{name}"


def d(name: str) -> str:
    return qn(DAV, name)


def c(name: str) -> str:
    return qn(CALDAV, name)


@dataclass(frozen=True, slots=True)
class Href:
    """A property whose value is one ``DAV:href`` (a path, or ``mailto:``)."""

    path: str


@dataclass(frozen=True, slots=True)
class MediaType:
    """One entry of ``CALDAV:supported-calendar-data``."""

    content_type: str
    version: str


Value = str | Href | tuple[str | MediaType, ...] | None
"""A property's value: its text; one href; the names it lists (a resource type's kinds, a
privilege set's privileges, a report set's reports, a component set's components: how each
is written is the front's, by the property's name) or the media types of
``supported-calendar-data``; ``None``: the property's name only (``propname``, a refused
``PROPPATCH``)."""


@dataclass(slots=True)
class Found:
    """One resource's ``DAV:response``: the properties found (``status``, 200 by default)
    and the names of those not (404)."""

    href: str
    props: list[tuple[str, Value]]
    missing: list[str] = field(default_factory=list)
    status: int = 200


@dataclass(frozen=True, slots=True)
class Gone:
    """A ``DAV:response`` with a status of its own (a multiget's unknown href, a sync's
    deleted object)."""

    href: str
    status: int = 404


@dataclass(frozen=True, slots=True)
class Kept:
    """A response made when asked for (``make``; ``None``: left out), which the front may
    keep written by ``key`` (``None``: not to be kept): a report's object at its version."""

    key: Hashable | None
    make: Callable[[], Found | None]


@dataclass(slots=True)
class Multistatus:
    """A ``DAV:multistatus`` answer: its responses, in order, and a sync's token."""

    responses: list[Found | Gone | Kept] = field(default_factory=list)
    sync_token: str | None = None


def escape_text(text: str) -> str:
    """Character data, escaped as ElementTree escapes it (``&``, ``<``, ``>``)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def within_bounds(root: Any, *, depth: int, elements: int) -> bool:
    """Whether the document is nested at most ``depth`` deep with at most ``elements``
    elements, walked without recursion (and stopped as soon as it is not): a request body's
    bounds (``dav.documents``), a remote server's answer's (``webhooks.caldav_client``)."""
    count = 0
    stack = [(root, 1)]
    while stack:
        element, level = stack.pop()
        count += 1
        if level > depth or count > elements:
            return False
        stack.extend((inner, level + 1) for inner in element)
    return True
