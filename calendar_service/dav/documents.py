"""The XML documents of the CalDAV front: request bodies parsed with ``defusedxml`` (no DTD, no
entities, no external references) within bounds, and the ``DAV:error`` body of a refusal.

Bounds: the front refuses a body over ``MAX_BODY`` bytes (413) before it is parsed; here a
document deeper than ``MAX_DEPTH`` or with more than ``MAX_ELEMENTS`` elements is refused
(400), walked without recursion.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, ParseError, register_namespace

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from calendar_service.dav.multistatus import PREFIXES, error_text
from calendar_service.interop.caldav.names import within_bounds
from calendar_service.platform.errors import BadRequest

for _uri, _prefix in PREFIXES.items():
    register_namespace(_prefix, _uri)

MAX_BODY = 1024 * 1024
"""The largest XML request body (PROPFIND, REPORT): 1 MiB."""
MAX_DEPTH = 32
MAX_ELEMENTS = 10_000


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
    if not within_bounds(root, depth=MAX_DEPTH, elements=MAX_ELEMENTS):
        raise BadRequest(
            f"The XML body is nested deeper than {MAX_DEPTH} elements or has more than "
            f"{MAX_ELEMENTS}: send a smaller request."
        )


def error_body(
    condition: str | None, message: str, href: str | None = None, code: str | None = None
) -> bytes:
    """``DAV:error`` (RFC 4918 §16): ``multistatus.error_text``."""
    return error_text(condition, message, href, code)


__all__ = ["MAX_BODY", "MAX_DEPTH", "MAX_ELEMENTS", "error_body", "parse"]
