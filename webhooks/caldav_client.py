"""CalDAV as a client speaks it to another server (connected calendars, docs/connections.md):
the request bodies the poller sends and the ``multistatus`` answers it reads, without HTTP
(``connections`` sends them).

Discovery (RFC 4791 §6, RFC 6764): ``current-user-principal`` of the base URL, the principal's
``calendar-home-set``, the home's calendars (``resourcetype`` with ``calendar``, their
``displayname`` and the components they hold). Changes: ``sync-collection`` (RFC 6578) where
the server offers it, else ``getctag`` and the members' ``getetag``; objects read with
``calendar-multiget`` in batches. Answers are parsed with ``defusedxml`` (no DTD, no
entities) within bounds of their own (``MAX_ELEMENTS``), larger than a request body's: a
calendar of 20,000 events lists each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from calendar_service.interop.caldav.names import CALDAV, CS, DAV, escape_text, within_bounds

MAX_ELEMENTS = 1_000_000
MAX_DEPTH = 32
MULTIGET_BATCH = 100

_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n'
_NS = f'xmlns:d="{DAV}" xmlns:c="{CALDAV}" xmlns:cs="{CS}"'


class RemoteXMLError(ValueError):
    """An answer that is not the XML it should be."""


def propfind_body(*props: str) -> bytes:
    """A PROPFIND asking for ``props`` (prefixed names: ``d:displayname``)."""
    inner = "".join(f"<{p}/>" for p in props)
    return f"{_HEAD}<d:propfind {_NS}><d:prop>{inner}</d:prop></d:propfind>".encode()


def sync_collection_body(token: str | None) -> bytes:
    """A ``sync-collection`` REPORT from ``token`` (none: every member), asking for ETags."""
    shown = escape_text(token or "")
    return (
        f"{_HEAD}<d:sync-collection {_NS}><d:sync-token>{shown}</d:sync-token>"
        "<d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>"
    ).encode()


def multiget_body(hrefs: list[str]) -> bytes:
    """A ``calendar-multiget`` REPORT for ``hrefs``: their ETags and calendar data."""
    listed = "".join(f"<d:href>{escape_text(h)}</d:href>" for h in hrefs)
    return (
        f"{_HEAD}<c:calendar-multiget {_NS}><d:prop><d:getetag/><c:calendar-data/></d:prop>"
        f"{listed}</c:calendar-multiget>"
    ).encode()


@dataclass(slots=True)
class Answer:
    """One ``response`` of a ``multistatus``: its href (as sent: a path), its status (that of
    the response, or 200 when its properties were found), and the properties found."""

    href: str
    status: int
    props: dict[str, Element] = field(default_factory=dict)

    def text(self, name: str) -> str | None:
        found = self.props.get(name)
        return None if found is None else (found.text or "").strip()


@dataclass(slots=True)
class Multistatus:
    answers: list[Answer]
    sync_token: str | None


def _status(text: str | None) -> int:
    parts = (text or "").split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def parse_multistatus(body: bytes) -> Multistatus:
    try:
        root = SafeET.fromstring(body, forbid_dtd=True)
    except (DefusedXmlException, ParseError, ValueError):
        raise RemoteXMLError("the server's answer is not well-formed XML") from None
    if not within_bounds(root, depth=MAX_DEPTH, elements=MAX_ELEMENTS):
        raise RemoteXMLError("the server's answer is too large or too deeply nested")
    if root.tag != f"{{{DAV}}}multistatus":
        raise RemoteXMLError("the server's answer is not a WebDAV multistatus")
    answers = []
    for response in root.findall(f"{{{DAV}}}response"):
        href = (response.findtext(f"{{{DAV}}}href") or "").strip()
        own = response.findtext(f"{{{DAV}}}status")
        answer = Answer(href, _status(own) if own else 200)
        for propstat in response.findall(f"{{{DAV}}}propstat"):
            if _status(propstat.findtext(f"{{{DAV}}}status")) != 200:
                continue
            prop = propstat.find(f"{{{DAV}}}prop")
            for item in prop if prop is not None else ():
                answer.props[item.tag] = item
        answers.append(answer)
    token = root.findtext(f"{{{DAV}}}sync-token")
    return Multistatus(answers, token.strip() if token is not None else None)


def href_in(prop: Element | None) -> str | None:
    """The ``href`` inside a property (``current-user-principal``, ``calendar-home-set``)."""
    if prop is None:
        return None
    found = prop.findtext(f"{{{DAV}}}href")
    return found.strip() if found else None


def absolute(base: str, href: str) -> str:
    """``href`` (a path, or a full URL) against the URL it came from."""
    return urljoin(base, href)


def same_path(a: str, b: str) -> bool:
    """Whether two hrefs name the same resource (decoded, without a trailing slash)."""
    return unquote(urlsplit(a).path).rstrip("/") == unquote(urlsplit(b).path).rstrip("/")


@dataclass(frozen=True, slots=True)
class FoundCalendar:
    url: str
    name: str


def calendars_in(home_url: str, status: Multistatus) -> list[FoundCalendar]:
    """The calendars (holding events) a ``Depth: 1`` PROPFIND of the home lists."""
    found = []
    for answer in status.answers:
        kind = answer.props.get(f"{{{DAV}}}resourcetype")
        if kind is None or kind.find(f"{{{CALDAV}}}calendar") is None:
            continue
        components = answer.props.get(f"{{{CALDAV}}}supported-calendar-component-set")
        if components is not None:
            names = {(c.get("name") or "").upper() for c in components}
            if names and "VEVENT" not in names:
                continue
        url = absolute(home_url, answer.href)
        name = answer.text(f"{{{DAV}}}displayname") or unquote(
            urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
        )
        found.append(FoundCalendar(url, name))
    return found
