"""The CalDAV namespace, resource by resource, and ``PROPFIND`` over it.

    /caldav/                                   the root (RFC 6764's context path)
    /caldav/principals/<ownerId>/              the owner (current-user-principal)
    /caldav/calendars/<ownerId>/               the calendar home (calendar-home-set)
    /caldav/calendars/<ownerId>/<calendarId>/  a calendar the key reaches: a collection (at
                                               the name an app made it under with
                                               MKCALENDAR, ``calendars.dav_name``, else its id)
    /caldav/calendars/<ownerId>/<calendarId>/<name>      an event (``objects``): the name an
                                               app PUT it under, else <UID>.ics

A key sees its owner's home and the calendars it reaches; another owner's path is 403, a
calendar of its owner it does not reach 403, one that does not exist 404. Properties asked
for and not known are answered 404 in their own ``propstat`` (RFC 4918 §9.1).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from email.utils import format_datetime
from urllib.parse import unquote, urlsplit

from icalendar import Calendar, Timezone
from sqlalchemy import Connection, func, or_, select

from calendar_service.access.keys import WRITE, Principal
from calendar_service.calendar.calendars import CalendarRow, accessible_calendars
from calendar_service.calendar.events.sync import Position, current_position, encode_sync_token
from calendar_service.interop.caldav import objects
from calendar_service.interop.caldav.asked import Wanted
from calendar_service.interop.caldav.names import (
    APPLE,
    CS,
    Found,
    Href,
    MediaType,
    Multistatus,
    Value,
    c,
    d,
    qn,
)
from calendar_service.platform.deferred import Later
from calendar_service.platform.errors import (
    CalendarError,
    DavBadName,
    DavRefused,
    NotFound,
)
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.events import event_sync_t
from calendar_service.platform.models.owners import users_t

ROOT = "/caldav/"
PRINCIPALS = ROOT + "principals/"
HOMES = ROOT + "calendars/"
SYNC_TOKEN_PREFIX = "urn:x-calendar-service:sync:"  # noqa: S105 - a URI prefix


def principal_path(user_id: str) -> str:
    return f"{PRINCIPALS}{user_id}/"


def home_path(user_id: str) -> str:
    return f"{HOMES}{user_id}/"


def calendar_path(user_id: str, segment: str) -> str:
    """A calendar's path: ``segment`` is its id or the name an app made it under (decoded)."""
    return f"{HOMES}{user_id}/{objects.encoded(segment)}/"


def dav_names(conn: Connection, *, user_id: str) -> dict[str, str]:
    """The owner's calendars made over CalDAV: ``{calendar id: the name they were made
    under}`` (``calendars.dav_name``; the others are served at their ids)."""
    rows = conn.execute(
        select(calendars_t.c.id, calendars_t.c.dav_name).where(
            calendars_t.c.user_id == user_id, calendars_t.c.dav_name.is_not(None)
        )
    )
    return {row.id: row.dav_name for row in rows}


def calendar_named(conn: Connection, *, user_id: str, segment: str) -> str | None:
    """The id of the owner's calendar that path segment ``segment`` (decoded) names: its id,
    or the name an app made it under; ``None`` if none."""
    row = conn.execute(
        select(calendars_t.c.id).where(
            calendars_t.c.user_id == user_id,
            or_(calendars_t.c.id == segment, calendars_t.c.dav_name == segment),
        )
    ).first()
    return None if row is None else str(row.id)


@dataclass(frozen=True, slots=True)
class Place:
    """What a path names: ``kind`` (``root``, ``principals``, ``principal``, ``home``,
    ``calendar``, ``object``), with the calendar and the object's name where it has one."""

    kind: str
    path: str
    calendar: CalendarRow | None = None
    name: str | None = None  # an object's (decoded) name


def parse_path(path: str) -> tuple[str, list[str]]:
    """``(kind, parts)`` of a path under ``ROOT`` (decoded, as ASGI gives it), before any
    database read; ``NotFound`` for one that names nothing here."""
    if not (path + "/").startswith(ROOT):
        raise NotFound("No such CalDAV resource.")
    parts = [p for p in path[len(ROOT) :].split("/") if p]
    if not parts:
        return "root", []
    head, rest = parts[0], parts[1:]
    if head == "principals" and len(rest) <= 1:
        return ("principal" if rest else "principals"), rest
    if head == "calendars" and 1 <= len(rest) <= 3:
        return ("home", "calendar", "object")[len(rest) - 1], rest
    if head == "calendars" and len(rest) > 3:
        raise DavBadName(
            "Objects are directly in their calendar, and an object's name cannot hold '/' "
            "(%2F): choose a name without one."
        )
    raise NotFound("No such CalDAV resource.")


def locate(conn: Connection, *, principal: Principal, path: str) -> Place:
    """The resource ``path`` names, for this key: 403 for another owner's or a calendar the
    key does not reach, 404 for one that does not exist."""
    kind, parts = parse_path(path)
    if kind in ("root", "principals"):
        return Place(kind, ROOT if kind == "root" else PRINCIPALS)
    if parts[0] != principal.user_id:
        raise DavRefused(
            "This path belongs to another owner: sign in as that owner.", d("need-privileges")
        )
    if kind == "principal":
        return Place(kind, principal_path(principal.user_id))
    if kind == "home":
        return Place(kind, home_path(principal.user_id))
    calendar = reached_calendar(conn, principal=principal, calendar_id=parts[1])
    place = calendar_path(principal.user_id, parts[1])
    if kind == "calendar":
        return Place(kind, place, calendar)
    objects.check_name(parts[2])
    return Place(kind, place + objects.encoded(parts[2]), calendar, parts[2])


def reached_calendar(conn: Connection, *, principal: Principal, calendar_id: str) -> CalendarRow:
    """The calendar the path segment ``calendar_id`` names (its id, or the name an app made
    it under), if this key reaches it."""
    reached = accessible_calendars(conn, principal=principal)
    for calendar in reached:
        if calendar.id == calendar_id:
            return calendar
    named = calendar_named(conn, user_id=principal.user_id, segment=calendar_id)
    for calendar in reached:
        if calendar.id == named:
            return calendar
    if principal.calendar_id is not None:
        raise DavRefused(
            "This app password reaches one calendar only, not this one.", d("need-privileges")
        )
    raise NotFound("No such calendar.")


def href_path(href: str) -> str:
    """The decoded path of an href (absolute, or a path)."""
    return unquote(urlsplit(href.strip()).path)


# ---------------------------------------------------------------------------------------------
# Properties


def _privileges(principal: Principal) -> tuple[str, ...]:
    names: tuple[str, ...] = ("read", "read-current-user-privilege-set")
    if principal.permission == WRITE:
        names += ("write", "write-content", "bind", "unbind")
    return tuple(d(name) for name in names)


@functools.lru_cache(maxsize=256)
def zone_text(name: str) -> str:
    """The calendar's zone as a VCALENDAR holding its VTIMEZONE (``calendar-timezone``)."""
    cal = Calendar()
    cal.add("prodid", objects.PRODID)
    cal.add("version", "2.0")
    if name != "UTC":
        today = date.today()
        cal.add_component(
            Timezone.from_tzid(
                name, first_date=date(today.year - 1, 1, 1), last_date=date(today.year + 10, 1, 1)
            )
        )
    text: str = cal.to_ical().decode()
    return text


@dataclass(slots=True)
class Facts:
    """What the properties of one request's resources are made of, read once."""

    conn: Connection
    principal: Principal
    token_key: bytes
    email: str | None = None

    def owner_email(self) -> str:
        if self.email is None:
            self.email = str(
                self.conn.execute(
                    select(users_t.c.email).where(users_t.c.id == self.principal.user_id)
                ).scalar_one()
            )
        return self.email

    def ctag(self, calendar: CalendarRow) -> str:
        """Changes with each change of the calendar's events (its last change's sequence
        number), and with its name, zone and colour."""
        last = self.conn.execute(
            select(func.max(event_sync_t.c.seq)).where(event_sync_t.c.calendar_id == calendar.id)
        ).scalar()
        about = f"{calendar.name}\x1f{calendar.time_zone}\x1f{calendar.color}".encode()
        return f"{last or 0}-{hashlib.sha256(about).hexdigest()[:12]}"

    def sync_token(self, calendar: CalendarRow) -> str:
        return sync_token(self.token_key, self.principal, current_position(self.conn), calendar)


def sync_token(key: bytes, principal: Principal, position: Position, calendar: CalendarRow) -> str:
    """The ``DAV:sync-token`` of ``calendar`` at ``position`` (the change feed's): the REST
    list's sync token of that one calendar, with our URI prefix."""
    return SYNC_TOKEN_PREFIX + encode_sync_token(key, principal, position, [calendar.id])


Producer = Callable[[], Value]


def _common(facts: Facts) -> dict[str, Producer]:
    user_id = facts.principal.user_id
    return {
        d("current-user-principal"): lambda: Href(principal_path(user_id)),
        d("principal-collection-set"): lambda: Href(PRINCIPALS),
        d("owner"): lambda: Href(principal_path(user_id)),
        d("current-user-privilege-set"): lambda: _privileges(facts.principal),
    }


def properties(facts: Facts, place: Place) -> dict[str, Producer]:
    """The properties of ``place``, by name, each made when asked for."""
    user_id = facts.principal.user_id
    props = _common(facts)
    if place.kind in ("root", "principals"):
        props[d("resourcetype")] = lambda: (d("collection"),)
        props[d("displayname")] = lambda: "Calendars"
    elif place.kind == "principal":
        props[d("resourcetype")] = lambda: (d("collection"), d("principal"))
        props[d("displayname")] = facts.owner_email
        props[d("principal-URL")] = lambda: Href(principal_path(user_id))
        props[c("calendar-home-set")] = lambda: Href(home_path(user_id))
        props[c("calendar-user-address-set")] = lambda: Href("mailto:" + facts.owner_email())
    elif place.kind == "home":
        props[d("resourcetype")] = lambda: (d("collection"),)
        props[d("displayname")] = lambda: "Calendars"
    elif place.kind == "calendar":
        assert place.calendar is not None
        props.update(_calendar_properties(facts, place.calendar))
    return props


def _calendar_properties(facts: Facts, calendar: CalendarRow) -> dict[str, Producer]:
    props: dict[str, Producer] = {
        d("resourcetype"): lambda: (d("collection"), c("calendar")),
        d("displayname"): lambda: calendar.name,
        c("calendar-timezone"): lambda: zone_text(calendar.time_zone),
        c("supported-calendar-component-set"): lambda: ("VEVENT",),
        c("supported-calendar-data"): lambda: (MediaType("text/calendar", "2.0"),),
        c("max-resource-size"): lambda: str(objects.MAX_OBJECT),
        d("supported-report-set"): lambda: (
            c("calendar-query"),
            c("calendar-multiget"),
            d("sync-collection"),
        ),
        qn(CS, "getctag"): lambda: facts.ctag(calendar),
        d("sync-token"): lambda: facts.sync_token(calendar),
    }
    if calendar.color:
        props[qn(APPLE, "calendar-color")] = lambda: calendar.color
    if calendar.connection_id is not None:  # a connected calendar's mirror: read-only
        props[d("current-user-privilege-set")] = lambda: (
            d("read"),
            d("read-current-user-privilege-set"),
        )
    return props


def object_properties(obj: objects.DavObject) -> dict[str, Producer]:
    return {
        d("getetag"): lambda: obj.etag,
        d("getcontenttype"): lambda: objects.MEDIA_TYPE,
        d("resourcetype"): lambda: (),
        d("getlastmodified"): lambda: format_datetime(obj.updated, usegmt=True),
    }


# Not in ``allprop`` (RFC 4791 §5.2 asks servers to leave the heavier ones out).
_NOT_ALL = frozenset({c("calendar-timezone"), d("current-user-privilege-set")})


def answer(
    href: str,
    known: dict[str, Producer],
    wanted: Wanted,
    extra: dict[str, Value] | None = None,
) -> Found:
    """One resource's ``DAV:response``: ``known`` properties (and ``extra``, made already:
    calendar data) as asked for by ``wanted``."""
    extra = extra or {}
    if wanted.propname:
        return Found(href, [(n, None) for n in (*known, *extra)])
    if wanted.allprop:
        return Found(href, [(n, make()) for n, make in known.items() if n not in _NOT_ALL])
    chosen: list[tuple[str, Value]] = []
    missing: list[str] = []
    for name in wanted.names:
        if name in extra:
            chosen.append((name, extra[name]))
        elif name in known:
            chosen.append((name, known[name]()))
        else:
            missing.append(name)
    return Found(href, chosen, missing)


def propfind(
    conn: Connection,
    *,
    principal: Principal,
    path: str,
    depth: str,
    asked: Wanted | None,
    problem: CalendarError | None,
    token_key: bytes,
) -> Multistatus | Later:
    """A ``PROPFIND`` of ``path`` at ``depth`` (``0`` or ``1``; the front refuses
    ``infinity``) asking for ``asked`` (``problem``: what its document asks that cannot be
    answered): the ``multistatus`` answer; of a calendar's objects, a ``Later`` (their
    properties need no database: those of thousands are made off the event loop)."""
    place = locate(conn, principal=principal, path=path)
    if problem is not None:
        raise problem
    assert asked is not None
    wanted = asked
    facts = Facts(conn, principal, token_key)
    status = Multistatus()
    if place.kind == "object":
        assert place.calendar is not None and place.name is not None
        obj = _object(conn, place.calendar, place.name)
        status.responses.append(answer(place.path, object_properties(obj), wanted))
        return status
    status.responses.append(answer(place.path, properties(facts, place), wanted))
    if depth == "1":
        for child_place in _children(conn, principal, place):
            status.responses.append(
                answer(child_place.path, properties(facts, child_place), wanted)
            )
        if place.kind == "calendar":
            assert place.calendar is not None
            base = place.path
            found = objects.load_all(conn, calendar=place.calendar).values()

            def made() -> Multistatus:
                for obj in found:
                    status.responses.append(answer(base + obj.name, object_properties(obj), wanted))
                return status

            return Later(made)
    return status


def named_object(conn: Connection, calendar: CalendarRow, name: str) -> objects.DavObject | None:
    """The object named ``name`` (decoded) in ``calendar``, ``None`` if there is none."""
    event_id = objects.event_id_named(conn, calendar=calendar, name=name)
    if event_id is None:
        return None
    return objects.load(conn, calendar=calendar, event_ids=[event_id]).get(event_id)


def _object(conn: Connection, calendar: CalendarRow, name: str) -> objects.DavObject:
    found = named_object(conn, calendar, name)
    if found is None:
        raise NotFound("No such calendar object.")
    return found


def find_object(
    conn: Connection, *, principal: Principal, path: str
) -> tuple[CalendarRow, objects.DavObject]:
    place = locate(conn, principal=principal, path=path)
    if place.kind != "object":
        raise DavRefused("This is a collection, not a calendar object.")
    assert place.calendar is not None and place.name is not None
    return place.calendar, _object(conn, place.calendar, place.name)


def _children(conn: Connection, principal: Principal, place: Place) -> Iterable[Place]:
    user_id = principal.user_id
    if place.kind == "root":
        yield Place("principals", PRINCIPALS)
    elif place.kind == "principals":
        yield Place("principal", principal_path(user_id))
    elif place.kind == "home":
        names = dav_names(conn, user_id=user_id)
        for calendar in accessible_calendars(conn, principal=principal):
            segment = names.get(calendar.id, calendar.id)
            yield Place("calendar", calendar_path(user_id, segment), calendar)


__all__ = [
    "HOMES",
    "PRINCIPALS",
    "ROOT",
    "SYNC_TOKEN_PREFIX",
    "Facts",
    "Place",
    "answer",
    "calendar_named",
    "calendar_path",
    "dav_names",
    "find_object",
    "get_object",
    "home_path",
    "href_path",
    "locate",
    "named_object",
    "object_properties",
    "parse_path",
    "principal_path",
    "properties",
    "propfind",
    "proppatch",
    "reached_calendar",
]


def get_object(conn: Connection, *, principal: Principal, path: str) -> Later:
    """``GET`` of one object: ``(the object, its text)``, the text rendered later (off the
    event loop, once per version)."""
    calendar, obj = find_object(conn, principal=principal, path=path)
    return Later(lambda: (obj, objects.render(obj, calendar)))


def proppatch(
    conn: Connection,
    *,
    principal: Principal,
    path: str,
    asked: tuple[str, ...] | None,
    problem: CalendarError | None,
) -> Multistatus:
    """``PROPPATCH`` of the properties named ``asked``: no property is changed over CalDAV
    (rename or recolour a calendar on the settings pages); each one asked for is answered
    403 (RFC 4918 §9.2), the resource left as it was."""
    place = locate(conn, principal=principal, path=path)
    if problem is not None:
        raise problem
    assert asked is not None
    refused = Found(place.path, [(n, None) for n in asked], status=403)
    return Multistatus([refused])
