"""The ``DAV:multistatus`` answers, written as text from the core's plain answers
(``interop.caldav.names.Multistatus``): ElementTree's tree and writer cost some 8 ms for a
week of 50 objects (docs/performance.md, "CalDAV").

A report's object is answered as a ``Kept`` response: its text is kept here (``_RESPONSES``)
by the key the core gives it (what the object's ETag is made of, the calendar's path and
what was asked for), so that a week asked for before, at the same versions, is answered at
once, and only what is missing is made and written (off the event loop).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from calendar_service.interop.caldav.names import (
    APPLE,
    CALDAV,
    CS,
    DAV,
    OURS,
    Found,
    Gone,
    Href,
    Kept,
    MediaType,
    Multistatus,
    Value,
    c,
    d,
    escape_text,
    qn,
)
from calendar_service.platform.lru import Lru

STATUS_TEXT = {
    200: "OK",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    507: "Insufficient Storage",
}


def status_line(status: int) -> str:
    return f"HTTP/1.1 {status} {STATUS_TEXT.get(status, '')}".rstrip()


PREFIXES = {DAV: "d", CALDAV: "cal", CS: "cs", APPLE: "ical", OURS: "x"}
_OPEN = (
    "<?xml version='1.0' encoding='utf-8'?>\n<d:multistatus"
    + "".join(f' xmlns:{p}="{uri}"' for uri, p in PREFIXES.items())
    + ">"
)
_CLOSE = "</d:multistatus>"
_DECLARED = "".join(f' xmlns:{p}="{uri}"' for uri, p in PREFIXES.items())


def error_text(
    condition: str | None, message: str, href: str | None = None, code: str | None = None
) -> bytes:
    """``DAV:error`` (RFC 4918 §16) with the precondition's element, if any (and the ``href``
    it names), the message and the error's ``code`` (in our namespace, as sabre/dav does with
    its own), written with the multistatus' prefixes: never with ElementTree's, which are the
    process's (any library imported beside it may register its own)."""
    inner = ""
    if condition is not None:
        inner = _element(condition, "" if href is None else _element(d("href"), escape_text(href)))
    inner += _element(qn(OURS, "message"), escape_text(message))
    if code is not None:
        inner += _element(qn(OURS, "code"), escape_text(code))
    return f"<?xml version='1.0' encoding='utf-8'?>\n<d:error{_DECLARED}>{inner}</d:error>".encode()


def _escape_attribute(text: str) -> str:
    text = escape_text(text).replace('"', "&quot;")
    return text.replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#09;")


def _open(clark: str, attributes: str = "") -> tuple[str, str]:
    """The start of element ``clark`` (without its ``>``) and its qualified name: a prefix
    of the multistatus' own, else one declared on the element."""
    if clark[:1] != "{":
        return f"<{clark}{attributes}", clark
    uri, _, local = clark[1:].partition("}")
    prefix = PREFIXES.get(uri)
    if prefix is None:
        name = f"ns0:{local}"
        return f'<{name} xmlns:ns0="{_escape_attribute(uri)}"{attributes}', name
    name = f"{prefix}:{local}"
    return f"<{name}{attributes}", name


def _element(clark: str, inner: str = "", attributes: str = "") -> str:
    start, name = _open(clark, attributes)
    return f"{start}/>" if not inner else f"{start}>{inner}</{name}>"


def _empty_all(names: Sequence[str | MediaType]) -> str:
    return "".join(_element(str(n)) for n in names)


def _within(*wrappers: str) -> Callable[[Sequence[str | MediaType]], str]:
    """Each name as an empty element within ``wrappers`` (outermost first)."""

    def written(names: Sequence[str | MediaType]) -> str:
        out = []
        for name in names:
            text = _element(str(name))
            for wrapper in reversed(wrappers):
                text = _element(wrapper, text)
            out.append(text)
        return "".join(out)

    return written


def _components(names: Sequence[str | MediaType]) -> str:
    return "".join(_element(c("comp"), "", f' name="{_escape_attribute(str(n))}"') for n in names)


def _media_types(types: Sequence[str | MediaType]) -> str:
    return "".join(
        _element(
            c("calendar-data"),
            "",
            f' content-type="{_escape_attribute(t.content_type)}"'
            f' version="{_escape_attribute(t.version)}"',
        )
        for t in types
        if isinstance(t, MediaType)
    )


# How a property that lists names is written, by the property's name.
_LISTS: dict[str, Callable[[Sequence[str | MediaType]], str]] = {
    d("resourcetype"): _empty_all,
    d("current-user-privilege-set"): _within(d("privilege")),
    d("supported-report-set"): _within(d("supported-report"), d("report")),
    c("supported-calendar-component-set"): _components,
    c("supported-calendar-data"): _media_types,
}


def property_text(name: str, value: Value) -> str:
    """One property, with its value, as text."""
    if value is None:
        return _element(name)
    if type(value) is str:
        start, qualified = _open(name)
        return f"{start}>{escape_text(value)}</{qualified}>"
    if isinstance(value, Href):
        return _element(name, f"<d:href>{escape_text(value.path)}</d:href>")
    assert isinstance(value, tuple)
    return _element(name, _LISTS.get(name, _empty_all)(value))


def response_text(found: Found) -> str:
    """One ``DAV:response``: the properties found (its status) and those not (404)."""
    out = ["<d:response><d:href>", escape_text(found.href), "</d:href>"]
    if found.props:
        out.append("<d:propstat><d:prop>")
        out.extend(property_text(name, value) for name, value in found.props)
        out.append(f"</d:prop><d:status>{status_line(found.status)}</d:status></d:propstat>")
    if found.missing:
        out.append("<d:propstat><d:prop>")
        out.extend(_element(name) for name in found.missing)
        out.append(f"</d:prop><d:status>{status_line(404)}</d:status></d:propstat>")
    out.append("</d:response>")
    return "".join(out)


def _gone_text(gone: Gone) -> str:
    return (
        f"<d:response><d:href>{escape_text(gone.href)}</d:href>"
        f"<d:status>{status_line(gone.status)}</d:status></d:response>"
    )


# A report's ``DAV:response`` of an object, by the key the core gives it: most of a week's
# objects were answered already, at their version.
_RESPONSES = Lru(16384, most_weight=64 * 1024 * 1024)


def written(answer: Multistatus, kept_only: bool = False) -> bytes | None:
    """``answer`` as the body of a 207; with ``kept_only``, ``None`` unless every ``Kept``
    response is kept written already (nothing left to make)."""
    parts = [_OPEN]
    for response in answer.responses:
        if isinstance(response, Found):
            parts.append(response_text(response))
        elif isinstance(response, Gone):
            parts.append(_gone_text(response))
        else:
            text = _kept(response, kept_only)
            if text is None:
                return None
            parts.append(text)
    if answer.sync_token is not None:
        parts.append(f"<d:sync-token>{escape_text(answer.sync_token)}</d:sync-token>")
    parts.append(_CLOSE)
    return "".join(parts).encode()


def _kept(response: Kept, kept_only: bool) -> str | None:
    """A ``Kept`` response's text (``""``: left out), or ``None`` with ``kept_only`` when
    it is not kept."""
    if response.key is not None:
        text: str | None = _RESPONSES.get(response.key)
        if text is not None:
            return text
    if kept_only:
        return None
    found = response.make()
    text = "" if found is None else response_text(found)
    if response.key is not None and found is not None:
        _RESPONSES.put(response.key, text, weight=len(text))
    return text


def body(answer: Multistatus) -> bytes:
    """``answer`` written whole."""
    text = written(answer)
    assert text is not None
    return text


__all__ = ["PREFIXES", "body", "escape_text", "property_text", "status_line", "written"]
