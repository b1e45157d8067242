"""The ``calendar-service`` command: run the service and manage owners, calendars and keys.

Every command brings the schema up to date first. Commands that print data accept ``--json``
and then print exactly one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, TypeVar

import typer

from calendar_service import calendars as calendars_core
from calendar_service import history, keys, users
from calendar_service.cli_webhook import webhook_app, worker
from calendar_service.config import Config, parse_duration
from calendar_service.db import Database
from calendar_service.errors import CalendarError, FieldError, ValidationFailed
from calendar_service.logs import configure_logging
from calendar_service.migrate import upgrade
from calendar_service.timeutil import format_utc, parse_date_time, utcnow

T = TypeVar("T")

app = typer.Typer(
    name="calendar-service",
    help="A calendar service for machines: REST and MCP, scoped keys, signed webhooks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
users_app = typer.Typer(help="Owners (the people whose calendars these are).", no_args_is_help=True)
calendars_app = typer.Typer(help="An owner's calendars.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(calendars_app, name="calendars")
app.add_typer(keys_app, name="keys")
app.add_typer(webhook_app, name="webhook")

DEMO_PASSWORD = "demo-password"  # noqa: S105 - printed for the local demo owner only
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def open_database(config: Config | None = None) -> Database:
    """The configured database, migrated to the latest schema."""
    config = config or Config.from_env()
    db = Database(config)
    upgrade(db.engine)
    return db


def run(fn: Callable[..., T], /, **kwargs: Any) -> T:
    """Run a core function in one transaction, turning errors into a message and exit code."""
    db = open_database()
    try:
        return db.call(fn, **kwargs)
    finally:
        db.close()


def emit(data: dict[str, Any], as_json: bool, text: str | Callable[[], None]) -> None:
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False))
    elif callable(text):
        text()
    else:
        typer.echo(text)


def fail(exc: CalendarError) -> None:
    typer.echo(f"error: {exc.message}", err=True)
    for item in getattr(exc, "errors", []):
        typer.echo(f"  {item['field']}: {item['message']}", err=True)
    raise typer.Exit(2 if isinstance(exc, ValidationFailed) else 1)


# ---------------------------------------------------------------------------------------------
# serve / migrate


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Server processes.")] = 1,
    ssl_certfile: Annotated[str | None, typer.Option(help="TLS certificate (PEM).")] = None,
    ssl_keyfile: Annotated[str | None, typer.Option(help="TLS private key (PEM).")] = None,
    no_webhooks: Annotated[
        bool, typer.Option("--no-webhooks", help="Do not run the webhook delivery job.")
    ] = False,
    log_level: Annotated[
        str, typer.Option(help="Log level: debug, info, warning, error (CALENDAR_LOG_LEVEL).")
    ] = "info",
) -> None:
    """Run the HTTP service (REST, MCP, settings). Migrates the schema first."""
    import uvicorn

    # This process's logging, and (through the environment) each server process's, where the
    # app factory applies it: uvicorn installs none of its own (log_config=None).
    os.environ["CALENDAR_LOG_LEVEL"] = log_level
    configure_logging(log_level)
    try:
        config = Config.from_env()
        open_database(config).close()
    except CalendarError as exc:
        fail(exc)
    if no_webhooks:
        os.environ["CALENDAR_RUN_WEBHOOKS"] = "0"
    uvicorn.run(
        "calendar_service.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        log_level=log_level,
        log_config=None,
        access_log=False,  # access logs would carry query strings; call history covers it
        proxy_headers=False,
        server_header=False,
        loop="auto",
        http="auto",
    )


app.command()(worker)  # calendar_service.cli_webhook: the delivery job alone


@app.command()
def migrate() -> None:
    """Bring the database schema up to date (every command also does this)."""
    try:
        open_database().close()
    except CalendarError as exc:
        fail(exc)
    typer.echo("schema is up to date")


@app.command()
def mcp() -> None:
    """Serve the MCP tools over stdio, acting with the key in CALENDAR_API_KEY."""
    from mcp_tools import stdio

    configure_logging("warning")  # to stderr (stdout is the protocol's), warnings and errors
    db: Database | None = None
    try:
        config = Config.from_env()
        db = open_database(config)
        stdio.serve(config, db)
    except CalendarError as exc:
        fail(exc)
    finally:
        if db is not None:
            db.close()


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
    try:
        user = run(
            users.create_user, email=email, password=password, now=utcnow(), time_zone=time_zone
        )
    except CalendarError as exc:
        fail(exc)
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
    try:
        user = run(users.set_password, email=email, password=password)
    except CalendarError as exc:
        fail(exc)
    emit(user, as_json, f"password set for {user['email']}")


# ---------------------------------------------------------------------------------------------
# calendars


def _owner_id(conn: Any, email: str) -> str:
    return str(users.get_user_by_email(conn, email=email)["id"])


@calendars_app.command("create")
def calendars_create(
    user: Annotated[str, typer.Option("--user", help="Owner email.")],
    name: Annotated[str, typer.Option(help="Calendar name.")],
    time_zone: Annotated[str, typer.Option(help="IANA time zone.")] = "UTC",
    as_json: JsonFlag = False,
) -> None:
    """Create a calendar for an owner."""

    def work(conn: Any) -> dict[str, Any]:
        return calendars_core.create_calendar(
            conn, user_id=_owner_id(conn, user), name=name, time_zone=time_zone, now=utcnow()
        )

    try:
        cal = run(work)
    except CalendarError as exc:
        fail(exc)
    emit(cal, as_json, f"created calendar {cal['name']!r} ({cal['id']}, {cal['timeZone']})")


@calendars_app.command("list")
def calendars_list(
    user: Annotated[str, typer.Option("--user", help="Owner email.")],
    as_json: JsonFlag = False,
) -> None:
    """List an owner's calendars."""

    def work(conn: Any) -> list[dict[str, Any]]:
        rows = calendars_core.list_owner_calendars(conn, user_id=_owner_id(conn, user))
        return [calendars_core.calendar_public(r) for r in rows]

    try:
        cals = run(work)
    except CalendarError as exc:
        fail(exc)

    def text() -> None:
        for c in cals:
            mark = " (default)" if c["isDefault"] else ""
            typer.echo(f"{c['id']}  {c['name']}  {c['timeZone']}{mark}")

    emit({"calendars": cals}, as_json, text)


# ---------------------------------------------------------------------------------------------
# keys


def parse_expiry(expires_in: str | None, expires_at: str | None, now: datetime) -> datetime:
    if expires_in and expires_at:
        raise ValidationFailed([FieldError("expiresAt", "give --expires-in or --expires-at")])
    if expires_at:
        try:
            return parse_date_time(expires_at, tz=now.tzinfo)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ValidationFailed([FieldError("expiresAt", str(exc))]) from None
    try:
        return now + parse_duration(expires_in or "90d")
    except CalendarError:
        raise ValidationFailed(
            [FieldError("expiresIn", "must be a duration such as 12h, 30d or 52w")]
        ) from None


@keys_app.command("create")
def keys_create(
    user: Annotated[str, typer.Option("--user", help="Owner email.")],
    name: Annotated[str, typer.Option(help="What the key is for.")],
    permission: Annotated[str, typer.Option(help="read, or write (calendar:write).")] = "read",
    expires_in: Annotated[str | None, typer.Option(help="e.g. 30d (default 90d).")] = None,
    expires_at: Annotated[str | None, typer.Option(help="RFC 3339 date-time.")] = None,
    calendar: Annotated[str | None, typer.Option(help="Limit to this calendar id.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an API key. Its secret is printed once and never stored."""
    now = utcnow()

    def work(conn: Any) -> tuple[dict[str, Any], str]:
        expiry = parse_expiry(expires_in, expires_at, now)
        return keys.create_key(
            conn,
            user_id=_owner_id(conn, user),
            name=name,
            permission=permission,
            expires_at=expiry,
            calendar_id=calendar,
            now=now,
        )

    try:
        record, secret = run(work)
    except CalendarError as exc:
        fail(exc)
    data = {**record, "secret": secret}

    def text() -> None:
        scope = record["calendarId"] or "all calendars"
        typer.echo(
            f"created key {record['id']} ({record['permission']}, {scope}, "
            f"expires {record['expiresAt']})"
        )
        typer.echo(f"secret (shown once, store it now): {secret}")

    emit(data, as_json, text)


@keys_app.command("list")
def keys_list(
    user: Annotated[str, typer.Option("--user", help="Owner email.")],
    as_json: JsonFlag = False,
) -> None:
    """List an owner's keys (never their secrets)."""

    def work(conn: Any) -> list[dict[str, Any]]:
        return keys.list_keys(conn, user_id=_owner_id(conn, user), now=utcnow())

    try:
        items = run(work)
    except CalendarError as exc:
        fail(exc)

    def text() -> None:
        for k in items:
            scope = k["calendarId"] or "all"
            typer.echo(
                f"{k['id']}  {k['prefix']}…  {k['name']}  {k['permission']}  {scope}  "
                f"{k['state']}  expires {k['expiresAt']}"
            )

    emit({"keys": items}, as_json, text)


@keys_app.command("revoke")
def keys_revoke(key_id: str, as_json: JsonFlag = False) -> None:
    """Revoke a key: it is refused from the next request on."""
    try:
        record = run(keys.revoke_key, user_id=None, key_id=key_id, now=utcnow())
    except CalendarError as exc:
        fail(exc)
    emit(record, as_json, f"revoked {record['id']} at {record['revokedAt']}")


# ---------------------------------------------------------------------------------------------
# call history


@app.command()
def calls(
    key_id: str,
    status: Annotated[str | None, typer.Option(help="2xx, 3xx, 4xx or 5xx.")] = None,
    transport: Annotated[str | None, typer.Option(help="rest or mcp.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000)] = 100,
    as_json: JsonFlag = False,
) -> None:
    """A key's call history, newest first."""

    def work(conn: Any) -> list[dict[str, Any]]:
        keys.get_key(conn, user_id=None, key_id=key_id)
        return history.list_calls(
            conn, key_id=key_id, status_class=status, transport=transport, limit=limit
        )

    try:
        items = run(work)
    except CalendarError as exc:
        fail(exc)

    def text() -> None:
        for c in items:
            typer.echo(
                f"{c['at']}  {c['transport']:<4}  {c['status']}  {c['method']:<6} "
                f"{c['path']}  {c['operation']}  {c['latencyMs']:.1f} ms"
            )

    emit({"calls": items}, as_json, text)


# ---------------------------------------------------------------------------------------------
# demo


@app.command()
def demo(
    email: Annotated[str, typer.Option(help="Demo owner email.")] = "demo@example.com",
    as_json: JsonFlag = False,
) -> None:
    """Make sure a demo owner exists and print a fresh read-and-write key for it."""
    now = utcnow()

    def work(conn: Any) -> dict[str, Any]:
        try:
            owner = users.get_user_by_email(conn, email=email)
            user_id = owner["id"]
        except CalendarError:
            user_id = users.create_user(conn, email=email, password=DEMO_PASSWORD, now=now)["id"]
        record, secret = keys.create_key(
            conn,
            user_id=user_id,
            name=f"demo key {format_utc(now)}",
            permission="write",
            expires_at=now + timedelta(days=30),
            calendar_id=None,
            now=now,
        )
        return {"email": email, "password": DEMO_PASSWORD, "key": record, "secret": secret}

    try:
        data = run(work)
    except CalendarError as exc:
        fail(exc)
    base = Config.from_env().base_url

    def text() -> None:
        typer.echo(
            f"demo owner: {data['email']} (password: {data['password']}, "
            f"settings at {base}/settings)"
        )
        typer.echo(f"demo key (read and write, 30 days): {data['secret']}")
        typer.echo(
            f"try: curl -H 'Authorization: Bearer {data['secret']}' {base}/api/v1/calendar/events"
        )

    emit(data, as_json, text)


def main() -> None:
    try:
        app()
    except CalendarError as exc:  # pragma: no cover - commands handle their own
        typer.echo(f"error: {exc.message}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
