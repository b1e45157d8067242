"""``feeds`` (a calendar's iCalendar subscription feeds) and ``import`` (an ``.ics`` file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from calendar_service.cli.common import (
    JsonFlag,
    UserOption,
    emit,
    owner_check,
    owner_id,
    run,
    run_as,
)
from calendar_service.platform.errors import FieldError, NotFound, ValidationFailed
from calendar_service.platform.timeutil import utcnow

feeds_app = typer.Typer(
    help="iCalendar subscription feeds: a calendar's events in Google Calendar, Apple "
    "Calendar or Outlook.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@feeds_app.command("create")
def feeds_create(
    user: UserOption,
    calendar: Annotated[str, typer.Option(help="The calendar's id (calendars list).")],
    as_json: JsonFlag = False,
) -> None:
    """Make a feed of a calendar. Its URL (the token in it is the secret) is printed once.

    The URL starts with CALENDAR_BASE_URL when set, else with the address 'serve' last
    served this database on; with neither, nothing is made and the error says so."""
    from calendar_service.interop.ical import feeds
    from calendar_service.platform import served_address

    configured = os.environ.get("CALENDAR_BASE_URL")

    def work(conn: Any) -> dict[str, Any]:
        base_url = served_address.link_base(conn, configured=configured)  # before making it
        return feeds.create_feed(
            conn, user_id=owner_id(conn, user), calendar_id=calendar, base_url=base_url,
            now=utcnow(),
        )  # fmt: skip

    feed = run(work)

    def text() -> None:
        typer.echo(f"created feed {feed['id']} of calendar {feed['calendar']!r}")
        typer.echo(f"url (shown once; subscribe to it in your calendar app): {feed['url']}")

    emit(feed, as_json, text)


@feeds_app.command("list")
def feeds_list(user: UserOption, as_json: JsonFlag = False) -> None:
    """List an owner's feeds (never their URLs: only the token's first characters)."""
    from calendar_service.interop.ical import feeds

    items = run_as(user, feeds.list_feeds)

    def text() -> None:
        for f in items:
            last = f["lastFetchedAt"] or "never fetched"
            typer.echo(
                f"{f['id']}  {f['prefix']}…  {f['calendar']}  {f['state']}  "
                f"{f['fetches']} fetches, last {last}"
            )

    emit({"feeds": items}, as_json, text)


def _owned(conn: Any, user: str | None) -> str | None:
    return None if user is None else owner_id(conn, user)


def _not_theirs(user: str | None, feed_id: str) -> NotFound:
    if user is None:
        return NotFound(f"No feed {feed_id!r}.")
    return NotFound(f"{user} has no feed {feed_id!r}; 'feeds list --user {user}' shows theirs.")


@feeds_app.command("revoke")
def feeds_revoke(
    feed_id: Annotated[str, typer.Argument(help="The feed's id (feed_…), not its URL.")],
    user: Annotated[str | None, owner_check("a feed of anyone else")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke a feed: its URL answers 404 from the next fetch on."""
    from calendar_service.interop.ical import feeds

    def work(conn: Any) -> dict[str, Any]:
        try:
            return feeds.revoke_feed(
                conn, user_id=_owned(conn, user), feed_id=feed_id.strip(), now=utcnow()
            )
        except NotFound:
            raise _not_theirs(user, feed_id) from None

    feed = run(work)
    emit(feed, as_json, f"revoked {feed['id']} at {feed['revokedAt']}")


@feeds_app.command("fetches")
def feeds_fetches(
    feed_id: Annotated[str, typer.Argument(help="The feed's id (feed_…).")],
    user: Annotated[str | None, typer.Option("--user", help="Owner email.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    as_json: JsonFlag = False,
) -> None:
    """A feed's fetch history, newest first."""
    from calendar_service.interop.ical import feeds

    def work(conn: Any) -> list[dict[str, Any]]:
        try:
            return feeds.list_fetches(
                conn, user_id=_owned(conn, user), feed_id=feed_id.strip(), limit=limit
            )
        except NotFound:
            raise _not_theirs(user, feed_id) from None

    items = run(work)

    def text() -> None:
        for f in items:
            typer.echo(
                f"{f['at']}  {f['status']}  {f['events']} events  {f['clientAddr'] or '-'}  "
                f"{f['userAgent'] or '-'}"
            )

    emit({"fetches": items}, as_json, text)


@feeds_app.command("reminder")
def feeds_reminder(
    user: UserOption,
    minutes: Annotated[
        str | None,
        typer.Option(
            "--minutes",
            help="Minutes before each event (0 to 40320) its feeds' alarm rings; 'none' "
            "for no alarm. Without it: show the current one.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The owner's default reminder, which every feed carries as an alarm (VALARM) on each
    event: calendar apps subscribed to a feed alert that long before it starts."""
    from calendar_service.calendar import reminders

    def work(conn: Any) -> int | None:
        user_id = owner_id(conn, user)
        if minutes is None:
            return reminders.get_reminder(conn, user_id=user_id)
        wanted = None if minutes.strip().lower() in ("none", "") else minutes
        return reminders.set_reminder(conn, user_id=user_id, minutes_before=wanted, now=utcnow())

    found = run(work)
    shown = "no default reminder" if found is None else f"{found} minutes before each event"
    emit({"minutesBefore": found}, as_json, f"feeds' reminder: {shown}")


def import_file(
    file: Annotated[
        Path,
        typer.Argument(
            help="The .ics file (as Google Calendar, Apple Calendar or Outlook export it)."
        ),
    ],
    user: UserOption,
    calendar: Annotated[str, typer.Option(help="The calendar's id (calendars list).")],
    as_json: JsonFlag = False,
) -> None:
    """Import an .ics file's events into a calendar. Idempotent by UID: importing the same file
    again changes nothing; what could not be imported, or only in part, is listed."""
    from calendar_service.access.keys import owner_principal
    from calendar_service.interop.ical.importing import import_events
    from calendar_service.interop.ical.reading import MAX_BYTES

    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        problem = f"cannot read {file}: {exc.strerror or exc}"
        raise ValidationFailed([FieldError("file", problem)], "The file cannot be read.") from None

    def work(conn: Any) -> dict[str, Any]:
        principal = owner_principal(owner_id(conn, user))
        return import_events(
            conn, principal=principal, data=data, now=utcnow(), calendar_id=calendar,
            field_name="file",
        )  # fmt: skip

    report = run(work)

    def text() -> None:
        typer.echo(
            f"imported {file.name}: {report['created']} created, {report['updated']} updated, "
            f"{report['skipped']} unchanged, {len(report['errors'])} not imported"
        )
        for item in report["errors"]:
            typer.echo(f"  not imported {item['uid'] or ''}: {item['message']}")
        for item in report["warnings"]:
            typer.echo(f"  note {item['uid'] or '(file)'}: {item['message']}")

    emit(report, as_json, text)
