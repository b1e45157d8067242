"""CalDAV test helpers: requests signed in with HTTP Basic, and multistatus answers read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import defusedxml.ElementTree as ET
import httpx

from tests.support import Factory, Owner

D = "{DAV:}"
C = "{urn:ietf:params:xml:ns:caldav}"
CS = "{http://calendarserver.org/ns/}"
OURS = "{urn:x-calendar-service:dav}"


@dataclass
class App:
    """A calendar app's account: the owner, an app password and the paths it finds."""

    owner: Owner
    key_id: str
    secret: str

    @property
    def auth(self) -> httpx.BasicAuth:
        return httpx.BasicAuth(self.owner.email, self.secret)

    @property
    def home(self) -> str:
        return f"/caldav/calendars/{self.owner.id}/"

    def calendar(self, calendar_id: str | None = None) -> str:
        return f"{self.home}{calendar_id or self.owner.default_calendar_id}/"


def app_account(factory: Factory, owner: Owner | None = None, **options: Any) -> App:
    owner = owner or factory.owner()
    key_id, secret = factory.key(owner, app_password=True, **options)
    return App(owner, key_id, secret)


def dav(
    api: httpx.Client,
    app: App,
    method: str,
    path: str,
    body: str | bytes | None = None,
    **headers: str,
) -> httpx.Response:
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    if body is not None and "Content-Type" not in sent:
        sent["Content-Type"] = "application/xml; charset=utf-8"
    return api.request(method, path, content=body, headers=sent, auth=app.auth)


def propfind(
    api: httpx.Client, app: App, path: str, *props: str, depth: str = "0"
) -> httpx.Response:
    names = "".join(props) or "<d:allprop/>"
    body = (
        '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" '
        'xmlns:cs="http://calendarserver.org/ns/" xmlns:ical="http://apple.com/ns/ical/">'
        f"<d:prop>{names}</d:prop></d:propfind>"
    )
    return dav(api, app, "PROPFIND", path, body, Depth=depth)


def responses(answer: httpx.Response) -> dict[str, dict[str, Any]]:
    """A multistatus answer by href: ``{href: {"status": ..., "found": {name: element},
    "missing": [names]}}``."""
    assert answer.status_code == 207, answer.text
    root = ET.fromstring(answer.content)
    found: dict[str, dict[str, Any]] = {}
    for response in root.findall(f"{D}response"):
        href = response.findtext(f"{D}href") or ""
        entry: dict[str, Any] = {
            "status": response.findtext(f"{D}status"),
            "found": {},
            "missing": [],
        }
        for propstat in response.findall(f"{D}propstat"):
            status = propstat.findtext(f"{D}status") or ""
            props = propstat.find(f"{D}prop")
            for prop in [] if props is None else list(props):
                if " 200 " in status:
                    entry["found"][prop.tag] = prop
                else:
                    entry["missing"].append(prop.tag)
        found[href] = entry
    return found


def sync_token_of(answer: httpx.Response) -> str:
    return ET.fromstring(answer.content).findtext(f"{D}sync-token") or ""


def error_condition(answer: httpx.Response) -> list[str]:
    """The precondition elements of a ``DAV:error`` body (not our own: the message, the code)."""
    root = ET.fromstring(answer.content)
    assert root.tag == f"{D}error", answer.text
    return [child.tag for child in root if not child.tag.startswith(OURS)]


def error_code(answer: httpx.Response) -> str:
    """The machine-readable code of a ``DAV:error`` body."""
    return ET.fromstring(answer.content).findtext(f"{OURS}code") or ""


def hrefs(answer: httpx.Response) -> set[str]:
    """The hrefs of a multistatus answer, decoded."""
    return {unquote(href) for href in responses(answer)}


def ics(
    uid: str,
    *,
    summary: str = "Dentist",
    start: str = "20260302T090000Z",
    end: str = "20260302T100000Z",
    extra: str = "",
    more: str = "",
) -> str:
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//tests//EN",
        "BEGIN:VEVENT",
        f"UID:{uid}",
        "DTSTAMP:20260101T000000Z",
        f"DTSTART:{start}",
        f"DTEND:{end}",
        f"SUMMARY:{summary}",
        *([extra] if extra else []),
        "END:VEVENT",
        *([more] if more else []),
        "END:VCALENDAR",
        "",
    ]
    return "\r\n".join(lines)


def put(api: httpx.Client, app: App, path: str, text: str, **headers: str) -> httpx.Response:
    return dav(api, app, "PUT", path, text, Content_Type="text/calendar; charset=utf-8", **headers)
