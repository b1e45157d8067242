"""The recurrence core: hostile rules cost a bounded amount of work (counted in the budget's
units, about a microsecond each, never by the clock), a list that runs out of budget answers
short pages that still give every occurrence exactly once, and the series query searches its
partial index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, text

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.calendar.events.queries import series_statement
from calendar_service.calendar.recurrence import (
    READ_BUDGET,
    Budget,
    Paused,
    SeriesTimes,
    expand,
    measured,
    occurrence_id,
    original_of,
    parse_recurrence,
    split_occurrence_id,
    stored_rule,
    summarize,
)
from calendar_service.operations import catalog as operations
from calendar_service.platform.db import Database
from calendar_service.platform.deferred import Later
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.models import to_db
from calendar_service.platform.timeutil import utcnow, zone
from tests.core.calendar.events.test_query_plan import list_plan, plan_of
from tests.support import Factory

START = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
BERLIN = zone("Europe/Berlin")
KEY = b"test page-token key"
SETPOS = ",".join(str(n) for n in range(-180, 0))  # 180 positions: a long walk per period

# Rules that iterate many periods (dateutil alone would run until the year 9999 on some).
HOSTILE = {
    "30 February, daily": "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
    "a second Monday in a week": "RRULE:FREQ=WEEKLY;BYDAY=MO;BYSETPOS=2",
    "31 February, monthly": "RRULE:FREQ=MONTHLY;BYMONTHDAY=31;BYMONTH=2",
    "a sixth Monday": "RRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6",
    "BYSETPOS over a whole year": f"RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;BYSETPOS={SETPOS}",
    "Monday 29 February, daily": "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
    "a huge interval": "RRULE:FREQ=DAILY;INTERVAL=10000;BYMONTHDAY=31",
}
# The most one period can cost: a year, walked once per BYSETPOS position.
MOST_PER_PERIOD = 2 + 366 * 181 // 10


@pytest.mark.parametrize("name", list(HOSTILE))
def test_expanding_a_hostile_rule_stops_within_the_budget_and_moves_on(name: str) -> None:
    rule = parse_recurrence([HOSTILE[name]], tz=BERLIN, all_day=False)
    budget = Budget(READ_BUDGET)
    since = datetime(1990, 1, 1, tzinfo=UTC)
    times = SeriesTimes(datetime(1900, 1, 1, 8, tzinfo=UTC), BERLIN, None)
    found = []
    try:
        found.extend(expand(rule, times, since=since, budget=budget))
    except Paused as pause:
        assert pause.at > since  # the next request starts further on
    assert budget.left >= -MOST_PER_PERIOD  # no more than one period over the budget
    assert all(instant >= since for instant in found)


@pytest.mark.parametrize("name", [n for n in HOSTILE if "29 February" not in n and "huge" not in n])
def test_a_rule_that_never_occurs_is_refused_when_written(name: str) -> None:
    rule = parse_recurrence([HOSTILE[name]], tz=BERLIN, all_day=False)
    with pytest.raises(ValidationFailed) as refused:
        summarize(rule, SeriesTimes(START, BERLIN, None), length=timedelta(hours=1))
    [error] = refused.value.errors
    assert error["field"] == "recurrence"
    assert "never produces an occurrence" in error["message"] or "too far" in error["message"]


def test_count_is_found_once_and_the_read_skips_ahead_to_the_window() -> None:
    rule = parse_recurrence(["RRULE:FREQ=DAILY;COUNT=36500"], tz=UTC, all_day=False)
    summary = summarize(rule, SeriesTimes(START, UTC, None), length=timedelta(minutes=30))
    assert summary.last_start == START + timedelta(days=36499)
    assert summary.ends_at == START + timedelta(days=36499, minutes=30)
    budget = Budget(1000)  # a few hundred periods at most
    late = datetime(2100, 6, 1, tzinfo=UTC)
    times = SeriesTimes(START, UTC, summary.last_start)
    got = [
        i for i, _ in zip(expand(rule, times, since=late, budget=budget), range(3), strict=False)
    ]
    assert got == [late.replace(hour=8, minute=30) + timedelta(days=d) for d in range(3)]
    assert budget.left > 900


def test_occurrence_ids_name_the_original_start_in_utc_or_the_local_date() -> None:
    timed = occurrence_id("ev_x", START, all_day=False, tz=BERLIN)
    assert timed == "ev_x_20260302T083000Z"
    assert split_occurrence_id(timed) == ("ev_x", "20260302T083000Z")
    assert original_of("20260302T083000Z", all_day=False, tz=BERLIN) == START
    midnight = datetime(2026, 3, 1, 23, tzinfo=UTC)  # 2 March, 00:00 in Berlin
    assert occurrence_id("ev_x", midnight, all_day=True, tz=BERLIN) == "ev_x_20260302"
    assert original_of("20260302", all_day=True, tz=BERLIN) == midnight
    for not_an_occurrence in ("ev_x", "ev_x_2026", "ev_x_20260302T0830Z", "_20260302"):
        assert split_occurrence_id(not_an_occurrence) is None
    assert original_of("20260302", all_day=False, tz=BERLIN) is None
    assert original_of("20260231T083000Z", all_day=False, tz=BERLIN) is None


def test_stored_lines_read_back_as_the_same_rule_in_any_zone() -> None:
    sent = [
        "rrule:freq=weekly;byday=mo,we;until=20260401T120000",
        "EXDATE;TZID=America/New_York:20260304T033000",
        "RDATE:20260307T083000Z",
    ]
    rule = parse_recurrence(sent, tz=BERLIN, all_day=False)
    assert rule.lines == (
        "RRULE:FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20260401T100000Z",
        "EXDATE:20260304T083000Z",
        "RDATE:20260307T083000Z",
    )
    assert stored_rule(rule.lines, False) == rule


def _principal(factory: Factory) -> tuple[Principal, str]:
    owner = factory.owner()
    key_id, _ = factory.key(owner, calendar_id=owner.default_calendar_id)
    return Principal(key_id, owner.id, "write", owner.default_calendar_id, utcnow()), owner.id


def test_a_list_that_runs_out_of_budget_answers_short_pages_with_every_occurrence_once(
    db: Database, factory: Factory
) -> None:
    principal, _ = _principal(factory)
    # Monday 29 February comes every 28 years or so: each series costs a daily rule some
    # 10,000 periods between two occurrences, so 30 of them outrun one request's budget.
    body = {
        "title": "rare",
        "startsAt": "2016-02-29T09:00:00Z",
        "endsAt": "2016-02-29T10:00:00Z",
        "recurrence": [HOSTILE["Monday 29 February, daily"]],
    }
    made = [
        db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())[0]
        for _ in range(30)
    ]
    rule = parse_recurrence(body["recurrence"], tz=UTC, all_day=False)
    start = datetime(2016, 2, 29, 9, tzinfo=UTC)
    expected_starts = list(
        expand(rule, SeriesTimes(start, UTC, None), since=start, budget=Budget(10**9))
    )
    assert len(expected_starts) >= 6
    expected = sorted(
        (s, occurrence_id(e["id"], s, all_day=False, tz=UTC)) for e in made for s in expected_starts
    )
    seen: list[tuple[datetime, str]] = []
    short_pages = 0
    token = None
    for _ in range(1000):
        page = db.call(
            events.list_events,
            principal=principal,
            limit=100,
            page_token=token,
            token_key=b"test page-token key",
        )
        seen.extend((datetime.fromisoformat(e["startsAt"]), e["id"]) for e in page["events"])
        token = page.get("nextPageToken")
        if token is None:
            break
        short_pages += len(page["events"]) < 100
    assert token is None
    assert seen == expected
    assert short_pages > 0  # the budget did run out, and the pages went on from there


@pytest.mark.parametrize("statement", ["calendar", "window"])
def test_the_series_queries_search_the_partial_index_of_series(
    db: Database, factory: Factory, statement: str
) -> None:
    """Both ways the list reads series: a calendar's (kept in memory for its version) and the
    window's (for a calendar with more series than are kept)."""
    principal, _ = _principal(factory)

    def fill(conn: Connection) -> None:
        # PostgreSQL's planner weighs the indexes by their size: give the calendar what
        # calendars have, many single events and a few series (SQLite is told, INDEXED BY).
        for n in range(400 if db.engine.dialect.name == "postgresql" else 1):
            body = {
                "title": f"single {n}",
                "startsAt": f"2026-03-0{2 + n % 7}T{n % 24:02d}:00:00Z",
                "endsAt": f"2026-03-0{2 + n % 7}T{n % 24:02d}:30:00Z",
            }
            if n % 100 == 0:
                body["recurrence"] = ["RRULE:FREQ=WEEKLY"]
            events.create_event_from_input(conn, principal=principal, body=body, now=utcnow())
        if db.engine.dialect.name == "postgresql":
            conn.execute(text("ANALYZE events"))

    db.call(fill)
    if statement == "calendar":
        plan = list_plan(db, principal, "series_version")
    else:
        calendar_id = principal.calendar_id
        plan = plan_of(
            db,
            lambda sql: "recurrence IS NOT NULL" in sql and "series_version" not in sql,
            lambda: db.call(
                lambda conn: series_statement(True, True, True, False).all(
                    conn,
                    calendar_id=calendar_id,
                    low=to_db(datetime(2026, 3, 2, tzinfo=UTC), conn.dialect.name),
                    high=to_db(datetime(2026, 3, 9, tzinfo=UTC), conn.dialect.name),
                )
            ),
        )
    assert "ix_events_series" in plan, plan


def test_a_change_of_a_series_waits_for_another_change_of_one_of_its_occurrences(
    db: Database, factory: Factory
) -> None:
    """Two changes of one series are made one at a time: a change of an occurrence holds the
    series' row lock until it ends, so a rule change made meanwhile cannot leave its exception
    behind (on PostgreSQL; SQLite has one writer at a time, which its engine enforces)."""
    principal, _ = _principal(factory)
    body = {
        "title": "weekly",
        "startsAt": "2026-03-02T09:00:00Z",
        "endsAt": "2026-03-02T10:00:00Z",
        "recurrence": ["RRULE:FREQ=WEEKLY"],
    }
    series = db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())[
        0
    ]
    second = occurrence_id(
        series["id"], START.replace(day=9, hour=9, minute=0), all_day=False, tz=UTC
    )
    with db.engine.connect() as first, db.engine.connect() as other:
        first.begin()
        events.update_event(
            first, principal=principal, event_id=second, body={"title": "moved"}, now=utcnow()
        )
        postgres = db.engine.dialect.name == "postgresql"
        if not postgres:  # SQLite: the second writer cannot even begin
            other.connection.dbapi_connection.execute("PRAGMA busy_timeout = 100")  # type: ignore[union-attr]
        with pytest.raises(Exception, match="lock"):
            other.begin()
            if postgres:
                other.execute(text("SET LOCAL lock_timeout = '100ms'"))
            events.update_event(
                other,
                principal=principal,
                event_id=series["id"],
                body={"recurrence": ["RRULE:FREQ=DAILY"]},
                now=utcnow(),
            )
        other.rollback()
        first.commit()
    moved = db.call(events.get_event, principal=principal, event_id=second)
    assert moved["title"] == "moved"


@pytest.mark.parametrize(
    ("rule", "first"),
    [
        ("RRULE:FREQ=WEEKLY", "2026-03-01T23:00:00Z"),  # dense: read from merged chunks
        ("RRULE:FREQ=YEARLY", "2025-03-08T23:00:00Z"),  # sparse: read series by series
    ],
    ids=["weekly", "yearly"],
)
def test_an_occurrence_that_began_before_the_window_is_listed_wherever_the_window_starts(
    db: Database, factory: Factory, rule: str, first: str
) -> None:
    """An occurrence overlapping ``timeMin`` is listed even when it starts before the stretch
    of time (in memory, ``events.occurrences``) that ``timeMin`` falls in: here 23:00-01:00
    occurrences, with ``timeMin`` half an hour into each, across 2026-03-09T00:00Z, where one
    stretch ends and the next begins."""
    principal, _ = _principal(factory)
    start = datetime.fromisoformat(first)
    body = {
        "title": "late",
        "startsAt": first,
        "endsAt": (start + timedelta(hours=2)).isoformat(),
        "recurrence": [rule],
    }
    db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())
    parsed = parse_recurrence([rule], tz=UTC, all_day=False)
    starts = list(expand(parsed, SeriesTimes(start, UTC, None), since=start, budget=Budget(10**9)))[
        :3
    ]
    for occurrence in starts:
        time_min = occurrence + timedelta(minutes=90)  # after midnight, before it ends
        page = db.call(
            events.list_events,
            principal=principal,
            time_min=time_min.isoformat(),
            time_max=(time_min + timedelta(days=2)).isoformat(),
            token_key=b"test page-token key",
        )
        assert [datetime.fromisoformat(e["startsAt"]) for e in page["events"]] == [occurrence]


EVERY_QUARTER_HOUR = "BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,15,30,45"
# 96 occurrences a day, the most validation allows, without end (issue 24, B).
DENSE = {
    "daily": f"RRULE:FREQ=DAILY;{EVERY_QUARTER_HOUR}",
    "weekly": f"RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;{EVERY_QUARTER_HOUR}",
    "yearly": f"RRULE:FREQ=YEARLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;{EVERY_QUARTER_HOUR}",
}


@pytest.mark.parametrize("name", list(DENSE))
def test_a_page_of_a_dense_endless_series_over_the_whole_range_computes_what_it_shows(
    db: Database, factory: Factory, name: str
) -> None:
    """A page of ten from 1901 to 2199 starts its search where the series starts and computes
    about what it returns: not every occurrence up to a boundary doubled from 1901."""
    principal, _ = _principal(factory)
    body = {
        "title": "dense",
        "startsAt": "2026-03-02T00:00:00Z",
        "endsAt": "2026-03-02T00:10:00Z",
        "recurrence": [DENSE[name]],
    }
    made = db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())
    first = datetime(2026, 3, 2, tzinfo=UTC)
    with measured() as work:
        page = db.call(
            events.list_events,
            principal=principal,
            time_min="1901-01-01T00:00:00Z",
            time_max="2199-12-31T00:00:00Z",
            limit=10,
            token_key=b"test page-token key",
        )
    starts = [datetime.fromisoformat(e["startsAt"]) for e in page["events"]]
    assert starts == [first + timedelta(minutes=15 * n) for n in range(10)]
    assert {e["recurringEventId"] for e in page["events"]} == {made[0]["id"]}
    assert "nextPageToken" in page
    assert work.instances <= 1000  # a few chunks of a day or two, not years of them
    assert work.periods <= 100


def test_a_list_leaves_expanding_for_after_its_transaction_and_reads_memory_at_once(
    db: Database, factory: Factory
) -> None:
    """What the fronts run (``operations.LIST``): a page whose series must be expanded is a
    ``Later``, made without the database once the transaction is over (on a thread: the event
    loop and SQLite's lock are free meanwhile); the same page again, read from memory, at once."""
    principal, _ = _principal(factory)
    body = {
        "title": "dense",
        "startsAt": "2031-05-06T07:08:09Z",  # chunks no other test has made
        "endsAt": "2031-05-06T07:18:09Z",
        "recurrence": [DENSE["daily"]],
    }
    db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())

    def listed(conn: Connection) -> Any:
        return operations.LIST.run(
            conn, principal=principal, time_min="1901-01-01T00:00:00Z", limit=10, token_key=KEY
        )

    first = db.call(listed)
    assert isinstance(first, Later)
    page = first.finish()
    assert [e["startsAt"] for e in page["events"]][:2] == [
        "2031-05-06T07:08:09Z",
        "2031-05-06T07:15:09Z",  # DTSTART, then the rule's quarter hours
    ]
    again = db.call(listed)
    assert isinstance(again, dict)
    # The same page (its token carries the sync position: other tests may write meanwhile).
    assert again["events"] == page["events"] and "nextPageToken" in again
