"""A key's call history over HTTP: counting per day, filters, pages, the chart, CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from calendar_service.access import call_history as history
from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.account import history_pages
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings
from tests.support import Factory


def _seed(db: Database, key_id: str, calls: list[dict[str, Any]]) -> None:
    """Record calls in the order given (oldest first, as they would arrive)."""

    def write(conn: Any) -> None:
        for n, call in enumerate(calls):
            record_call(
                conn,
                CallRecord(
                    key_id=key_id,
                    at=call.get("at", utcnow()),
                    transport=call.get("transport", "rest"),
                    operation=call.get("operation", "listCalendarEvents"),
                    method=call.get("method", "GET"),
                    path=call.get("path", "/api/v1/calendar/events"),
                    status=call.get("status", 200),
                    latency_ms=1.25,
                    client_addr="192.0.2.1",
                    user_agent=call.get("user_agent", "tests"),
                    request_id=f"req_{n}",
                    dry_run=call.get("dry_run", False),
                ),
            )

    db.call(write)


def test_calls_are_counted_per_utc_day_split_by_success(factory: Factory) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    day = datetime(2031, 3, 2, tzinfo=UTC)
    _seed(
        factory.db,
        key_id,
        [
            {"at": day - timedelta(seconds=1), "status": 200},  # the day before
            {"at": day, "status": 200},
            {"at": day + timedelta(hours=12), "status": 302},
            {"at": day + timedelta(hours=23, minutes=59), "status": 401},
            {"at": day + timedelta(days=1), "status": 500},
        ],
    )
    counts = factory.db.call(history.calls_per_day, key_id=key_id, since=day - timedelta(days=1))
    assert counts == {"2031-03-01": (1, 0), "2031-03-02": (2, 1), "2031-03-03": (0, 1)}
    assert (
        factory.db.call(history.calls_per_day, key_id=key_id, since=day + timedelta(days=2)) == {}
    )


def test_history_filters_by_status_class_and_transport(
    settings: Settings, factory: Factory
) -> None:
    key_id, _ = factory.key(settings.owner)
    _seed(
        factory.db,
        key_id,
        [
            {"status": 200, "transport": "rest"},
            {"status": 401, "transport": "rest", "path": "/rest-401"},
            {"status": 429, "transport": "mcp", "path": "/mcp-429"},
            {"status": 500, "transport": "mcp", "path": "/mcp-500"},
        ],
    )
    page = settings.get(f"/keys/{key_id}/calls", params={"status": "4xx"}).text
    assert "/rest-401" in page and "/mcp-429" in page and "/mcp-500" not in page
    page = settings.get(f"/keys/{key_id}/calls", params={"status": "4xx", "transport": "mcp"}).text
    assert "/mcp-429" in page and "/rest-401" not in page
    assert '<option value="mcp" selected>' in page  # the filter shows what it applies
    refused = settings.get(f"/keys/{key_id}/calls", params={"status": "9xx"})
    assert refused.status_code == 400
    assert "must be one of 2xx, 3xx, 4xx, 5xx" in refused.text


def test_history_pages_go_back_newest_first(settings: Settings, factory: Factory) -> None:
    key_id, _ = factory.key(settings.owner)
    total = history_pages.PAGE_SIZE * 2 + 7
    _seed(factory.db, key_id, [{"path": f"/call/{n:03d}"} for n in range(total)])
    seen: list[str] = []
    url: str | None = f"/keys/{key_id}/calls"
    pages = 0
    while url:
        page = settings.get(url).text
        pages += 1
        seen.extend(
            line.split("/call/")[1][:3] for line in page.splitlines() if "<code>GET /call/" in line
        )
        older = [part for part in page.split('"') if "before=" in part and "calls?" in part]
        url = older[-1].replace("&amp;", "&").removeprefix("/settings") if older else None
    assert pages == 3
    assert seen == [f"{n:03d}" for n in reversed(range(total))]


def test_the_chart_shows_each_days_successes_and_failures(
    settings: Settings, factory: Factory
) -> None:
    key_id, _ = factory.key(settings.owner, name="Charted")
    now = utcnow()
    _seed(
        factory.db,
        key_id,
        [{"at": now - timedelta(days=3), "status": s} for s in (200, 200, 201, 404)]
        + [{"at": now, "status": s} for s in (200, 503)],
    )
    page = settings.get(f"/keys/{key_id}/calls").text
    three_days_ago = now - timedelta(days=3)
    assert (
        f"{three_days_ago:%a} {three_days_ago.day} {three_days_ago:%b}: 3 succeeded, 1 failed"
        in page
    )
    assert f"{now:%a} {now.day} {now:%b}: 1 succeeded, 1 failed" in page
    assert "Last 30 days, UTC: 4 succeeded, 2 failed." in page
    assert page.count('<rect class="failed"') == 2
    assert (
        'role="img"' in page and '<title id="chart-title">Calls per day for Charted</title>' in page
    )


def test_the_csv_export_has_every_matching_call_and_defuses_formulas(
    settings: Settings, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_pages, "CSV_CHUNK", 4)  # make the export read several chunks
    key_id, _ = factory.key(settings.owner)
    calls = [{"path": f"/call/{n}", "status": 200 if n % 2 else 404} for n in range(11)]
    calls.append({"status": 500, "user_agent": '=HYPERLINK("http://evil.example","x")'})
    _seed(factory.db, key_id, calls)

    everything = settings.get(f"/keys/{key_id}/calls.csv")
    assert everything.status_code == 200
    assert everything.headers["content-type"].startswith("text/csv")
    assert everything.headers["content-disposition"].startswith(
        f'attachment; filename="calls-{key_id}-'
    )
    rows = list(csv.DictReader(io.StringIO(everything.text)))
    assert len(rows) == 12
    assert rows[0]["status"] == "500"  # newest first
    assert rows[0]["userAgent"] == '\'=HYPERLINK("http://evil.example","x")'
    assert [r["path"] for r in rows[1:]] == [f"/call/{n}" for n in reversed(range(11))]
    assert set(rows[0]) == set(history_pages.CSV_COLUMNS)

    failures = settings.get(f"/keys/{key_id}/calls.csv", params={"status": "4xx"})
    assert [r["status"] for r in csv.DictReader(io.StringIO(failures.text))] == ["404"] * 6


def test_a_dry_run_says_so_in_the_history_and_its_csv(settings: Settings, factory: Factory) -> None:
    key_id, _ = factory.key(settings.owner)
    _seed(
        factory.db,
        key_id,
        [
            {"operation": "createCalendarEvent", "method": "POST", "dry_run": True},
            {"operation": "deleteCalendarEvent", "method": "DELETE"},
        ],
    )
    page = settings.get(f"/keys/{key_id}/calls")
    assert page.status_code == 200
    assert 'createCalendarEvent <span class="muted">(REST, dry run)</span>' in page.text
    assert 'deleteCalendarEvent <span class="muted">(REST)</span>' in page.text
    rows = list(csv.DictReader(io.StringIO(settings.get(f"/keys/{key_id}/calls.csv").text)))
    assert [(r["operation"], r["dryRun"]) for r in rows] == [
        ("deleteCalendarEvent", "False"),
        ("createCalendarEvent", "True"),
    ]
