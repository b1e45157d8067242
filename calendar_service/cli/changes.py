"""``changes list`` and ``changes undo``: the change log, and taking changes back, as the owner.

The owner acts in person here (``keys.owner_principal``): an undo is a change whose actor is
the owner and whose transport is ``cli``. ``--dry-run`` runs the undo and rolls it back
(``db.rolled_back``), to show what it would do. Undoing a key's work (``--key``) is an undo
job (``governance.undo_jobs``), run here to its end a batch (a short transaction) at a time, its
progress on standard error; a job the command did not finish (killed) is finished by the
service (``background.UndoJobs``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from calendar_service.cli.common import JsonFlag, UserOption, emit, owner_id, run, usage
from calendar_service.cli.owners import check_key_id
from calendar_service.platform.timeutil import utcnow

if TYPE_CHECKING:
    from calendar_service.platform.db import Database

changes_app = typer.Typer(
    help="The change log: every change to an event, who made it; undo.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

KeyOption = Annotated[
    str | None, typer.Option("--key", help="Only the changes this key (key_…) or app made.")
]
SinceOption = Annotated[
    str | None,
    typer.Option(help="Only changes made at or after this RFC 3339 date-time or date (UTC)."),
]
BeforeOption = Annotated[
    str | None,
    typer.Option(
        help="Only changes made before this RFC 3339 date-time or date (UTC: a date is its "
        "midnight, so --before 2026-11-21 keeps 20 November and earlier)."
    ),
]


def _line(change: dict[str, Any]) -> str:
    actor = change["actor"]
    undone = f"  undone by {change['undoneBy']}" if "undoneBy" in change else ""
    return (
        f"{change['at']}  {change['id']}  {change['kind']:<7}  {change['eventId']}  "
        f"{actor['type']} {actor['name']} ({change['transport']}){undone}"
    )


@changes_app.command("list")
def changes_list(
    user: UserOption,
    key: KeyOption = None,
    since: SinceOption = None,
    before: BeforeOption = None,
    event: Annotated[
        str | None, typer.Option(help="Only this event's (a series': with its occurrences').")
    ] = None,
    calendar: Annotated[str | None, typer.Option(help="Only this calendar's (its id).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=2500)] = 250,
    as_json: JsonFlag = False,
) -> None:
    """The owner's changes, newest first: what each did, who made it and through what."""
    from calendar_service.access import keys
    from calendar_service.governance.change_list import list_changes

    key = None if key is None else check_key_id(key)

    def work(conn: Any) -> dict[str, Any]:
        principal = keys.owner_principal(owner_id(conn, user))
        if key is not None:
            keys.get_key(conn, user_id=principal.user_id, key_id=key)  # 404: not theirs
        return list_changes(
            conn,
            principal=principal,
            since=since,
            before=before,
            event_id=event,
            calendar_id=calendar,
            actor_id=key,
            limit=limit,
        )

    found = run(work)

    def text() -> None:
        for change in found["changes"]:
            typer.echo(_line(change))

    emit({"changes": found["changes"]}, as_json, text)


@changes_app.command("undo")
def changes_undo(
    change_id: Annotated[
        str | None, typer.Argument(help="The change to undo (chg_…); or --key and --since.")
    ] = None,
    key: KeyOption = None,
    since: SinceOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Undo even if the event changed since (one change).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be undone; change nothing.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Undo one change (its id), or every change a key or connected app made since a time
    (--key and --since), newest first; what cannot be undone is listed with its reason."""
    from calendar_service.access import keys
    from calendar_service.governance import undo_jobs
    from calendar_service.governance.change_list import owner_of
    from calendar_service.governance.undo import undo_change, undo_changes_of
    from calendar_service.journal.change_record import Via
    from calendar_service.journal.change_table import OWNER
    from calendar_service.platform.db import rolled_back

    if (change_id is None) == (key is None):
        _usage("give a change id, or --key KEY_ID with --since")
    if key is not None and since is None:
        _usage("--key needs --since: undo what the key did since when?")
    if key is not None and force:
        _usage("--force undoes one change at a time: give its id")

    def work(conn: Any) -> dict[str, Any]:
        now = utcnow()
        if change_id is not None:
            owner = owner_of(conn, change_id=change_id)
            principal = keys.owner_principal(owner)
            via = Via(OWNER, owner, "cli")
            with _maybe_rolled_back(conn, dry_run):
                return undo_change(
                    conn, principal=principal, change_id=change_id, now=now, force=force, via=via
                )
        assert key is not None and since is not None
        owner = str(keys.get_key(conn, user_id=None, key_id=check_key_id(key))["user_id"])
        if not dry_run:  # the job, begun here and run below a batch at a time
            return undo_jobs.start_undo_job(
                conn,
                user_id=owner,
                key_id=key,
                since=since,
                revoke=False,
                via=Via(OWNER, owner, "cli"),
                now=now,
            )
        with rolled_back(conn):  # one transaction, undone: what the job would do
            return undo_changes_of(
                conn,
                principal=keys.owner_principal(owner),
                key_id=key,
                since=since,
                now=now,
                via=Via(OWNER, owner, "cli"),
            )

    result = run(work)
    if key is not None and not dry_run:
        result = _run_job(result)
    if dry_run:
        result = {"dryRun": True, **result}

    def text() -> None:
        would = "would undo" if dry_run else "undid"
        if change_id is not None:
            typer.echo(f"{would} {change_id}: {_line(result)}")
            return
        typer.echo(f"{would} {len(result['undone'])}, refused {len(result['refused'])}")
        for change in result["undone"]:
            typer.echo(f"  undone   {_line(change)}")
        for item in result["refused"]:
            typer.echo(f"  refused  {_line(item['change'])}: {item['reason']}")

    emit(result, as_json, text)


def _run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run the undo job ``job`` (just begun) to its end, a batch (a transaction) at a time, its
    progress on standard error; what it undid and refused, as ``undo_changes_of`` says it."""
    from calendar_service.cli.common import open_database
    from calendar_service.governance import undo_jobs

    def progress(job: dict[str, Any]) -> None:
        typer.echo(
            f"{job['done']}/{job['total']} handled: {job['undone']} undone, "
            f"{job['refused']} refused",
            err=True,
        )

    db = open_database()
    try:
        progress(job)
        done = _run_to_end(db, job["id"], on_batch=progress)
        results = {
            outcome: db.call(
                undo_jobs.undo_job_results,
                user_id=done["userId"],
                job_id=done["id"],
                outcome=outcome,
            )
            for outcome in (undo_jobs.UNDONE, undo_jobs.REFUSED)
        }
    finally:
        db.close()
    return {
        "undone": [r["change"] for r in results[undo_jobs.UNDONE]],
        "refused": results[undo_jobs.REFUSED],
    }


def _run_to_end(
    db: Database, job_id: str, *, on_batch: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """Run the job ``job_id`` to its end on this thread, a batch (a transaction) at a time (the
    CLI), calling ``on_batch(progress)`` after each; its last progress. A job another runner
    holds is waited for (its progress read again every second) until done or its lease runs
    out."""
    import time

    from calendar_service.governance import undo_jobs
    from calendar_service.governance import undo_runner as background
    from calendar_service.platform.ids import new_id

    runner = new_id("run")
    try:
        while True:
            job = db.call(undo_jobs.undo_job, user_id=None, job_id=job_id)
            if job["state"] != undo_jobs.RUNNING:
                return job
            if not db.call(undo_jobs.claim, job_id=job_id, runner=runner, now=utcnow()):
                time.sleep(1.0)
                continue
            progress = db.call(
                undo_jobs.undo_batch, job_id=job_id, runner=runner, size=undo_jobs.BATCH
            )
            if progress is not None:
                on_batch(progress)
            time.sleep(background.PAUSE_SECONDS)  # the service's writes take their turn
    finally:
        db.call(undo_jobs.release, runner=runner)


def _maybe_rolled_back(conn: Any, dry_run: bool) -> Any:
    from calendar_service.platform.db import rolled_back

    return rolled_back(conn) if dry_run else contextlib.nullcontext()


def _usage(message: str) -> None:
    usage(message)
