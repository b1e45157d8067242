"""The list query lets the index bound both ends of the window (no scan of older events)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from calendar_service import events
from calendar_service.db import Database
from calendar_service.keys import Principal
from calendar_service.timeutil import utcnow
from tests.support import Factory


def _captured_list_query(db: Database, principal: Principal) -> tuple[str, Any]:
    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "FROM events" in statement:
            captured.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", capture)
    try:
        db.call(
            events.list_events,
            principal=principal,
            time_min="2026-03-02T00:00:00Z",
            time_max="2026-03-09T00:00:00Z",
        )
    finally:
        event.remove(db.engine, "before_cursor_execute", capture)
    assert len(captured) == 1
    return captured[0]


def test_the_window_query_searches_the_index_on_calendar_and_both_start_bounds(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner, calendar_id=owner.default_calendar_id)
    principal = Principal(key_id, owner.id, "read", owner.default_calendar_id, utcnow())
    statement, params = _captured_list_query(db, principal)
    with db.engine.connect() as conn:
        if db.engine.dialect.name == "sqlite":
            plan = " ".join(
                str(row[-1])
                for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)
            )
            assert "USING INDEX ix_events_calendar_start" in plan, plan
            assert "starts_at>? AND starts_at<?" in plan, plan
        else:
            conn.execute(text("SET enable_seqscan = off"))  # tiny table: ask what it *can* use
            plan = " ".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {statement}", params))
            assert "ix_events_calendar_start" in plan, plan
            assert "starts_at >=" in plan and "starts_at <" in plan, plan


def test_the_history_purge_goes_through_the_key_index(db: Database) -> None:
    from calendar_service.history import purge_calls

    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE FROM CALLS"):
            captured.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", capture)
    try:
        db.call(purge_calls, now=utcnow(), keep_days=90)
    finally:
        event.remove(db.engine, "before_cursor_execute", capture)
    assert len(captured) == 1
    statement, params = captured[0]
    with db.engine.connect() as conn:
        if db.engine.dialect.name == "sqlite":
            plan = " ".join(
                str(row[-1])
                for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)
            )
            assert "ix_calls_key_at (key_id=? AND at<?)" in plan, plan
            assert "SCAN calls" not in plan, plan
        else:
            conn.execute(text("SET enable_seqscan = off"))
            plan = " ".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {statement}", params))
            assert "ix_calls_key_at" in plan, plan
