"""What a change of events writes to the change log (``changes``): one change per write, in its
transaction, with the unit of rows it touched (``journal.change_record.Unit``) as they were before
and after, and the event as the API showed it.

``Edit`` is a change in the making: made with the unit's rows before (read, or taken from what
the caller already holds); once everything is written, ``rows`` reads them after, and the
caller records the change (``journal.change_record.record``) if anything changed (a PATCH that
sends no field writes nothing, and is no change). A create knows its one row and records it
without reading (``log_created``: every create runs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import Connection, or_, select

from calendar_service.calendar.events.queries import EVENT_COLUMNS, events_t
from calendar_service.calendar.events.series import rule_of, times_of
from calendar_service.calendar.recurrence import WRITE_BUDGET, Budget, Paused, expand
from calendar_service.journal.change_record import CREATED_UNIT, Unit, Via, plain, record
from calendar_service.journal.change_table import CREATED


def read_rows(conn: Connection, ids: Sequence[str], series: Sequence[str]) -> list[dict[str, Any]]:
    """The unit's rows as they are now (plain, ordered by id): the rows ``ids`` names and the
    exception rows of the series ``series`` names."""
    found = conn.execute(
        select(*EVENT_COLUMNS).where(_in_unit(ids, series)).order_by(events_t.c.id)
    )
    return [plain(row) for row in found]


def _in_unit(ids: Sequence[str], series: Sequence[str]) -> Any:
    where: Any = events_t.c.id.in_(ids)
    if series:
        where = or_(where, events_t.c.recurring_event_id.in_(series))
    return where


def unit_of(row: Any) -> tuple[list[str], list[str]]:
    """The unit of the event ``row``: an exception row alone; a single event or a series with
    every exception row of it (a single event has none, but may become a series)."""
    if row.recurring_event_id is not None:
        return [row.id], []
    return [row.id], [row.id]


class Edit:
    """A change being made to one unit: once it is written, ``rows`` says what ``record``
    keeps of it."""

    __slots__ = ("before", "ids", "series")

    def __init__(
        self,
        conn: Connection,
        ids: list[str],
        series: list[str],
        before: list[dict[str, Any]] | None = None,
    ) -> None:
        self.ids, self.series = ids, series
        self.before = read_rows(conn, ids, series) if before is None else before

    @classmethod
    def of_row(cls, conn: Connection, row: Any) -> Edit:
        """The unit of ``row`` (``unit_of``), read unless it is a single event or an exception
        row, whose unit is the row itself."""
        ids, series = unit_of(row)
        if row.recurrence is None:
            return cls(conn, ids, series, [plain(row)])
        return cls(conn, ids, series)

    def rows(self, conn: Connection, new_series_id: str | None = None) -> str | None:
        """The unit as the change records it (``record``'s ``rows``), or ``None`` when nothing
        was written; ``new_series_id``: a series it made beside (a split), whose rows join the
        unit."""
        ids, series = list(self.ids), list(self.series)
        if new_series_id is not None:
            ids.append(new_series_id)
            series.append(new_series_id)
        unit = Unit(ids, series, self.before, read_rows(conn, ids, series))
        return unit.encoded() if unit.changed() else None


def log_created(
    conn: Connection,
    *,
    via: Via,
    user_id: str,
    event: dict[str, Any],
    row: dict[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """Record a create: nothing before, the event ``row`` (as inserted) after, which its change
    keeps as ``event`` shows it (``record.CREATED_UNIT``: every create runs this)."""
    event_id = row["id"]
    return record(
        conn,
        via=via,
        user_id=user_id,
        kind=CREATED,
        event_id=event_id,
        calendar_id=row["calendar_id"],
        now=now,
        before=None,
        after=event,
        rows=CREATED_UNIT % (event_id, event_id),
    )


def occurrences_from(series: Any, tz: tzinfo, since: datetime | None = None) -> int | None:
    """How many occurrences the series ``series`` (a fetched row; ``tz``: its calendar's zone)
    has from ``since`` (default: its start) on: what a change of them touches. ``None`` when
    the series is endless, or too long to count within a write's work bound."""
    if series.recurrence_last_start is None:
        return None
    times = times_of(series, tz)
    try:
        return sum(
            1
            for _ in expand(
                rule_of(series),
                times,
                since=since or times.start,
                budget=Budget(WRITE_BUDGET),
            )
        )
    except Paused:
        return None
