"""The hot queries search their indexes: the list window on both bounds (no scan of older
events), the busy time of availability likewise, the history purge key by key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event, text

from calendar_service.access.call_history import purge_calls
from calendar_service.access.keys import Principal
from calendar_service.calendar import availability, events
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory


def plan_of(db: Database, wanted: Callable[[str], bool], run: Callable[[], Any]) -> str:
    """The query plan of the one statement matching ``wanted`` that ``run`` executes:
    SQLite's EXPLAIN QUERY PLAN, or PostgreSQL's EXPLAIN with sequential scans off (the test
    tables are tiny: ask what the planner *can* use)."""
    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if wanted(statement):
            captured.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", capture)
    try:
        run()
    finally:
        event.remove(db.engine, "before_cursor_execute", capture)
    assert len(captured) == 1
    statement, params = captured[0]
    with db.engine.connect() as conn:
        if db.engine.dialect.name == "sqlite":
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)
            return " ".join(str(row[-1]) for row in rows)
        conn.execute(text("SET enable_seqscan = off"))
        return " ".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {statement}", params))


def list_plan(db: Database, principal: Principal, marker: str, **narrowed: Any) -> str:
    """The plan of the list's statement on ``events`` that holds ``marker``, for a one-week
    window (``narrowed``: ``calendar_ids``, if any)."""
    return plan_of(
        db,
        lambda statement: "FROM events" in statement and marker in statement,
        lambda: db.call(
            events.list_events,
            principal=principal,
            time_min="2026-03-02T00:00:00Z",
            time_max="2026-03-09T00:00:00Z",
            token_key=b"test page-token key",
            **narrowed,
        ),
    )


def assert_searches_the_window_index(db: Database, plan: str) -> None:
    """``plan`` searches ``ix_events_calendar_start`` on the calendar and both start bounds."""
    if db.engine.dialect.name == "sqlite":
        assert "USING INDEX ix_events_calendar_start" in plan, plan
        assert "starts_at>? AND starts_at<?" in plan, plan
    else:
        assert "ix_events_calendar_start" in plan, plan
        assert "starts_at >=" in plan and "starts_at <" in plan, plan


def test_the_window_query_searches_the_index_on_calendar_and_both_start_bounds(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner, calendar_id=owner.default_calendar_id)
    principal = Principal(key_id, owner.id, "read", owner.default_calendar_id, utcnow())
    # the window query (the list's other query, for series, has a test of its own)
    plan = list_plan(db, principal, "recurrence IS NULL")
    assert_searches_the_window_index(db, plan)


def test_a_list_narrowed_to_some_calendars_searches_the_same_index_for_each(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    factory.calendar(owner, name="Other")
    chosen = {"calendar_ids": [owner.default_calendar_id, work]}
    plan = list_plan(db, events.owner_principal(owner.id), "recurrence IS NULL", **chosen)
    assert_searches_the_window_index(db, plan)


def test_the_history_purge_goes_through_the_key_index(db: Database) -> None:
    plan = plan_of(
        db,
        lambda statement: statement.lstrip().upper().startswith("DELETE FROM CALLS"),
        lambda: db.call(purge_calls, now=utcnow(), keep_days=90),
    )
    if db.engine.dialect.name == "sqlite":
        assert "ix_calls_key_at (key_id=? AND at<?)" in plan, plan
        assert "SCAN calls" not in plan, plan
    else:
        assert "ix_calls_key_at" in plan, plan


def test_the_busy_time_query_searches_the_same_index_as_the_list(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    plan = plan_of(
        db,
        lambda statement: "FROM events" in statement and "transparency" in statement,
        lambda: db.call(
            availability.query_free_busy,
            principal=events.owner_principal(owner.id),
            body={
                "timeMin": "2026-03-02T00:00:00Z",
                "timeMax": "2026-03-09T00:00:00Z",
                "calendarIds": [owner.default_calendar_id, work],
            },
        ),
    )
    assert_searches_the_window_index(db, plan)


def test_an_all_calendars_create_finds_the_default_calendar_by_its_index(
    db: Database, factory: Factory
) -> None:
    """A create through a key of all the owner's calendars that names none goes to the
    default, read through ``ix_calendars_user_default`` (owner, is_default), not by visiting
    each of the owner's calendars (migration 0031)."""
    owner = factory.owner()
    for n in range(3):
        factory.calendar(owner, name=f"other {n}")
    key_id, _ = factory.key(owner)  # all calendars
    principal = Principal(key_id, owner.id, "write", None, utcnow())
    created: list[dict[str, Any]] = []
    plan = plan_of(
        db,
        lambda statement: "FROM calendars" in statement and "is_default" in statement,
        lambda: created.append(
            db.call(
                events.create_event_from_input,
                principal=principal,
                body={
                    "title": "t",
                    "startsAt": "2026-03-02T09:00:00Z",
                    "endsAt": "2026-03-02T10:00:00Z",
                },
                now=utcnow(),
            )[0]
        ),
    )
    assert created[0]["calendarId"] == owner.default_calendar_id
    if db.engine.dialect.name == "sqlite":
        assert "USING INDEX ix_calendars_user_default (user_id=? AND is_default=?)" in plan, plan
    else:  # the tables are tiny and unanalysed: either index on the owner may be chosen
        assert "Index Scan using ix_calendars_user_" in plan, plan
