"""A key's call history: newest first, paginated, filtered, charted per day, exported as CSV.

Every handler first loads the key through ``keys.get_key(user_id=owner)``: a key of another
owner is a 404 before any of its history is read.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any, TypedDict

from sqlalchemy import Connection
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.chart import daily_chart
from calendar_service.account.web import account, owner_page, render
from calendar_service.calendar import calendars
from calendar_service.platform.timeutil import utcnow

PAGE_SIZE = 50
NOTICES = {"approval-saved": "Saved: from its next request on, its writes wait as chosen."}
CSV_CHUNK = 1000
CHART_DAYS = 30
CSV_COLUMNS = (
    "at",
    "transport",
    "operation",
    "method",
    "path",
    "status",
    "latencyMs",
    "clientAddr",
    "userAgent",
    "requestId",
    "dryRun",
)


class _Filters(TypedDict):
    status_class: str | None
    transport: str | None


def _filters(request: Request) -> _Filters:
    params = request.query_params
    return {
        "status_class": params.get("status") or None,
        "transport": params.get("transport") or None,
    }


def _before(request: Request) -> int | None:
    raw = request.query_params.get("before")
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise HTTPException(400, "'before' must be a call number from this page's links.")
    return int(raw)


def _history_page(
    conn: Connection,
    *,
    user_id: str,
    key_id: str,
    status_class: str | None,
    transport: str | None,
    before_id: int | None,
    now: datetime,
) -> dict[str, Any]:
    key = keys.get_key(conn, user_id=user_id, key_id=key_id)  # scoped to the owner first
    calls = history.list_calls(
        conn,
        key_id=key["id"],
        status_class=status_class,
        transport=transport,
        limit=PAGE_SIZE + 1,
        before_id=before_id,
    )
    today = now.date()
    since = datetime.combine(
        today - timedelta(days=CHART_DAYS - 1), datetime.min.time(), now.tzinfo
    )
    counts = history.calls_per_day(conn, key_id=key["id"], since=since)
    last_used = keys.last_used_at(conn, key_id=key["id"])
    public = keys.key_public(key, now=now, last_used_at=last_used)
    public["calendarName"] = None
    if key["calendar_id"]:
        owned = calendars.list_owner_calendars(conn, user_id=user_id)
        public["calendarName"] = next((c.name for c in owned if c.id == key["calendar_id"]), None)
    return {
        "key": public,
        "calls": calls[:PAGE_SIZE],
        "older": calls[PAGE_SIZE - 1]["id"] if len(calls) > PAGE_SIZE else None,
        "chart": daily_chart(counts, last=today, days=CHART_DAYS),
    }


@owner_page
async def calls_page(request: Request, owner: OwnerSessionInfo) -> Response:
    filters = _filters(request)
    before_id = _before(request)
    data = await account(request).services.db.run(
        _history_page,
        user_id=owner.user_id,
        key_id=request.path_params["key_id"],
        before_id=before_id,
        now=utcnow(),
        **filters,
    )
    return render(
        request,
        "calls.html",
        {
            **data,
            "section": "keys",
            "status": filters["status_class"] or "",
            "transport": filters["transport"] or "",
            "paged": before_id is not None,
            "status_classes": history.STATUS_CLASSES,
            "transports": history.TRANSPORTS,
            "notice": NOTICES.get(request.query_params.get("notice", "")),
        },
    )


def _csv_cell(value: Any) -> Any:
    # A spreadsheet runs a cell starting with = + - @ as a formula; a user agent is the
    # caller's to choose, so such text is quoted with a leading apostrophe.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _csv_rows(calls: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    for call in calls:
        writer.writerow([_csv_cell(call[column]) for column in CSV_COLUMNS])
    return out.getvalue()


@owner_page
async def calls_csv(request: Request, owner: OwnerSessionInfo) -> Response:
    filters = _filters(request)
    db = account(request).services.db
    key_id = request.path_params["key_id"]
    # Check ownership and the filters before the response starts: errors are then a page.
    await db.run(keys.get_key, user_id=owner.user_id, key_id=key_id)
    first = await db.run(history.list_calls, key_id=key_id, limit=CSV_CHUNK, **filters)

    async def rows() -> AsyncIterator[str]:
        yield ",".join(CSV_COLUMNS) + "\r\n"
        chunk = first
        while chunk:
            yield _csv_rows(chunk)
            if len(chunk) < CSV_CHUNK:
                return
            chunk = await db.run(
                history.list_calls,
                key_id=key_id,
                limit=CSV_CHUNK,
                before_id=chunk[-1]["id"],
                **filters,
            )

    stamp = utcnow().strftime("%Y%m%d-%H%M%S")
    return StreamingResponse(
        rows(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="calls-{key_id}-{stamp}.csv"'},
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/keys/{key_id}/calls", calls_page, methods=["GET"]),
        Route("/keys/{key_id}/calls.csv", calls_csv, methods=["GET"]),
    ]
