"""An ``.ics`` file read into what a calendar here can hold: one ``Planned`` per UID.

The file is checked before it is parsed (``check_shape``: a bounded size, event count and
nesting depth, every ``BEGIN`` closed), then parsed with the ``icalendar`` package. Each UID
becomes a ``Planned``: its main VEVENT (the single event, or the series with its ``RRULE``,
``EXDATE`` and ``RDATE`` as recurrence lines) and its changed occurrences (VEVENTs with a
``RECURRENCE-ID``; cancelled ones become ``EXDATE``s). What a VEVENT holds that an event here
has no place for (attendees, alarms...) is said in its ``warnings``; a VEVENT that cannot be
read (no ``DTSTART``, an unknown ``TZID``...) makes its UID's ``error``, and the UID is not
imported. Times stay as the file gives them (aware, or floating: ``None`` zone) until the
target calendar's zone is known (``importing``).

Time zones (``zones``): a ``TZID`` that is an IANA name is that zone; a Windows zone name as
Outlook writes it (``W. Europe Standard Time``) is mapped to its IANA zone (CLDR's table,
shipped by ``icalendar``); a path-like TZID (``/mozilla.org/…/Europe/Berlin``) by its IANA
tail; anything else by the file's own ``VTIMEZONE`` for it, read with bounded work and matched
to an IANA zone where one agrees. A TZID that is none of these, or whose VTIMEZONE cannot be
read, is an error for the events that use it. The parser is kept from reading VTIMEZONEs
itself (``_Parser``): ``icalendar`` would hand them to ``dateutil``, which walks an
observance's rule from its start however often it repeats, and would keep them in a cache
shared by every later file of the process.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from icalendar import Calendar, Component
from icalendar.error import GloballyUniqueTZIDGuessed
from icalendar.parser.ical.calendar import CalendarIcalParser

from calendar_service.interop.ical.zones import FileZones, Work, ZoneRefused, resolve_tzid
from calendar_service.platform.errors import InvalidICalendar, PayloadTooLarge

# icalendar warns when it reads "/vendor/…/Europe/Berlin" as Europe/Berlin: so do we, on
# purpose (``resolve_tzid``); the warning would only put the caller's text in the logs.
warnings.filterwarnings("ignore", category=GloballyUniqueTZIDGuessed)

MAX_BYTES = 5 * 1024 * 1024
"""The largest file an import takes (REST: the body)."""
MAX_EVENTS = 5000
"""VEVENTs in one import: a file with more is refused whole (split it)."""
MAX_DEPTH = 8
"""Components nested in one another (VCALENDAR > VEVENT > VALARM is 3)."""
TITLE_MAX = 300
NO_TITLE = "(no title)"

_BEGIN_END = re.compile(rb"^(BEGIN|END)[ \t]*:[ \t]*([A-Za-z0-9-]{1,64})[ \t]*$", re.IGNORECASE)

# Properties and components of a VEVENT that an event here has no field for, as the report
# names them.
_DROPPED_PROPERTIES = {
    "ATTENDEE": "attendees",
    "ORGANIZER": "the organizer",
    "ATTACH": "attachments",
    "CATEGORIES": "categories",
    "URL": "the URL",
    "RESOURCES": "resources",
    "CONTACT": "contacts",
    "GEO": "the geographic position",
    "COMMENT": "comments",
    "RELATED-TO": "related events",
    "CONFERENCE": "conference links",
    "IMAGE": "images",
}
_DROPPED_COMPONENTS = {"VALARM": "alarms"}
_OTHER_COMPONENTS = {
    "VTODO": "to-dos",
    "VJOURNAL": "journal entries",
    "VFREEBUSY": "free/busy blocks",
    "VAVAILABILITY": "availability blocks",
}


Moment = date | datetime
"""A time as the file gives it: a date (all-day), or a date-time (aware, or floating)."""


@dataclass(slots=True)
class Fields:
    """One VEVENT's fields, as an event here holds them."""

    title: str
    description: str | None
    location: str | None
    start: Moment
    end: Moment
    transparency: str = "opaque"  # TRANSP:TRANSPARENT: shown, but free time
    # ATTENDEE lines: {email, name?, optional?, responseStatus} (not yet checked)
    attendees: list[dict[str, Any]] | None = None


@dataclass(slots=True)
class Override:
    """A VEVENT with a ``RECURRENCE-ID``: one occurrence changed (or cancelled)."""

    original: Moment
    fields: Fields
    cancelled: bool


@dataclass(slots=True)
class Planned:
    """Everything the file says about one UID."""

    uid: str
    master: Fields | None = None
    rule: str | None = None  # the RRULE's value (FREQ=...)
    exdates: list[Moment] = field(default_factory=list)
    rdates: list[Moment] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)
    start_zone: tzinfo | None = None  # the zone of the main VEVENT's DTSTART, if it has one
    cancelled: bool = False  # the main VEVENT says STATUS:CANCELLED
    warnings: list[str] = field(default_factory=list)
    error: str | None = None

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message


@dataclass(slots=True)
class ReadFile:
    plans: list[Planned]
    warnings: list[tuple[str | None, str]]  # (uid, message) about the file as a whole
    zone_work: int = 0  # the work its VTIMEZONEs cost (``zones.Work``), at most MAX_ZONE_WORK


@dataclass(frozen=True, slots=True)
class Bounds:
    """How large a file may be: at most ``max_bytes`` long, holding ``max_events`` VEVENTs."""

    max_bytes: int = MAX_BYTES
    max_events: int = MAX_EVENTS


IMPORT_BOUNDS = Bounds()
"""An import's (``MAX_BYTES``, ``MAX_EVENTS``); a connected calendar's poll has its own."""


def check_shape(data: bytes, *, field_name: str = "body", bounds: Bounds = IMPORT_BOUNDS) -> None:
    """Refuse, before parsing, what is not an iCalendar file or is too big to import: no
    ``BEGIN:VCALENDAR``, a component left open or closed twice, nesting deeper than
    ``MAX_DEPTH``, more VEVENTs or bytes than ``bounds`` allow."""
    max_bytes, max_events = bounds.max_bytes, bounds.max_events
    if len(data) > max_bytes:
        raise PayloadTooLarge(
            f"The file is larger than {max_bytes // (1024 * 1024)} MiB: split it (for example "
            "by year) and import the parts one after another."
        )
    stack: list[bytes] = []
    events = 0
    seen_calendar = False
    for number, line in enumerate(data.splitlines(), start=1):
        if line[:1] in (b" ", b"\t"):
            continue  # a folded line's continuation
        match = _BEGIN_END.match(line.strip(b"\xef\xbb\xbf"))
        if match is None:
            # Lines after the last calendar (a server's "cached at" note) are left alone, as
            # the parser leaves them; before the first one, the file is something else.
            if not stack and not seen_calendar and line.strip(b"\xef\xbb\xbf \t"):
                raise InvalidICalendar(
                    f"Line {number} is outside any component: an iCalendar file is "
                    "BEGIN:VCALENDAR ... END:VCALENDAR.",
                    field_name=field_name,
                )
            continue
        kind, name = match.group(1).upper(), match.group(2).upper()
        if kind == b"BEGIN":
            if not stack and name != b"VCALENDAR":
                raise InvalidICalendar(
                    f"Line {number}: the file must start with BEGIN:VCALENDAR "
                    f"(found BEGIN:{name.decode()}).",
                    field_name=field_name,
                )
            seen_calendar = True
            stack.append(name)
            if len(stack) > MAX_DEPTH:
                raise InvalidICalendar(
                    f"Line {number}: components are nested more than {MAX_DEPTH} deep.",
                    field_name=field_name,
                )
            if name == b"VEVENT":
                events += 1
                if events > max_events:
                    raise PayloadTooLarge(
                        f"The file holds more than {max_events} events: split it (for example "
                        "by year) and import the parts one after another."
                    )
        elif not stack or stack[-1] != name:
            expected = f"END:{stack[-1].decode()}" if stack else "nothing more"
            raise InvalidICalendar(
                f"Line {number}: END:{name.decode()} where {expected} was expected.",
                field_name=field_name,
            )
        else:
            stack.pop()
    if stack:
        raise InvalidICalendar(
            f"The file ends inside {stack[-1].decode()}: it is cut short (no "
            f"END:{stack[-1].decode()}).",
            field_name=field_name,
        )
    if not seen_calendar:
        raise InvalidICalendar(
            "The file holds no calendar: an iCalendar file is BEGIN:VCALENDAR ... END:VCALENDAR.",
            field_name=field_name,
        )


class _Parser(CalendarIcalParser):
    """``icalendar``'s parser, except that it leaves zones to us (``zones``): a ``TZID`` stays
    a parameter (times are read as written, naive unless they end in ``Z``) and a VTIMEZONE
    stays a component, never turned into a ``dateutil`` zone nor kept in ``icalendar``'s
    process-wide cache of zones (where one file's definition would be another's)."""

    def handle_end_component(self, vals: str) -> None:
        if vals.upper() != "VTIMEZONE":
            super().handle_end_component(vals)
            return
        if not self._stack:
            raise ValueError("END encountered without an accompanying BEGIN!")
        component = self._stack.pop()
        if self._stack:
            self._stack[-1].add_component(component)
        else:
            self._components.append(component)

    def prepare_components(self) -> None:
        """Nothing: the forward references to VTIMEZONEs that ``icalendar`` parses the file
        again for are resolved by ``zones``."""

    def parse_and_add_property(
        self, name: str, params: Any, val: str, tzid: str | None, line: Any
    ) -> None:
        super().parse_and_add_property(name, params, val, None, line)


class _Calendar(Calendar):
    @classmethod
    def _get_ical_parser(cls, st: str | bytes) -> CalendarIcalParser:
        return _Parser(st, cls._get_component_factory(), cls.types_factory)


def read_file(data: bytes, *, field_name: str = "body", bounds: Bounds = IMPORT_BOUNDS) -> ReadFile:
    """The file's UIDs, planned (``InvalidICalendar`` or ``PayloadTooLarge`` for a file
    that cannot be imported at all)."""
    check_shape(data, field_name=field_name, bounds=bounds)
    try:
        calendars = _Calendar.from_ical(data.removeprefix(b"\xef\xbb\xbf"), multiple=True)
    except Exception as exc:  # the parser's, on input it could not take: a 400, never a 500
        raise InvalidICalendar(
            f"The file is not valid iCalendar (RFC 5545): {str(exc)[:200]}",
            field_name=field_name,
        ) from None
    plans: dict[str, Planned] = {}
    notes: list[tuple[str | None, str]] = []
    others: dict[str, int] = {}
    work = Work()  # one budget for the whole file's zones
    for calendar in calendars:
        zones = FileZones.of(calendar, work)
        for component in _components(calendar):
            name = (component.name or "").upper()
            if name == "VEVENT":
                _take_vevent(component, plans, zones)
            elif name in _OTHER_COMPONENTS:
                others[name] = others.get(name, 0) + 1
    for name, count in others.items():
        notes.append((None, f"{count} {_OTHER_COMPONENTS[name]} not imported (events only)"))
    for plan in plans.values():
        if plan.master is None and plan.overrides and plan.error is None:
            plan.warnings.append(
                "only changed occurrences of a recurring event are in the file (not the "
                "event itself): each is imported as an event of its own"
            )
    return ReadFile(list(plans.values()), notes, work.spent)


def _components(calendar: Component) -> Iterator[Component]:
    """The calendar's own subcomponents (VEVENTs are directly inside VCALENDAR; a file of
    bare VEVENTs without one is refused by ``check_shape``)."""
    if (calendar.name or "").upper() == "VCALENDAR":
        yield from calendar.subcomponents
    else:
        yield calendar


def _single(vevent: Component, name: str) -> Any:
    """A property that may appear once; ``_Unreadable`` when it appears more often."""
    value = vevent.get(name)
    if isinstance(value, list):
        raise _Unreadable(f"it has {len(value)} {name} properties (one is allowed)")
    return value


def _uid_of(vevent: Component) -> str:
    uid = vevent.get("UID")
    if isinstance(uid, list):  # refused in _take_vevent; grouped under the first meanwhile
        uid = uid[0] if uid else None
    if uid is not None and str(uid).strip():
        return str(uid).strip()
    # Without a UID (RFC 5545 requires one): one made of the VEVENT's text, so that importing
    # the same file again still finds it.
    try:
        text = vevent.to_ical()
    except Exception:  # a value the parser kept but cannot write back: its names, then
        text = repr(sorted(vevent.keys())).encode()
    return "sha256-" + hashlib.sha256(text).hexdigest()


def _take_vevent(vevent: Component, plans: dict[str, Planned], zones: FileZones) -> None:
    uid = _uid_of(vevent)
    plan = plans.setdefault(uid, Planned(uid))
    problems = [f"{name or 'a line'}: {message}" for name, message in vevent.errors]
    rid = None
    try:
        if problems:
            raise _Unreadable("; ".join(problems)[:300])
        _single(vevent, "UID")
        rid = _single(vevent, "RECURRENCE-ID")
        fields = _fields(vevent, zones)
        cancelled = str(_single(vevent, "STATUS") or "").upper() == "CANCELLED"
        if rid is not None:
            if rid.params.get("RANGE", "").upper() == "THISANDFUTURE":
                plan.warnings.append(
                    "RECURRENCE-ID;RANGE=THISANDFUTURE is read as this occurrence only"
                )
            original = _moment(rid, "RECURRENCE-ID", zones)
            plan.overrides.append(Override(original, fields, cancelled))
        else:
            if plan.master is not None:
                raise _Unreadable("the UID is used by two events without RECURRENCE-ID")
            plan.master = fields
            plan.cancelled = cancelled
            plan.start_zone = _zone_of(fields.start)
            _take_rule(vevent, plan, zones)
    except _Unreadable as exc:
        plan.fail(str(exc))
        return
    except Exception as exc:  # the parser's values can fail when read: this VEVENT's error
        plan.fail(f"it could not be read ({type(exc).__name__}: {str(exc)[:120]})")
        return
    dropped = _dropped(vevent)
    if dropped:
        which = "" if rid is None else f" (occurrence {_text_of(rid)})"
        plan.warnings.append(
            f"not imported{which}, as events here have no place for them: " + ", ".join(dropped)
        )


class _Unreadable(Exception):
    """A VEVENT that cannot be imported: the message says why."""


def _fields(vevent: Component, zones: FileZones) -> Fields:
    start_prop = _single(vevent, "DTSTART")
    if start_prop is None:
        raise _Unreadable("it has no DTSTART (when it starts)")
    start = _moment(start_prop, "DTSTART", zones)
    end_prop = _single(vevent, "DTEND")
    duration = _single(vevent, "DURATION")
    end: Moment
    if end_prop is not None:
        end = _moment(end_prop, "DTEND", zones)
        if isinstance(end, datetime) != isinstance(start, datetime):
            raise _Unreadable("DTSTART and DTEND must both be dates or both date-times")
    elif duration is not None:
        length = getattr(duration, "dt", None)
        if not isinstance(length, timedelta) or length < timedelta(0):
            raise _Unreadable("its DURATION is not a positive duration")
        if isinstance(start, datetime):
            end = start + length
        else:
            end = start + timedelta(days=max(length.days, 1))
    else:  # RFC 5545 3.6.1: a date lasts a day; a date-time, no time at all
        end = start if isinstance(start, datetime) else start + timedelta(days=1)
    if _before(end, start):
        raise _Unreadable("it ends before it starts (DTEND before DTSTART)")
    summary = (_optional_text(vevent.get("SUMMARY")) or "").strip()
    title = summary or NO_TITLE
    if len(title) > TITLE_MAX:
        title = title[: TITLE_MAX - 1] + "…"
    return Fields(
        title=title,
        description=_optional_text(vevent.get("DESCRIPTION")),
        location=_optional_text(vevent.get("LOCATION")),
        start=start,
        end=end,
        transparency=_transparency(vevent),
        attendees=_attendees(vevent),
    )


_PARTSTATS = {
    "ACCEPTED": "accepted",
    "DECLINED": "declined",
    "TENTATIVE": "tentative",
    "NEEDS-ACTION": "needsAction",
}
_MOST_ATTENDEES_READ = 1000  # more are not read (an event keeps at most 100)


def _attendees(vevent: Component) -> list[dict[str, Any]] | None:
    """The VEVENT's ``ATTENDEE`` lines (RFC 5545 3.8.4.1) with a ``mailto:`` address, as the
    API's attendees: ``CN`` the name, ``PARTSTAT`` the response, ``ROLE=OPT-PARTICIPANT``
    optional. Not checked here (``people.check_attendees`` is, by the import)."""
    found = vevent.get("ATTENDEE")
    if found is None:
        return None
    props = found if isinstance(found, list) else [found]
    attendees: list[dict[str, Any]] = []
    for prop in props[:_MOST_ATTENDEES_READ]:
        address = str(prop)
        if address[:7].lower() != "mailto:":
            continue
        params = getattr(prop, "params", {})
        attendee: dict[str, Any] = {"email": address[7:]}
        name = params.get("CN")
        if isinstance(name, str) and name.strip():
            attendee["name"] = name
        if str(params.get("ROLE", "")).upper() == "OPT-PARTICIPANT":
            attendee["optional"] = True
        attendee["responseStatus"] = _PARTSTATS.get(
            str(params.get("PARTSTAT", "")).upper(), "needsAction"
        )
        attendees.append(attendee)
    return attendees or None


def _transparency(vevent: Component) -> str:
    """``transparent`` for ``TRANSP:TRANSPARENT`` (RFC 5545 3.8.2.7), else ``opaque``."""
    value = _optional_text(vevent.get("TRANSP"))
    return "transparent" if (value or "").strip().upper() == "TRANSPARENT" else "opaque"


def _before(a: Moment, b: Moment) -> bool:
    """``a`` is before ``b`` (both dates, or date-times both aware or both floating)."""
    if isinstance(a, datetime) != isinstance(b, datetime):
        return False
    if (
        isinstance(a, datetime)
        and isinstance(b, datetime)
        and (a.tzinfo is None) != (b.tzinfo is None)
    ):
        return False
    return a < b


def _optional_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    text = str(value)  # a NUL stays: the import refuses it, as every other path does
    return text if text.strip() else None


def _moment(prop: Any, name: str, zones: FileZones) -> Moment:
    """A DTSTART/DTEND/RECURRENCE-ID value: a date, or a date-time made aware when it names a
    zone (see the module's docstring); floating date-times stay naive."""
    if isinstance(prop, list):
        raise _Unreadable(f"it has {len(prop)} {name} properties (one is allowed)")
    value = getattr(prop, "dt", None)
    if isinstance(value, datetime):
        return _with_zone(value, prop.params.get("TZID"), name, zones)
    if isinstance(value, date):
        return value
    raise _Unreadable(f"{name} is not a date or a date-time")


def _with_zone(value: datetime, tzid: str | None, name: str, zones: FileZones) -> datetime:
    """``value`` (as written: naive, or UTC when it ends in ``Z``) in the zone ``tzid``
    names, if any (see the module's docstring)."""
    if not tzid:
        return value
    text = str(tzid)
    try:
        resolved = resolve_tzid(text) or zones.zone(text, value.replace(tzinfo=None))
    except ZoneRefused as exc:
        raise _Unreadable(
            f"{name} names the time zone {text[:80]!r}, whose VTIMEZONE in the file cannot "
            f"be read: {exc}"
        ) from None
    if resolved is None:
        raise _Unreadable(
            f"{name} names the time zone {text[:80]!r}, which is neither an IANA zone "
            "(Europe/Berlin), nor a Windows zone name, nor described by a VTIMEZONE in the file"
        )
    return value.replace(tzinfo=resolved)


def _zone_of(start: Moment) -> tzinfo | None:
    """The zone of the main VEVENT's DTSTART, if it has one."""
    return start.tzinfo if isinstance(start, datetime) else None


def _take_rule(vevent: Component, plan: Planned, zones: FileZones) -> None:
    rules = vevent.get("RRULE")
    if rules is None:
        if vevent.get("RDATE") is not None:
            plan.rdates.extend(_dates(vevent, "RDATE", plan, zones))
        return
    if isinstance(rules, list):
        if len(rules) > 1:
            raise _Unreadable("it has more than one RRULE (one rule per event is supported)")
        rules = rules[0]
    plan.rule = rules.to_ical().decode()
    plan.exdates.extend(_dates(vevent, "EXDATE", plan, zones))
    plan.rdates.extend(_dates(vevent, "RDATE", plan, zones))


def _dates(vevent: Component, name: str, plan: Planned, zones: FileZones) -> list[Moment]:
    found: list[Moment] = []
    periods = others = 0
    for prop in _as_list(vevent.get(name)):
        tzid = prop.params.get("TZID")
        for item in getattr(prop, "dts", []):
            value = item.dt
            if isinstance(value, tuple):  # a PERIOD: its start
                periods += 1
                value = value[0]
            if isinstance(value, datetime):
                found.append(_with_zone(value, tzid, name, zones))
            elif isinstance(value, date):
                found.append(value)
            else:
                others += 1
    if others:
        plan.warnings.append(
            f"{others} {name} values that are neither dates nor date-times (such as "
            "VALUE=TIME): ignored"
        )
    if periods:
        plan.warnings.append(
            f"{periods} {name} periods: only their starts are kept (each occurrence lasts as "
            "long as the series')"
        )
    return found


def _as_list(value: Any) -> Iterable[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _dropped(vevent: Component) -> list[str]:
    dropped = []
    for name, label in _DROPPED_PROPERTIES.items():
        values = _as_list(vevent.get(name))
        count = len(list(values))
        if count:
            dropped.append(f"{count} {label}" if count > 1 else label)
    for component in vevent.subcomponents:
        kind = _DROPPED_COMPONENTS.get((component.name or "").upper())
        if kind is not None:
            dropped.append(kind)
    return list(dict.fromkeys(dropped))


def _text_of(prop: Any) -> str:
    value = getattr(prop, "dt", None)
    return value.isoformat() if isinstance(value, date) else str(value)
