"""The WebDAV names the resources' properties and preconditions are called by (Clark
notation: ``d("getetag")``, ``c("calendar-data")``), and the ``multistatus`` answers the
core writes of them, as text. Reading request bodies and writing ``DAV:error`` bodies is the
front's (``dav.documents``).
"""

from __future__ import annotations

from collections.abc import Iterable
from xml.etree.ElementTree import Element, SubElement, register_namespace

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


def within_bounds(root: Element, *, depth: int, elements: int) -> bool:
    """Whether the document is nested at most ``depth`` deep with at most ``elements``
    elements, walked without recursion (and stopped as soon as it is not)."""
    count = 0
    stack = [(root, 1)]
    while stack:
        element, level = stack.pop()
        count += 1
        if level > depth or count > elements:
            return False
        stack.extend((child, level + 1) for child in element)
    return True


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


STATUS_TEXT = {
    200: "OK",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    507: "Insufficient Storage",
}


def status_line(status: int) -> str:
    return f"HTTP/1.1 {status} {STATUS_TEXT.get(status, '')}".rstrip()


_PREFIXES = {DAV: "d", CALDAV: "cal", CS: "cs", APPLE: "ical", OURS: "x"}
_OPEN = (
    "<?xml version='1.0' encoding='utf-8'?>\n<d:multistatus"
    + "".join(f' xmlns:{p}="{uri}"' for uri, p in _PREFIXES.items())
    + ">"
)
_CLOSE = "</d:multistatus>"


def escape_text(text: str) -> str:
    """Character data, escaped as ElementTree escapes it (``&``, ``<``, ``>``)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _escape_attribute(text: str) -> str:
    text = escape_text(text).replace('"', "&quot;")
    return text.replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#09;")


def _name(clark: str, declared: list[str]) -> str:
    """``clark``'s qualified name: a prefix of the multistatus' own, else one declared on the
    element (added to ``declared``)."""
    if clark[:1] != "{":
        return clark
    uri, _, local = clark[1:].partition("}")
    prefix = _PREFIXES.get(uri)
    if prefix is None:
        prefix = f"ns{len(declared)}"
        declared.append(f' xmlns:{prefix}="{_escape_attribute(uri)}"')
    return f"{prefix}:{local}"


def serialize(element: Element, out: list[str]) -> None:
    """``element`` as text, appended to ``out`` (within a multistatus: its prefixes are
    declared there)."""
    declared: list[str] = []
    name = _name(element.tag, declared)
    attributes = "".join(
        f' {_name(k, declared)}="{_escape_attribute(v)}"' for k, v in element.attrib.items()
    )
    out.append(f"<{name}{''.join(declared)}{attributes}")
    if element.text is None and not len(element):
        out.append("/>")
    else:
        out.append(">")
        if element.text:
            out.append(escape_text(element.text))
        for inner in element:
            serialize(inner, out)
            if inner.tail:
                out.append(escape_text(inner.tail))
        out.append(f"</{name}>")


def response_text(
    href: str, found: Iterable[Element | str], missing: Iterable[str] = (), status: int = 200
) -> str:
    """One ``DAV:response``: the properties found (``status``, 200 by default; each an element
    or its text already written) and those not (404)."""
    out = ["<d:response><d:href>", escape_text(href), "</d:href>"]
    shown = list(found)
    if shown:
        out.append("<d:propstat><d:prop>")
        for prop in shown:
            if type(prop) is str:
                out.append(prop)
            else:
                serialize(prop, out)  # type: ignore[arg-type]
        out.append(f"</d:prop><d:status>{status_line(status)}</d:status></d:propstat>")
    absent = list(missing)
    if absent:
        out.append("<d:propstat><d:prop>")
        for name in absent:
            serialize(Element(name), out)
        out.append(f"</d:prop><d:status>{status_line(404)}</d:status></d:propstat>")
    out.append("</d:response>")
    return "".join(out)


class Multistatus:
    """A ``DAV:multistatus`` answer built response by response, as text (ElementTree's tree
    and writer cost some 8 ms for a week of 50 objects: docs/performance.md, "CalDAV")."""

    def __init__(self) -> None:
        self.parts: list[str] = [_OPEN]

    def propstats(
        self,
        href: str,
        found: Iterable[Element | str],
        missing: Iterable[str],
        status: int = 200,
    ) -> None:
        """One ``DAV:response``: the properties found (200, or ``status``) and those not
        (404)."""
        self.parts.append(response_text(href, found, missing, status))

    def raw(self, response: str) -> None:
        """One ``DAV:response`` written already (``response_text``)."""
        self.parts.append(response)

    def status(self, href: str, status: int) -> None:
        """One ``DAV:response`` with a status of its own (a multiget's unknown href, a sync's
        deleted object)."""
        self.parts.append(
            f"<d:response><d:href>{escape_text(href)}</d:href>"
            f"<d:status>{status_line(status)}</d:status></d:response>"
        )

    def sync_token(self, token: str) -> None:
        self.parts.append(f"<d:sync-token>{escape_text(token)}</d:sync-token>")

    def body(self) -> bytes:
        return ("".join(self.parts) + _CLOSE).encode()
