"""A key's work, governed from its page: which of its writes wait for the owner (its
``approval``), and undoing what it did since a time, revoking it in the same click.

``/keys/{id}/undo`` shows what undoing the key's changes since a time undoes (counted, the
newest listed: ``governance.undo_jobs.preview_undo``, no dry run) and offers to revoke the key
with it; its POST revokes the key (if asked) and begins the job (``start_undo_job``), in one
transaction, and answers at once with a 303 to the job's page, ``/keys/{id}/undo/{job}``.
This process runs the job (``background.UndoJobs``), as the owner through ``settings``, a
batch at a time; the page shows its progress, reloading itself while it runs, then what was
undone and what was left and why. So a key that misbehaves is stopped and its work undone
in two clicks from the keys page: *Undo work*, then *Revoke and undo*.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import keys
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.changes_view import KINDS, title_of
from calendar_service.account.web import account, form, owner_page, owner_post, render, see_other
from calendar_service.asgi.context import request_id
from calendar_service.calendar import calendars
from calendar_service.governance import undo_jobs
from calendar_service.journal.change_record import Via
from calendar_service.journal.change_table import OWNER
from calendar_service.platform.db import atomic
from calendar_service.platform.errors import NotFound
from calendar_service.platform.timeutil import format_utc, utcnow

# How far back the page undoes: its choices, and "since the key was made".
SINCE_CHOICES = (
    ("1h", "The last hour", timedelta(hours=1)),
    ("24h", "The last 24 hours", timedelta(days=1)),
    ("7d", "The last 7 days", timedelta(days=7)),
    ("30d", "The last 30 days", timedelta(days=30)),
)
EVER = "all"
DEFAULT_SINCE = "24h"
SHOWN = 200  # of the changes undone, and of those refused, listed once the job is done
REFRESH_SECONDS = 2  # how often the job's page reloads itself while the job runs


def _since(choice: str, key: dict[str, Any]) -> str:
    """The instant a choice names (RFC 3339), from now; ``EVER``: when the key was made."""
    for value, _, span in SINCE_CHOICES:
        if value == choice:
            return format_utc((utcnow() - span).replace(microsecond=0))
    return format_utc(key["created_at"])


def _key(conn: Connection, *, user_id: str, key_id: str, now: datetime) -> dict[str, Any]:
    row = keys.get_key(conn, user_id=user_id, key_id=key_id)  # another owner's key: 404
    public = keys.key_public(row, now=now)
    public["created_at"] = row["created_at"]
    if public["calendarId"]:
        names = {c.id: c.name for c in calendars.list_owner_calendars(conn, user_id=user_id)}
        public["calendarName"] = names.get(public["calendarId"])
    return public


def _shown(item: dict[str, Any]) -> dict[str, Any]:
    return {
        **item,
        "title": title_of(item["before"], item["after"]),
        "kind_label": KINDS[item["kind"]],
    }


def _preview(
    conn: Connection, *, user_id: str, key_id: str, since: str, now: datetime
) -> dict[str, Any]:
    """The key, and what undoing its changes since ``since`` undoes: counted, the newest
    listed (bounded: no dry run)."""
    key = _key(conn, user_id=user_id, key_id=key_id, now=now)
    found = undo_jobs.preview_undo(conn, user_id=user_id, key_id=key_id, since=since)
    return {"key": key, "count": found["count"], "changes": [_shown(c) for c in found["changes"]]}


def _start(conn: Connection, **job: Any) -> dict[str, Any]:
    """``undo_jobs.start_undo_job`` in a transaction of its own (``run_off_loop`` opens
    none)."""
    with atomic(conn):
        return undo_jobs.start_undo_job(conn, **job)


def _job_page(
    conn: Connection, *, user_id: str, key_id: str, job_id: str, now: datetime
) -> dict[str, Any]:
    """The job (another owner's, or another key's: 404), its key, and once done its
    outcomes (the first ``SHOWN`` of each)."""
    job = undo_jobs.undo_job(conn, user_id=user_id, job_id=job_id)
    if job["keyId"] != key_id:
        raise NotFound(f"No undo job {job_id!r}.")
    page: dict[str, Any] = {"job": job, "key": _key(conn, user_id=user_id, key_id=key_id, now=now)}
    if job["state"] == undo_jobs.DONE:
        results = functools.partial(
            undo_jobs.undo_job_results, conn, user_id=user_id, job_id=job_id, limit=SHOWN
        )
        page["undone"] = [_shown(r["change"]) for r in results(outcome=undo_jobs.UNDONE)]
        page["refused"] = [
            {**r, "change": _shown(r["change"])} for r in results(outcome=undo_jobs.REFUSED)
        ]
    return page


def _via(request: Request, owner: OwnerSessionInfo) -> Via:
    return Via(OWNER, owner.user_id, "settings", request_id(request) or None)


@owner_page
async def confirm_undo(request: Request, owner: OwnerSessionInfo) -> Response:
    db = account(request).services.db
    key_id = request.path_params["key_id"]
    key = await db.run(_key, user_id=owner.user_id, key_id=key_id, now=utcnow())
    choice = request.query_params.get("since") or DEFAULT_SINCE
    since = _since(choice, key)
    preview = await db.run(
        _preview, user_id=owner.user_id, key_id=key_id, since=since, now=utcnow()
    )
    return render(
        request,
        "key_undo.html",
        {
            **preview,
            "section": "keys",
            "choice": choice,
            "choices": [(v, label) for v, label, _ in SINCE_CHOICES] + [(EVER, "Ever")],
            "since": since,
        },
    )


@owner_page
async def undo_work(request: Request, owner: OwnerSessionInfo) -> Response:
    """Revoke the key (if asked) and begin the job; 303 to its page at once."""
    data = await form(request)
    key_id = request.path_params["key_id"]
    services = account(request).services
    # Its list of changes is written in one statement, off the loop (thousands of rows).
    job = await services.db.run_off_loop(
        _start,
        user_id=owner.user_id,
        key_id=key_id,
        since=str(data.get("since") or ""),
        revoke=data.get("revoke") == "yes",
        via=_via(request, owner),
        now=utcnow(),
    )
    services.undo_jobs.start(job["id"])
    return see_other(request, f"/keys/{key_id}/undo/{job['id']}")


@owner_page
async def undo_progress(request: Request, owner: OwnerSessionInfo) -> Response:
    page = await account(request).services.db.run(
        _job_page,
        user_id=owner.user_id,
        key_id=request.path_params["key_id"],
        job_id=request.path_params["job_id"],
        now=utcnow(),
    )
    job = page["job"]
    return render(
        request,
        "key_undone.html",
        {
            **page,
            "section": "keys",
            "running": job["state"] == undo_jobs.RUNNING,
            "refresh": REFRESH_SECONDS,
            "shown": SHOWN,
        },
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/keys/{key_id}/undo", confirm_undo, methods=["GET"]),
        Route("/keys/{key_id}/undo", undo_work, methods=["POST"]),
        Route("/keys/{key_id}/undo/{job_id}", undo_progress, methods=["GET"]),
        owner_post(
            "/keys/{key_id}/approval",
            keys.set_approval,
            fields=("approval",),
            back="/keys/{key_id}/calls",
            notice="approval-saved",
        ),
    ]
