"""``users``, ``calendars``, ``keys`` and ``calls``: owners, their calendars, keys and history."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import typer

from calendar_service.cli.common import (
    JsonFlag,
    UserOption,
    emit,
    open_database,
    owner_check,
    owner_id,
    run,
    run_as,
    usage,
)
from calendar_service.platform.errors import (
    DefaultCalendarKept,
    FieldError,
    NotFound,
    ValidationFailed,
)
from calendar_service.platform.timeutil import utcnow

users_app = typer.Typer(
    help="Owners (the people whose calendars these are).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
calendars_app = typer.Typer(
    help="An owner's calendars.", no_args_is_help=True, rich_markup_mode=None
)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True, rich_markup_mode=None)


def _emit_list(
    name: str, items: list[dict[str, Any]], as_json: bool, line: Callable[[dict[str, Any]], str]
) -> None:
    """A list command's output: ``{name: items}`` with ``--json``, else one line per item."""

    def text() -> None:
        for item in items:
            typer.echo(line(item))

    emit({name: items}, as_json, text)


# ---------------------------------------------------------------------------------------------
# users


@users_app.command("create")
def users_create(
    email: str,
    password: Annotated[str | None, typer.Option(help="Sign-in password (8+ characters).")] = None,
    time_zone: Annotated[str, typer.Option(help="Time zone of the default calendar.")] = "UTC",
    as_json: JsonFlag = False,
) -> None:
    """Create an owner, with their default calendar 'Личное'."""
    from calendar_service.calendar import calendars as calendars_core

    user = run(
        calendars_core.create_owner,
        email=email,
        password=password,
        now=utcnow(),
        time_zone=time_zone,
    )
    emit(
        user,
        as_json,
        f"created owner {user['email']} ({user['id']}), "
        f"default calendar {user['defaultCalendarId']}",
    )


@users_app.command("set-password")
def users_set_password(
    email: str,
    password: Annotated[str, typer.Option(prompt=True, hide_input=True, confirmation_prompt=True)],
    as_json: JsonFlag = False,
) -> None:
    """Set an owner's sign-in password."""
    from calendar_service.access import owners as users

    user = run(users.set_password, email=email, password=password)
    emit(user, as_json, f"password set for {user['email']}")


# ---------------------------------------------------------------------------------------------
# calendars


@calendars_app.command("create")
def calendars_create(
    user: UserOption,
    name: Annotated[str, typer.Option(help="Calendar name.")],
    time_zone: Annotated[str, typer.Option(help="IANA time zone.")] = "UTC",
    color: Annotated[str | None, typer.Option(help="Colour as #rrggbb, e.g. #1a73e8.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a calendar for an owner."""
    from calendar_service.calendar import calendars as calendars_core

    cal = run_as(
        user,
        calendars_core.create_calendar,
        name=name,
        time_zone=time_zone,
        color=color,
        now=utcnow(),
    )
    emit(cal, as_json, f"created calendar {cal['name']!r} ({cal['id']}, {cal['timeZone']})")


@calendars_app.command("list")
def calendars_list(
    user: UserOption,
    as_json: JsonFlag = False,
) -> None:
    """List an owner's calendars."""
    from calendar_service.calendar import calendars as calendars_core

    def work(conn: Any) -> list[dict[str, Any]]:
        rows = calendars_core.list_owner_calendars(conn, user_id=owner_id(conn, user))
        return [calendars_core.calendar_public(r) for r in rows]

    def line(c: dict[str, Any]) -> str:
        mark = " (default)" if c["isDefault"] else ""
        return f"{c['id']}  {c['name']}  {c['timeZone']}{mark}"

    _emit_list("calendars", run(work), as_json, line)


def _calendar_line(c: dict[str, Any]) -> str:
    color = f", {c['color']}" if c.get("color") else ""
    return f"calendar {c['id']}: {c['name']!r}, {c['timeZone']}{color}"


@calendars_app.command("update")
def calendars_update(
    calendar_id: Annotated[str, typer.Argument(metavar="CALENDAR_ID")],
    name: Annotated[str | None, typer.Option(help="New name.")] = None,
    time_zone: Annotated[
        str | None,
        typer.Option(
            help="New IANA time zone: timed events keep their instants, all-day events "
            "their dates (docs/settings.md)."
        ),
    ] = None,
    color: Annotated[str | None, typer.Option(help='New colour as #rrggbb; "" for none.')] = None,
    user: Annotated[str | None, owner_check("another owner's calendar")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Rename a calendar, change its time zone or its colour."""
    from calendar_service.calendar import calendar_edits as calendar_changes

    def work(conn: Any) -> dict[str, Any]:
        return calendar_changes.update_calendar(
            conn,
            user_id=owner_id(conn, user) if user is not None else None,
            calendar_id=calendar_id,
            name=name,
            time_zone=time_zone,
            color=color,
            now=utcnow(),
        )

    cal = run(work)
    emit(cal, as_json, _calendar_line(cal))


def _counted(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _deletes(found: dict[str, Any]) -> str:
    """What deleting the calendar ``found`` takes with it, in words."""
    return (
        f"its {_counted(found['events'], 'event', 'events')} (a series counts once) and revokes "
        f"its {_counted(found['feeds'], 'feed', 'feeds')} and the "
        f"{_counted(found['keys'], 'key', 'keys')} limited to it"
    )


@calendars_app.command("delete")
def calendars_delete(
    calendar_id: Annotated[str, typer.Argument(metavar="CALENDAR_ID")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    user: Annotated[str | None, owner_check("another owner's calendar")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Delete a calendar with its events; its feeds and one-calendar keys are revoked.

    Never the default calendar. Asks first unless --yes (which is needed without a terminal).
    """
    from calendar_service.calendar import calendar_edits as calendar_changes

    db = open_database()
    try:

        def contents(conn: Any) -> tuple[str | None, dict[str, Any]]:
            owner = owner_id(conn, user) if user is not None else None
            found = calendar_changes.calendar_contents(conn, user_id=owner, calendar_id=calendar_id)
            return owner, found

        owner, found = db.call(contents)
        if found["isDefault"]:
            raise DefaultCalendarKept()
        if not yes:
            what = f"Deleting calendar {found['name']!r} ({found['id']}) deletes {_deletes(found)}."
            if not sys.stdin.isatty():
                message = f"{what} Nothing was deleted: run it again with --yes to confirm."
                needed = "without a terminal to ask on, --yes confirms the deletion"
                raise ValidationFailed([FieldError("--yes", needed)], message)
            if not typer.confirm(f"{what} Delete it?"):
                raise typer.Exit(1)
        events_gone = 0
        while True:
            step = db.call(
                calendar_changes.delete_calendar_step,
                user_id=owner,
                calendar_id=calendar_id,
                now=utcnow(),
            )
            events_gone += step["deletedEvents"]
            if step["done"]:
                break
    finally:
        db.close()
    done = {
        **step["calendar"],
        "deletedEvents": events_gone,
        "revokedKeys": found["keys"],
        "revokedFeeds": found["feeds"],
    }
    emit(
        done,
        as_json,
        f"deleted calendar {done['id']} ({done['name']!r}): {events_gone} events; "
        f"{found['keys']} keys and {found['feeds']} feeds revoked",
    )


# ---------------------------------------------------------------------------------------------
# keys


def _from_now(at: datetime, now: datetime) -> str:
    """``in 30 days``, ``in 12 hours``, ``in 45 minutes``: how far off ``at`` is, rounded."""
    minutes = round((at - now).total_seconds() / 60)
    if minutes >= 2 * 1440:
        count, unit = round(minutes / 1440), "day"
    elif minutes >= 120:
        count, unit = round(minutes / 60), "hour"
    else:
        count, unit = minutes, "minute"
    return f"in {count} {unit}{'' if count == 1 else 's'}"


ApprovalOption = Annotated[
    str,
    typer.Option(
        help="Which of its writes wait for your approval (proposals approve|reject): none, "
        "destructive (updates and deletes; creates go through) or all."
    ),
]


@keys_app.command("create")
def keys_create(
    user: UserOption,
    name: Annotated[str, typer.Option(help="What the key is for.")],
    permission: Annotated[
        str,
        typer.Option(
            help="read, write (calendar:write), or freebusy (only queryFreeBusy and "
            "findFreeTime: busy times, never titles)."
        ),
    ] = "read",
    expires_in: Annotated[
        str | None,
        typer.Option(
            help="Lifetime: a number and min, h, d or w (90min, 12h, 30d, 2w). Default 90d."
        ),
    ] = None,
    expires_at: Annotated[
        str | None,
        typer.Option(
            help="A date (2027-01-01: the key works through that day, UTC) or an RFC 3339 "
            "date-time."
        ),
    ] = None,
    allow_short_expiry: Annotated[
        bool,
        typer.Option("--allow-short-expiry", help="Allow a key that expires within the hour."),
    ] = False,
    calendar: Annotated[str | None, typer.Option(help="Limit to this calendar id.")] = None,
    approval: ApprovalOption = "none",  # keys.APPROVAL_NONE (imported when a command runs)
    may_invite: Annotated[
        bool,
        typer.Option(
            "--may-invite",
            help="Let it send email invitations (sendUpdates=all) to the attendees of the "
            "events it writes, at most CALENDAR_INVITES_PER_DAY recipients a day.",
        ),
    ] = False,
    app_password: Annotated[
        bool,
        typer.Option(
            "--app-password",
            help="An app password: a calendar app (Apple Calendar, DAVx5, Thunderbird) signs "
            "in over CalDAV with your email and this secret.",
        ),
    ] = False,
    rules: Annotated[
        str,
        typer.Option(
            help="Whether your rules for agents (rules show|set) bind its writes: bound "
            "(default) or exempt."
        ),
    ] = "bound",
    as_json: JsonFlag = False,
) -> None:
    """Create an API key. Its secret is printed once and never stored."""
    from calendar_service.access import keys

    now = utcnow()

    def work(conn: Any) -> tuple[dict[str, Any], str]:
        expiry = keys.key_expiry(
            now=now,
            expires_in=expires_in,
            expires_at=expires_at,
            allow_short=allow_short_expiry,
            to_allow_short="add --allow-short-expiry if you mean a key that short-lived",
        )
        return keys.create_key(
            conn,
            user_id=owner_id(conn, user),
            name=name,
            permission=permission,
            expires_at=expiry,
            calendar_id=calendar,
            now=now,
            approval=approval,
            may_invite=may_invite,
            app_password=app_password,
            rules=rules,
        )

    record, secret = run(work)
    data = {**record, "secret": secret}

    def text() -> None:
        scope = record["calendarId"] or "all calendars"
        expires = datetime.fromisoformat(record["expiresAt"].replace("Z", "+00:00"))
        waits = "" if approval == keys.APPROVAL_NONE else f", {approval} writes wait for you"
        if may_invite:
            waits += ", may send invitations"
        if record["rules"] == keys.RULES_EXEMPT:
            waits += ", exempt from your rules"
        typer.echo(
            f"created key {record['id']} ({record['permission']}, {scope}, "
            f"expires {record['expiresAt']}, {_from_now(expires, now)}{waits})"
        )
        typer.echo(f"secret (shown once, store it now): {secret}")
        if app_password:
            typer.echo(
                "app password: sign a calendar app in with your email and this secret at "
                "the service's address (CalDAV)"
            )

    emit(data, as_json, text)


@keys_app.command("list")
def keys_list(
    user: UserOption,
    as_json: JsonFlag = False,
) -> None:
    """List an owner's keys (never their secrets)."""
    from calendar_service.access import keys

    items = run_as(user, keys.list_keys, now=utcnow())

    def line(k: dict[str, Any]) -> str:
        scope = k["calendarId"] or "all"
        prefix = "(connected app)" if k["kind"] == "app" else f"{k['prefix']}…"
        used = f"last used {k['lastUsedAt']}" if k["lastUsedAt"] else "never used"
        waits = "" if k["approval"] == keys.APPROVAL_NONE else f"  {k['approval']} writes wait"
        if k["rules"] == keys.RULES_EXEMPT:
            waits += "  exempt from rules"
        return (
            f"{k['id']}  {prefix}  {k['name']}  {k['permission']}  {scope}  "
            f"{k['state']}  expires {k['expiresAt']}  {used}{waits}"
        )

    _emit_list("keys", items, as_json, line)


def check_key_id(value: str) -> str:
    """``value`` as a key id; a secret (or its prefix) given instead is refused without being
    repeated: it goes nowhere, not even into the error message."""
    from calendar_service.access.keys import SECRET_PREFIX

    if value.strip().startswith(SECRET_PREFIX):
        usage(
            "that is a secret (or its prefix), not a key id: the id looks like key_…, "
            "and 'calendar-service keys list --user EMAIL' shows each key's id"
        )
    return value.strip()


@keys_app.command("update")
def keys_update(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…), not its secret.")],
    user: UserOption,
    approval: ApprovalOption,
    as_json: JsonFlag = False,
) -> None:
    """Change which of a key's (or connected app's) writes wait for your approval, from its
    next request on."""
    from calendar_service.access import keys

    key_id = check_key_id(key_id)
    record = run_as(user, keys.set_approval, key_id=key_id, approval=approval, now=utcnow())
    emit(record, as_json, f"key {record['id']}: approval {record['approval']}")


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…), not its secret.")],
    user: Annotated[str | None, owner_check("a key of anyone else")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke a key: it is refused from the next request on."""
    from calendar_service.access import keys

    key_id = check_key_id(key_id)

    def work(conn: Any) -> dict[str, Any]:
        owner = None if user is None else owner_id(conn, user)
        try:
            return keys.revoke_key(conn, user_id=owner, key_id=key_id, now=utcnow())
        except NotFound:
            if user is None:
                raise
            raise NotFound(
                f"{user} has no API key {key_id!r}; 'keys list --user {user}' shows theirs."
            ) from None

    record = run(work)
    emit(record, as_json, f"revoked {record['id']} at {record['revokedAt']}")


# ---------------------------------------------------------------------------------------------
# call history


def calls(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…), not its secret.")],
    status: Annotated[str | None, typer.Option(help="2xx, 3xx, 4xx or 5xx.")] = None,
    transport: Annotated[str | None, typer.Option(help="rest or mcp.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000)] = 100,
    as_json: JsonFlag = False,
) -> None:
    """A key's call history, newest first."""
    from calendar_service.access import call_history as history
    from calendar_service.access import keys

    key_id = check_key_id(key_id)

    def work(conn: Any) -> list[dict[str, Any]]:
        keys.get_key(conn, user_id=None, key_id=key_id)
        return history.list_calls(
            conn, key_id=key_id, status_class=status, transport=transport, limit=limit
        )

    def line(c: dict[str, Any]) -> str:
        return (
            f"{c['at']}  {c['transport']:<4}  {c['status']}  {c['method']:<6} "
            f"{c['path']}  {c['operation']}  {c['latencyMs']:.1f} ms"
        )

    _emit_list("calls", run(work), as_json, line)
