"""Reading what callers send about events: list windows, titles, start and end times.

Every function here collects ``FieldError``s rather than stopping at the first, so that a
caller hears about every bad field at once; none reads or writes the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.inputs import M, parse_partial
from calendar_service.platform.models.events import TITLE_MAX, TRANSPARENCIES
from calendar_service.platform.timeutil import (
    ONE_DAY,
    format_in,
    gap_message,
    gap_shift,
    is_valid_zone,
    keep_length,
    midnight,
    parse_date_time,
    parse_day,
    wall_time,
    zone,
)

DEFAULT_LIMIT = 250
MAX_LIMIT = 2500


def _parse_bound(text: str, tz: tzinfo) -> datetime:
    """A list bound: a date-time, or a bare date meaning that day's midnight."""
    text = text.strip()
    if len(text) == 10:
        return midnight(parse_day(text, tz), tz)
    return parse_date_time(text, tz)


def parse_list_params(
    *,
    time_min: str | None,
    time_max: str | None,
    limit: Any,
    tz: tzinfo,
) -> tuple[datetime | None, datetime | None, int]:
    """The list's window (either bound may be ``None``) and page size; bounds without an
    offset are read in ``tz``."""
    errors: list[FieldError] = []
    bounds: list[datetime | None] = []
    for name, text in (("timeMin", time_min), ("timeMax", time_max)):
        if text is None or text == "":
            bounds.append(None)
            continue
        try:
            bounds.append(_parse_bound(text, tz))
        except ValueError as exc:
            bounds.append(None)
            errors.append(FieldError(name, str(exc)))
    low, high = bounds
    if low is not None and high is not None and high < low:
        errors.append(FieldError("timeMax", "must not be before timeMin"))
    size = DEFAULT_LIMIT
    if limit is not None and limit != "":
        try:
            size = int(limit)
        except (TypeError, ValueError):
            size = 0
        if not 1 <= size <= MAX_LIMIT or (isinstance(limit, str) and not limit.isdigit()):
            errors.append(FieldError("limit", f"must be a whole number from 1 to {MAX_LIMIT}"))
    if errors:
        raise ValidationFailed(errors)
    return low, high, size


def parse_single_events(value: bool | str | None) -> bool:
    """``singleEvents``: occurrences (true, the default) or series (false)."""
    if value is None or value == "" or value is True or value == "true":
        return True
    if value is False or value == "false":
        return False
    raise ValidationFailed([FieldError("singleEvents", "must be true or false")])


def parse_untrusted(
    model: type[M], body: Any, prior_errors: Sequence[FieldError]
) -> tuple[M, list[FieldError]]:
    """Decoded, untrusted JSON as ``model``: the fields that were fine, and the input's type
    errors added to the front's own (``inputs.parse_partial``), for the core to report with
    every value error it finds."""
    data, type_errors = parse_partial(model, body)
    return data, [*prior_errors, *type_errors]


def check_title(value: Any, errors: list[FieldError]) -> str | None:
    """The title trimmed, or ``None`` with the reason added to ``errors``."""
    if not isinstance(value, str):
        errors.append(FieldError("title", "must be a string"))
        return None
    title = value.strip()
    if not title:
        errors.append(FieldError("title", "must not be empty"))
    elif len(title) > TITLE_MAX:
        errors.append(
            FieldError("title", f"must be at most {TITLE_MAX} characters (got {len(title)})")
        )
    return title


def check_transparency(value: Any, errors: list[FieldError]) -> str | None:
    """``opaque`` or ``transparent``, or ``None`` with the reason added to ``errors``."""
    if value in TRANSPARENCIES:
        return str(value)
    errors.append(
        FieldError("transparency", "must be 'opaque' (busy, the default) or 'transparent' (free)")
    )
    return None


def check_time_zone(
    value: Any, all_day: bool, calendar_tz: tzinfo, errors: list[FieldError]
) -> tuple[str | None, tzinfo]:
    """``timeZone``: the zone a timed event's times without an offset are read in and a
    series repeats in; the name to store (``None``: none sent, the calendar's) and the zone to
    read in. A bad one is added to ``errors`` (and the calendar's zone used)."""
    if value is None:
        return None, calendar_tz
    if all_day:
        errors.append(
            FieldError(
                "timeZone",
                "applies to timed events only: an all-day event is whole days of its "
                "calendar's time zone",
            )
        )
    elif not isinstance(value, str) or not is_valid_zone(value):
        errors.append(
            FieldError("timeZone", "must be an IANA time zone such as America/New_York or UTC")
        )
    else:
        return value, zone(value)
    return None, calendar_tz


def resolve_times(
    *,
    starts: str | None,
    ends: str | None,
    all_day: bool,
    tz: tzinfo,
    errors: list[FieldError],
) -> tuple[datetime | None, datetime | None]:
    """Parse startsAt/endsAt for a timed or an all-day event; returns UTC bounds."""
    if all_day:
        days = []
        for name, text in (("startsAt", starts), ("endsAt", ends)):
            try:
                days.append(parse_day(text, tz) if text is not None else None)
            except ValueError as exc:
                errors.append(FieldError(name, str(exc)))
                days.append(None)
        first, last = days
        if first is None or last is None:
            return None, None
        if last < first:
            errors.append(FieldError("endsAt", "must not be before startsAt"))
            return None, None
        # endsAt is exclusive; equal to startsAt means a one-day event.
        if last == first:
            last = first + ONE_DAY
        start_end: list[datetime | None] = []
        for name, day in (("startsAt", first), ("endsAt", last)):
            try:
                start_end.append(midnight(day, tz))
            except ValueError as exc:
                errors.append(FieldError(name, str(exc)))
                start_end.append(None)
        return start_end[0], start_end[1]
    bounds = []
    for name, text in (("startsAt", starts), ("endsAt", ends)):
        try:
            bounds.append(parse_date_time(text, tz) if text is not None else None)
        except ValueError as exc:
            message = str(exc)
            if isinstance(text, str) and len(text.strip()) == 10:
                message = (
                    "must be a date-time such as 2026-03-02T09:30:00+01:00; for a "
                    "whole-day event send a date with allDay: true"
                )
            errors.append(FieldError(name, message))
            bounds.append(None)
    start, end = bounds
    if start is not None and end is not None:
        start_wall, end_wall = wall_time(starts), wall_time(ends)
        end = keep_length(start_wall, end_wall, start, end, tz)
        in_gap = start_wall is not None and bool(gap_shift(start_wall, tz))
        if in_gap and end_wall is None and end <= start:
            assert start_wall is not None
            errors.append(FieldError("startsAt", gap_message(start_wall, tz)))
        elif end < start:
            errors.append(FieldError("endsAt", "must not be before startsAt"))
    return start, end


def current_times(row: Any, tz: tzinfo, all_day: bool) -> tuple[str, str]:
    """The stored bounds as input strings, for re-validating a partial update."""
    if all_day and bool(row.all_day):
        return (
            row.starts_at.astimezone(tz).date().isoformat(),
            row.ends_at.astimezone(tz).date().isoformat(),
        )
    return format_in(row.starts_at, tz), format_in(row.ends_at, tz)


def camel(name: str) -> str:
    """A model field's public (API) name: ``starts_at`` -> ``startsAt``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
