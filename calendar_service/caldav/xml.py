"""WebDAV XML in and out: request bodies parsed with ``defusedxml`` (no DTD, no entities, no
external references) within bounds, and ``multistatus`` answers built with the standard
library's ElementTree.

Bounds: the front refuses a body over ``MAX_BODY`` bytes (413) before it is parsed; here a
document deeper than ``MAX_DEPTH`` or with more than ``MAX_ELEMENTS`` elements is refused
(400), walked without recursion.
"""

from __future__ import annotations

from collections.abc import Iterable
from xml.etree.ElementTree import Element, ParseError, SubElement, register_namespace, tostring

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from calendar_service.errors import BadRequest

MAX_BODY = 1024 * 1024
"""The largest XML request body (PROPFIND, REPORT): 1 MiB."""
MAX_DEPTH = 32
MAX_ELEMENTS = 10_000

DAV = "DAV:"
CALDAV = "urn:ietf:params:xml:ns:caldav"
CS = "http://calendarserver.org/ns/"
APPLE = "http://apple.com/ns/ical/"
OURS = "urn:x-calendar-service:dav"

for _prefix, _uri in (("d", DAV), ("cal", CALDAV), ("cs", CS), ("ical", APPLE), ("x", OURS)):
    register_namespace(_prefix, _uri)


def qn(namespace: str, name: str) -> str:
    """An element's name in Clark notation: ``{DAV:}prop``."""
    return f"{{{namespace}}}{name}"


def d(name: str) -> str:
    return qn(DAV, name)


def c(name: str) -> str:
    return qn(CALDAV, name)


def parse(body: bytes) -> Element | None:
    """The request's XML document (``None`` for an empty body), or ``BadRequest``: not
    well-formed, a DTD or entity, too deep, too many elements."""
    if not body.strip():
        return None
    try:
        root = SafeET.fromstring(body, forbid_dtd=True)
    except DefusedXmlException:
        raise BadRequest(
            "The XML body declares a DTD or entities, which are refused: send plain XML."
        ) from None
    except (ParseError, ValueError):
        raise BadRequest("The body is not well-formed XML.") from None
    _check_bounds(root)
    return root


def _check_bounds(root: Element) -> None:
    count = 0
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH or count > MAX_ELEMENTS:
            raise BadRequest(
                f"The XML body is nested deeper than {MAX_DEPTH} elements or has more than "
                f"{MAX_ELEMENTS}: send a smaller request."
            )
        stack.extend((child, depth + 1) for child in element)


def element(name: str, text: str | None = None, *children: Element) -> Element:
    made = Element(name)
    if text is not None:
        made.text = text
    made.extend(children)
    return made


def child(parent: Element, name: str, text: str | None = None) -> Element:
    made = SubElement(parent, name)
    if text is not None:
        made.text = text
    return made


def error_body(condition: str | None, message: str, href: str | None = None) -> bytes:
    """``DAV:error`` (RFC 4918 §16) with the precondition's element, if any, and the message
    (in our namespace, as sabre/dav does with its own)."""
    root = Element(d("error"))
    if condition is not None:
        cond = child(root, condition)
        if href is not None:
            child(cond, d("href"), href)
    child(root, qn(OURS, "message"), message)
    return document(root)


def document(root: Element) -> bytes:
    return tostring(root, encoding="utf-8", xml_declaration=True)


STATUS_TEXT = {
    200: "OK",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    507: "Insufficient Storage",
}


def status_line(status: int) -> str:
    return f"HTTP/1.1 {status} {STATUS_TEXT.get(status, '')}".rstrip()


class Multistatus:
    """A ``DAV:multistatus`` answer built response by response."""

    def __init__(self) -> None:
        self.root = Element(d("multistatus"))

    def propstats(self, href: str, found: Iterable[Element], missing: Iterable[str]) -> None:
        """One ``DAV:response``: the properties found (200) and those not (404)."""
        response = child(self.root, d("response"))
        child(response, d("href"), href)
        for status, props in ((200, list(found)), (404, [Element(n) for n in missing])):
            if props:
                propstat = child(response, d("propstat"))
                prop = child(propstat, d("prop"))
                prop.extend(props)
                child(propstat, d("status"), status_line(status))

    def status(self, href: str, status: int) -> None:
        """One ``DAV:response`` with a status of its own (a multiget's unknown href, a sync's
        deleted object)."""
        response = child(self.root, d("response"))
        child(response, d("href"), href)
        child(response, d("status"), status_line(status))

    def sync_token(self, token: str) -> None:
        child(self.root, d("sync-token"), token)

    def body(self) -> bytes:
        return document(self.root)
