"""An all-day event's days as people count them: its last day is inclusive, where its
``endsAt`` (as every front answers and takes it) is the exclusive midnight after that day.

A page that shows or takes "the last day" converts here, so that the arithmetic is done once.
"""

from __future__ import annotations

from datetime import date, datetime

from calendar_service.platform.timeutil import ONE_DAY


def end_after(last_day: str) -> str:
    """The ``endsAt`` (a date) of an all-day event whose last day is ``last_day``
    (``YYYY-MM-DD``): the day after. ``ValueError`` for a text that is no date; the last date
    there is comes back as it is, for the core to refuse as out of range."""
    day = date.fromisoformat(last_day)
    try:
        return (day + ONE_DAY).isoformat()
    except OverflowError:
        return last_day


def last_day(starts_at: str, ends_at: str) -> str:
    """The last day (``YYYY-MM-DD``) of an all-day event from its ``startsAt`` and ``endsAt``
    (RFC 3339, or dates, as the public event shows them): the day before its end, and never
    before its first day (an event that ends where it starts lasts that day)."""
    starts = datetime.fromisoformat(starts_at.replace("Z", "+00:00")).date()
    ends = datetime.fromisoformat(ends_at.replace("Z", "+00:00")).date()
    return max(ends - ONE_DAY, starts).isoformat()
