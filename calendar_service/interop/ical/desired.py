"""What an ``.ics`` file wants the calendar to hold, checked as the core checks it, before
anything is written (``importing`` writes it).

Each UID the file holds (``reading.Planned``) becomes the events it asks for
(``wanted_events``): its event or series as a ``Desired`` (the times as the core takes them
and as instants; a series' recurrence lines, its cancelled occurrences as EXDATEs; its
changed occurrences, each checked against the rule: one the rule does not give is said and
left out, one that changes nothing left out silently; its attendees, each valid one), or,
without its main VEVENT, each changed occurrence an event of its own. A value the core
refuses raises ``ValidationFailed`` (the UID's error); what is imported only in part is said
in the import's ``Report`` (a warning).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import orjson

from calendar_service.calendar.attendees import MAX_ATTENDEES, check_attendees
from calendar_service.calendar.event_input import check_title, resolve_times
from calendar_service.calendar.events.series import recurrence_columns
from calendar_service.calendar.events.shapes import zone_name
from calendar_service.calendar.recurrence import SeriesTimes, occurs_at, stored_rule
from calendar_service.interop.ical.reading import Fields, Moment, Planned
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.inputs import check_text
from calendar_service.platform.timeutil import format_utc, is_valid_zone, localize, midnight, zone

_PER_LINE = 40  # EXDATE/RDATE values per line (a line stays under the core's 1,000 characters)


@dataclass(slots=True)
class Report:
    """The import's answer (``importing``'s docstring): its counts, errors and warnings."""

    created: int = 0
    updated: int = 0
    skipped: int = 0
    errors: list[dict[str, str | None]] = field(default_factory=list)
    warnings: list[dict[str, str | None]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "skipped": self.skipped,
            "errors": self.errors,
            "warnings": self.warnings,
        }


@dataclass(slots=True)
class Occurrence:
    """A changed occurrence of a series, checked, as it will be stored."""

    original: datetime
    title: str
    description: str | None
    location: str | None
    all_day: bool
    start: datetime
    end: datetime
    transparency: str


@dataclass(slots=True)
class Desired:
    """One event (or series) as the file wants it, checked."""

    key: str  # what makes it the same import: the UID (and RECURRENCE-ID, for orphans)
    uid: str  # the UID the feed gives it back under
    title: str
    description: str | None
    location: str | None
    all_day: bool
    starts_at: str  # as the core takes them
    ends_at: str
    start: datetime
    end: datetime
    recurrence: list[str] | None
    stored_recurrence: str | None  # the normalized lines, as stored
    overrides: list[Occurrence]
    transparency: str
    time_zone: str | None = None  # a series' own zone, when not the calendar's
    attendees: list[dict[str, Any]] | None = None  # checked (``_checked_attendees``)


def _checked_attendees(found: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The file's attendees an event may have: each valid one (an address that is not, or a
    second line for one address, is left out), the first ``people.MAX_ATTENDEES``."""
    if not found:
        return None
    kept: list[dict[str, Any]] = []
    for attendee in found:
        errors: list[FieldError] = []
        checked = check_attendees([*kept, attendee], errors)
        if checked is not None:
            kept = checked
        if len(kept) >= MAX_ATTENDEES:
            break
    return kept or None


def _text_time(moment: Moment) -> str:
    """A time as the core takes it: a date, an RFC 3339 date-time, or (floating) a date-time
    without an offset, which the core reads in the calendar's zone."""
    return moment.isoformat()


def _is_all_day(moment: Moment) -> bool:
    return not isinstance(moment, datetime)


def wanted_events(plan: Planned, tz: tzinfo, report: Report) -> list[Desired]:
    if plan.master is None:  # changed occurrences only: each an event of its own
        singles = []
        for override in plan.overrides:
            if override.cancelled:
                report.warnings.append(
                    {
                        "uid": plan.uid,
                        "message": f"the occurrence {_text_time(override.original)} is "
                        "cancelled, and its event is not in the file: nothing to import",
                    }
                )
                continue
            stamp = _text_time(override.original)
            singles.append(
                _checked(
                    override.fields,
                    tz,
                    key=f"{plan.uid}\n{stamp}",
                    uid=f"{plan.uid}-{stamp}",
                    lines=None,
                    overrides=[],
                    plan=plan,
                    report=report,
                )
            )
        return singles
    lines = _lines(plan, tz, report)
    return [
        _checked(
            plan.master,
            tz,
            key=plan.uid,
            uid=plan.uid,
            lines=lines,
            overrides=[o for o in plan.overrides if not o.cancelled],
            plan=plan,
            report=report,
        )
    ]


def _checked(
    fields: Fields,
    tz: tzinfo,
    *,
    key: str,
    uid: str,
    lines: list[str] | None,
    overrides: list[Any],
    plan: Planned,
    report: Report,
) -> Desired:
    errors: list[FieldError] = _text_errors(fields)
    all_day = _is_all_day(fields.start)
    title = check_title(fields.title, errors) or fields.title
    starts_at, ends_at = _text_time(fields.start), _text_time(fields.end)
    # A series repeats at its own zone's wall clock (the zone of its DTSTART), as in the file.
    own = _own_zone(plan, tz) if lines is not None and not all_day else None
    local = tz if own is None else zone(own)
    read_in, starts_at, ends_at = _wall_times(fields, local, starts_at, ends_at)
    start, end = resolve_times(
        starts=starts_at, ends=ends_at, all_day=all_day, tz=read_in, errors=errors
    )
    if not all_day and start is not None and end is not None:  # the instants, for the core
        starts_at, ends_at = format_utc(start), format_utc(end)
    stored: str | None = None
    occurrences: list[Occurrence] = []
    if lines is not None and start is not None and end is not None:
        columns = recurrence_columns(
            lines, start=start, end=end, all_day=all_day, tz=local, errors=errors
        )
        stored = columns.get("recurrence")
        if stored is not None:
            rule = stored_rule(tuple(orjson.loads(stored)), all_day)
            times = SeriesTimes(start, local, columns["recurrence_last_start"])
            series = _Series(rule, times, local, all_day, end - start, fields, plan, report)
            series.check_cancelled(tz)
            occurrences = _occurrences(overrides, series, errors)
            if own is None:
                _zone_note(plan, tz, start, report)
    if lines is None and overrides:
        report.warnings.append(
            {
                "uid": plan.uid,
                "message": f"{len(overrides)} changed occurrences of an event that does not "
                "repeat (no RRULE or RDATE): ignored",
            }
        )
    if errors or start is None or end is None:
        raise ValidationFailed(errors)
    return Desired(
        key=key,
        uid=uid,
        title=title,
        description=fields.description,
        location=fields.location,
        all_day=all_day,
        starts_at=starts_at,
        ends_at=ends_at,
        start=start,
        end=end,
        recurrence=lines,
        stored_recurrence=stored,
        overrides=occurrences,
        transparency=fields.transparency,
        time_zone=own,
        attendees=_checked_attendees(fields.attendees),
    )


def _wall_times(fields: Fields, tz: tzinfo, starts: str, ends: str) -> tuple[tzinfo, str, str]:
    """DTSTART and DTEND in one IANA zone are wall-clock times there (``TZID=``): read by the
    core in that zone, so that its spring-gap rule (``timeutil.keep_length``) applies as to a
    time sent without an offset. Else the times as given, read in ``tz``."""
    start, end = fields.start, fields.end
    if not isinstance(start, datetime) or start.tzinfo is None:
        return tz, starts, ends
    name = getattr(start.tzinfo, "key", None)
    if not isinstance(name, str) or not is_valid_zone(name):
        return tz, starts, ends
    if isinstance(end, datetime) and end.tzinfo is start.tzinfo:
        ends = end.replace(tzinfo=None).isoformat()
    return start.tzinfo, start.replace(tzinfo=None).isoformat(), ends


def _own_zone(plan: Planned, tz: tzinfo) -> str | None:
    """The IANA name of the zone a timed series' DTSTART names, when it is not the
    calendar's (``None``: the calendar's, as for floating times and zones known only by the
    file's own VTIMEZONE)."""
    source = plan.start_zone
    name = "UTC" if source is UTC else getattr(source, "key", None)
    if not isinstance(name, str) or not is_valid_zone(name) or zone(name) is tz:
        return None
    return name


@dataclass(slots=True)
class _Series:
    """A series as imported, for checking what the file says of its occurrences: whether the
    rule gives an original start, and how to name one in a warning."""

    rule: Any
    times: SeriesTimes
    tz: tzinfo  # the zone it repeats in
    all_day: bool
    length: timedelta  # of a timed series' occurrences
    fields: Fields  # the main VEVENT's
    plan: Planned
    report: Report

    def gives(self, original: datetime) -> bool:
        """Whether the rule (EXDATEs aside) has an occurrence starting at ``original``."""
        return occurs_at(dataclasses.replace(self.rule, exdates=frozenset()), self.times, original)

    def label(self, moment: Moment) -> str:
        """``2026-03-17 10:00 America/New_York`` (in the series' zone), or a date."""
        if not isinstance(moment, datetime):
            return moment.isoformat()
        local = moment.astimezone(self.tz) if moment.tzinfo is not None else moment
        if self.all_day:
            return local.date().isoformat()
        return f"{local:%Y-%m-%d %H:%M} {zone_name(self.tz)}"

    def repeats(self) -> str:
        """When the series' occurrences start, in words."""
        if self.all_day:
            return "it repeats on whole days"
        return f"it repeats at {self.times.start.astimezone(self.tz):%H:%M} {zone_name(self.tz)}"

    def warn(self, message: str) -> None:
        self.report.warnings.append({"uid": self.plan.uid, "message": message})

    def check_cancelled(self, calendar_tz: tzinfo) -> None:
        """Say which EXDATEs and cancelled occurrences name no occurrence of the rule (a
        time in another zone than meant, a date the rule skips): nothing to cancel."""
        cancelled = [o.original for o in self.plan.overrides if o.cancelled]
        for name, values in (("EXDATE", self.plan.exdates), ("cancelled RECURRENCE-ID", cancelled)):
            for value in values:
                if not self.all_day and not isinstance(value, datetime):
                    continue  # a date on a timed series: said by _lines
                original = _instant(value, self.tz, self.all_day)
                if original is not None and not self.gives(original):
                    self.warn(
                        f"{name} {self.label(value)} cancels no occurrence of the series' "
                        f"rule ({self.repeats()}): ignored"
                    )


def _text_errors(fields: Fields) -> list[FieldError]:
    """The texts' errors, by the rule every path applies (``inputs.check_text``: no NUL),
    named as the file names them."""
    return [
        *check_text("SUMMARY", fields.title),
        *check_text("DESCRIPTION", fields.description),
        *check_text("LOCATION", fields.location),
    ]


def _occurrences(
    overrides: list[Any], series: _Series, errors: list[FieldError]
) -> list[Occurrence]:
    """The changed occurrences to store: each checked against the rule (one it does not
    give is said and left out: the occurrence the rule gives stays), and one that changes
    nothing left out silently (a reader that writes every occurrence near a DST change as
    an exception, as the feeds here do)."""
    found: dict[datetime, Occurrence] = {}
    all_day, tz = series.all_day, series.tz
    for override in overrides:
        original = _instant(override.original, tz, all_day)
        label = series.label(override.original)
        if original is None or not occurs_at(series.rule, series.times, original):
            why = (
                "is cancelled by an EXDATE"
                if original is not None and series.gives(original)
                else f"is not an occurrence of the series' rule ({series.repeats()})"
            )
            series.warn(
                f"RECURRENCE-ID {label} {why}, so this changed occurrence "
                f"({override.fields.title!r}) was not imported; the series' own occurrences "
                "are as the rule gives them"
            )
            continue
        fields = override.fields
        own: list[FieldError] = _text_errors(fields)
        own_all_day = _is_all_day(fields.start)
        title = check_title(fields.title, own) or fields.title
        start, end = resolve_times(
            starts=_text_time(fields.start),
            ends=_text_time(fields.end),
            all_day=own_all_day,
            tz=tz,
            errors=own,
        )
        if own or start is None or end is None:
            errors.extend(
                FieldError(f"occurrence {label}: {e['field']}", e["message"]) for e in own
            )
            continue
        occurrence = Occurrence(
            original,
            title,
            fields.description,
            fields.location,
            own_all_day,
            start,
            end,
            fields.transparency,
        )
        if not _changes_nothing(occurrence, series):
            found[original] = occurrence
    return [found[k] for k in sorted(found)]


def _changes_nothing(occurrence: Occurrence, series: _Series) -> bool:
    """The changed occurrence of a timed series is the occurrence as the rule gives it,
    field for field."""
    master = series.fields
    if series.all_day or occurrence.all_day:
        return False
    return (
        occurrence.title == (check_title(master.title, []) or master.title)
        and occurrence.description == master.description
        and occurrence.location == master.location
        and occurrence.transparency == master.transparency
        and occurrence.start == occurrence.original
        and occurrence.end - occurrence.start == series.length
    )


def _instant(moment: Moment, tz: tzinfo, all_day: bool) -> datetime | None:
    """An occurrence's original start as stored: an instant (an all-day series': its local
    midnight); ``None`` when it cannot be one of the series' (a date for a timed series)."""
    if all_day:
        day = (
            moment.astimezone(tz).date()
            if isinstance(moment, datetime) and moment.tzinfo
            else moment
        )
        day = day.date() if isinstance(day, datetime) else day
        return midnight(day, tz)
    if not isinstance(moment, datetime):
        return None
    aware = moment if moment.tzinfo is not None else localize(moment, tz)
    return aware.astimezone(UTC)


def _lines(plan: Planned, tz: tzinfo, report: Report) -> list[str] | None:
    """The recurrence lines of the main VEVENT (cancelled occurrences as EXDATEs), or
    ``None`` for a single event. RDATEs without an RRULE ride on ``COUNT=1``."""
    assert plan.master is not None
    cancelled = [o.original for o in plan.overrides if o.cancelled]
    if plan.rule is None and not plan.rdates:
        if cancelled:
            report.warnings.append(
                {
                    "uid": plan.uid,
                    "message": "cancelled occurrences of an event that does not repeat: ignored",
                }
            )
        return None
    all_day = _is_all_day(plan.master.start)
    lines = ["RRULE:" + (plan.rule or "FREQ=DAILY;COUNT=1")]
    for name, values in (("EXDATE", [*plan.exdates, *cancelled]), ("RDATE", plan.rdates)):
        texts, skipped = _date_texts(values, tz, all_day)
        if skipped:
            report.warnings.append(
                {
                    "uid": plan.uid,
                    "message": f"{skipped} {name} dates given without a time on a timed series: "
                    "ignored",
                }
            )
        prefix = f"{name};VALUE=DATE:" if all_day else f"{name}:"
        for first in range(0, len(texts), _PER_LINE):
            lines.append(prefix + ",".join(texts[first : first + _PER_LINE]))
    return lines


def _date_texts(values: list[Moment], tz: tzinfo, all_day: bool) -> tuple[list[str], int]:
    texts: list[str] = []
    skipped = 0
    for value in values:
        if all_day:
            day = value
            if isinstance(value, datetime):
                day = (value.astimezone(tz) if value.tzinfo else value).date()
            texts.append(day.strftime("%Y%m%d"))
        elif isinstance(value, datetime):
            if value.tzinfo is None:  # floating: the core reads it in the calendar's zone
                texts.append(value.strftime("%Y%m%dT%H%M%S"))
            else:
                texts.append(value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ"))
        else:
            skipped += 1
    return list(dict.fromkeys(texts)), skipped


def _zone_note(plan: Planned, tz: tzinfo, start: datetime, report: Report) -> None:
    """Warn when the file's zone for a series changes its clocks on other dates than the
    calendar's: the series repeats at the calendar's wall-clock time, so some occurrences
    would be an hour off the file's."""
    source = plan.start_zone
    if source is None or source is tz:
        return
    first = start.astimezone(source).utcoffset() - start.astimezone(tz).utcoffset()  # type: ignore[operator]
    for week in range(1, 54):
        moment = start + timedelta(weeks=week)
        gap = moment.astimezone(source).utcoffset() - moment.astimezone(tz).utcoffset()  # type: ignore[operator]
        if gap != first:
            report.warnings.append(
                {
                    "uid": plan.uid,
                    "message": "the series repeats in the calendar's time zone, whose clocks "
                    "change on other dates than the file's zone: around those dates some "
                    "occurrences are an hour off the file's",
                }
            )
            return
