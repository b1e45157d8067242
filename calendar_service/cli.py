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
from calendar_service.config import Config, served_base_url
from calendar_service.db import Database
from calendar_service.errors import CalendarError, FieldError, NotFound, ValidationFailed
from calendar_service.logs import configure_logging
from calendar_service.migrate import upgrade
from calendar_service.timeutil import format_utc, utcnow

T = TypeVar("T")

app = typer.Typer(
    name="calendar-service",
    help="A calendar service for machines: REST and MCP, scoped keys, signed webhooks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
# rich_markup_mode=None: click's plain help. Typer's rich help shows a flag as ``--json <bool>``,
# as if it took a value.
users_app = typer.Typer(
    help="Owners (the people whose calendars these are).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
calendars_app = typer.Typer(
    help="An owner's calendars.", no_args_is_help=True, rich_markup_mode=None
)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(users_app, name="users")
app.add_typer(calendars_app, name="calendars")
app.add_typer(keys_app, name="keys")
app.add_typer(webhook_app, name="webhook")

DEMO_PASSWORD = "demo-password"  # noqa: S105 - printed for the local demo owner only
DEMO_KEY_NAME = "demo key"  # each ``demo`` run revokes the active keys so named
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


def base_url_for(host: str, port: int, *, tls: bool = False) -> str:
    """CALENDAR_BASE_URL if set, else the address ``serve --host HOST --port PORT`` answers on."""
    return (os.environ.get("CALENDAR_BASE_URL") or served_base_url(host, port, tls=tls)).rstrip("/")


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
    """Run the HTTP service (REST, MCP, settings). Migrates the schema first.

    Without CALENDAR_BASE_URL, links, Location headers, the OpenAPI servers and the MCP origin
    check use the address served: http(s)://HOST:PORT."""
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
    # Through the environment: uvicorn builds the app (Config.from_env) in each worker process.
    os.environ["CALENDAR_BASE_URL"] = base_url_for(host, port, tls=ssl_certfile is not None)
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
        stdio.check_database(config)  # before opening it: that would create an empty one
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


def key_expiry(
    expires_in: str | None, expires_at: str | None, *, now: datetime, allow_short: bool
) -> datetime:
    """When a new key expires: ``--expires-in`` (default 90d) from now, or ``--expires-at``, read
    by the core as the settings page reads its choices; under an hour only when asked for."""
    if expires_in and expires_at:
        raise ValidationFailed([FieldError("expiresAt", "give --expires-in or --expires-at")])
    if expires_at:
        field, at = "expiresAt", keys.parse_expires_at(expires_at)
    else:
        lifetime = keys.parse_expires_in(expires_in or keys.DEFAULT_LIFETIME)
        field, at = "expiresIn", (now + lifetime).replace(microsecond=0)
    if at <= now:
        raise ValidationFailed(
            [FieldError(field, f"must be in the future (it would expire at {format_utc(at)})")]
        )
    if at - now < keys.MIN_LIFETIME and not allow_short:
        raise ValidationFailed(
            [
                FieldError(
                    field,
                    f"is less than an hour from now ({format_utc(at)}); add "
                    "--allow-short-expiry if you mean a key that short-lived",
                )
            ]
        )
    return at


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


@keys_app.command("create")
def keys_create(
    user: Annotated[str, typer.Option("--user", help="Owner email.")],
    name: Annotated[str, typer.Option(help="What the key is for.")],
    permission: Annotated[str, typer.Option(help="read, or write (calendar:write).")] = "read",
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
    as_json: JsonFlag = False,
) -> None:
    """Create an API key. Its secret is printed once and never stored."""
    now = utcnow()

    def work(conn: Any) -> tuple[dict[str, Any], str]:
        expiry = key_expiry(expires_in, expires_at, now=now, allow_short=allow_short_expiry)
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
        expires = datetime.fromisoformat(record["expiresAt"].replace("Z", "+00:00"))
        typer.echo(
            f"created key {record['id']} ({record['permission']}, {scope}, "
            f"expires {record['expiresAt']}, {_from_now(expires, now)})"
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


def check_key_id(value: str) -> str:
    """``value`` as a key id; a secret (or its prefix) given instead is refused without being
    repeated: it goes nowhere, not even into the error message."""
    if value.strip().startswith(keys.SECRET_PREFIX):
        typer.echo(
            "error: that is a secret (or its prefix), not a key id: the id looks like key_…, "
            "and 'calendar-service keys list --user EMAIL' shows each key's id",
            err=True,
        )
        raise typer.Exit(2)
    return value.strip()


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…), not its secret.")],
    user: Annotated[
        str | None, typer.Option("--user", help="Owner email: refuse a key of anyone else.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke a key: it is refused from the next request on."""
    key_id = check_key_id(key_id)

    def work(conn: Any) -> dict[str, Any]:
        owner_id = None if user is None else _owner_id(conn, user)
        try:
            return keys.revoke_key(conn, user_id=owner_id, key_id=key_id, now=utcnow())
        except NotFound:
            if user is None:
                raise
            raise NotFound(
                f"{user} has no API key {key_id!r}; 'keys list --user {user}' shows theirs."
            ) from None

    try:
        record = run(work)
    except CalendarError as exc:
        fail(exc)
    emit(record, as_json, f"revoked {record['id']} at {record['revokedAt']}")


# ---------------------------------------------------------------------------------------------
# call history


@app.command()
def calls(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…), not its secret.")],
    status: Annotated[str | None, typer.Option(help="2xx, 3xx, 4xx or 5xx.")] = None,
    transport: Annotated[str | None, typer.Option(help="rest or mcp.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000)] = 100,
    as_json: JsonFlag = False,
) -> None:
    """A key's call history, newest first."""
    key_id = check_key_id(key_id)

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
    host: Annotated[str, typer.Option(help="The address serve will listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port serve will listen on.")] = 8000,
    as_json: JsonFlag = False,
) -> None:
    """Make sure a demo owner exists and print a fresh read-and-write key for it.

    Secrets are stored hashed, so an earlier demo key cannot be printed again: each run revokes
    the owner's earlier demo keys (named "demo key …") and issues a new one, so that one demo
    key at most is live. The owner's other keys are left alone."""
    now = utcnow()

    def work(conn: Any) -> dict[str, Any]:
        try:
            owner = users.get_user_by_email(conn, email=email)
            user_id = owner["id"]
        except CalendarError:
            user_id = users.create_user(conn, email=email, password=DEMO_PASSWORD, now=now)["id"]
        earlier = [
            k["id"]
            for k in keys.list_keys(conn, user_id=user_id, now=now)
            if k["state"] == "active" and k["name"].startswith(DEMO_KEY_NAME)
        ]
        for key_id in earlier:
            keys.revoke_key(conn, user_id=user_id, key_id=key_id, now=now)
        record, secret = keys.create_key(
            conn,
            user_id=user_id,
            name=f"{DEMO_KEY_NAME} {format_utc(now)}",
            permission="write",
            expires_at=now + timedelta(days=30),
            calendar_id=None,
            now=now,
        )
        return {
            "email": email,
            "password": DEMO_PASSWORD,
            "key": record,
            "secret": secret,
            "revokedKeys": earlier,
        }

    try:
        data = run(work)
    except CalendarError as exc:
        fail(exc)
    base = base_url_for(host, port)  # what `serve --host HOST --port PORT` will answer on

    def text() -> None:
        typer.echo(
            f"demo owner: {data['email']} (password: {data['password']}, "
            f"settings at {base}/settings)"
        )
        if data["revokedKeys"]:
            count = len(data["revokedKeys"])
            typer.echo(f"revoked {count} earlier demo key{'' if count == 1 else 's'}")
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
