"""``calendar-service connections …``: the owner's connected calendars (docs/connections.md).

``add-ics`` and ``add-caldav`` check the URL against the SSRF rules, seal the secrets, and read
the new calendar once at once (so the answer says whether it works); ``sync`` reads one now;
``list`` shows each with its status (URLs masked, never a password); ``remove`` deletes the
connection and its secrets, and its copy a step at a time in this process (as ``visibility
busy`` its mirror: ``delivery.connection_removals``). The worker (``serve`` or ``worker``)
keeps them fresh.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from calendar_service.cli.common import JsonFlag, UserOption, emit, open_database, owner_id, usage
from calendar_service.platform.config import Config
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.timeutil import utcnow

if TYPE_CHECKING:
    from webhooks.connections import ConnectionPoller

T = TypeVar("T")

connections_app = typer.Typer(
    help="Calendars kept elsewhere (an iCalendar URL, a CalDAV account) that count as busy time.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

VisibilityOption = Annotated[
    str,
    typer.Option(
        "--visibility",
        help="busy (default): keys learn the times only; details: the events may be shown too.",
    ),
]


def _line(c: dict[str, Any]) -> str:
    synced = c["syncedAt"] or "never"
    error = f"  ({c['lastError']})" if c.get("lastError") else ""
    return (
        f"{c['id']}  {c['kind']:6}  {c['status']:8}  {c['events']:>6} events  synced {synced}"
        f"  {c['name']}  {c['url']}{error}"
    )


def _print(found: list[dict[str, Any]], as_json: bool) -> None:
    emit({"connections": found}, as_json, "\n".join(_line(c) for c in found) or "none")


def _poll_now(ids: list[str]) -> list[dict[str, Any]]:
    """Read the connections once in this process, then show them as they are now."""
    from calendar_service.delivery import connections as store

    async def work(poller: ConnectionPoller) -> list[dict[str, Any]]:
        for connection_id in ids:
            await poller.poll_now(connection_id)
        return [
            await poller.db.run(store.get_connection, user_id=None, connection_id=i) for i in ids
        ]

    return _with_poller(work)


def _remove_now() -> None:
    """Run the removals of mirrors (``delivery.connection_removals``) no live runner holds to
    their end in this process, a step at a time (a service running meanwhile takes none of
    them: this process holds them)."""
    _with_poller(lambda poller: poller.remove_mirrors())


def _with_poller(work: Callable[[ConnectionPoller], Coroutine[Any, Any, T]]) -> T:
    """``work`` with a connection poller of this process, on the configured database."""
    from webhooks.connections import ConnectionPoller

    config = Config.from_env()
    db = open_database(config)
    try:
        return asyncio.run(work(ConnectionPoller(db, config)))
    finally:
        db.close()


def _checked(url: str) -> tuple[Config, str]:
    """The configuration, and ``url`` checked as a connection's source."""
    from calendar_service.delivery import connections as store
    from calendar_service.delivery import webhook_targets

    config = Config.from_env()
    allow_local = config.webhook_allow_local
    return config, store.check_source_url(
        url, allow_local=allow_local, resolve=webhook_targets.system_resolve
    )


def _add(config: Config, user: str, add: Callable[..., Any], **fields: Any) -> Any:
    """``add`` (``add_ics`` or ``add_caldav``) for the owner ``user``, in one transaction, with
    the key that seals the connections' credentials."""
    from calendar_service.platform.sealed import sealing_key

    def work(conn: Any) -> Any:
        user_id = owner_id(conn, user)
        key = sealing_key(conn, configured=config.connection_key, now=utcnow())
        return add(conn, user_id=user_id, key=key, now=utcnow(), **fields)

    db = open_database(config)
    try:
        return db.call(work)
    finally:
        db.close()


@connections_app.command("add-ics")
def add_ics(
    user: UserOption,
    url: Annotated[str, typer.Option("--url", help="The calendar's iCalendar (.ics) address.")],
    name: Annotated[str | None, typer.Option("--name", help="Its name here.")] = None,
    visibility: VisibilityOption = "busy",
    as_json: JsonFlag = False,
) -> None:
    """Connect an iCalendar URL (Google's secret address, Outlook's published calendar,
    iCloud's public link, a holiday feed), read it once, and print it."""
    from calendar_service.delivery import connections as store

    config, checked = _checked(url)
    added = _add(config, user, store.add_ics, url=checked, name=name, visibility=visibility)
    _print(_poll_now([added["id"]]), as_json)


@connections_app.command("add-caldav")
def add_caldav(
    user: UserOption,
    url: Annotated[str, typer.Option("--url", help="The CalDAV server's base URL.")],
    username: Annotated[str, typer.Option("--username", help="The account's username.")],
    calendar: Annotated[
        list[str] | None,
        typer.Option("--calendar", help="A calendar to connect, by name (repeat; default: all)."),
    ] = None,
    password_file: Annotated[
        Path | None,
        typer.Option("--password-file", help="A file holding the app password (else stdin)."),
    ] = None,
    visibility: VisibilityOption = "busy",
    as_json: JsonFlag = False,
) -> None:
    """Connect calendars of a CalDAV account (iCloud, Fastmail, Nextcloud, Radicale): the app
    password is read from standard input or --password-file, the calendars found from the
    base URL, each connected one read once and printed."""
    from calendar_service.delivery import connections as store
    from webhooks.connections import discover_calendars

    config, checked = _checked(url)
    if password_file is not None:
        try:
            password = password_file.read_text(encoding="utf-8").strip("\r\n")
        except OSError as exc:
            usage(f"--password-file: cannot read it ({exc.strerror})")
    else:
        password = sys.stdin.readline().strip("\r\n")
    if not password:
        raise ValidationFailed(
            [FieldError("password", "give the app password on stdin or in --password-file")]
        )
    found = [
        store.Picked(*f)
        for f in asyncio.run(
            discover_calendars(
                checked,
                username=username,
                password=password,
                allow_local=config.webhook_allow_local,
            )
        )
    ]
    picked = found
    if calendar:
        by_name = {f.name: f for f in found}
        missing = [n for n in calendar if n not in by_name]
        if missing:
            names = ", ".join(repr(f.name) for f in found)
            raise ValidationFailed(
                [
                    FieldError(
                        "--calendar", f"no calendar {missing[0]!r} here; the account has {names}"
                    )
                ]
            )
        picked = [by_name[n] for n in dict.fromkeys(calendar)]
    added = _add(
        config,
        user,
        store.add_caldav,
        url=checked,
        username=username,
        password=password,
        calendars=picked,
        visibility=visibility,
    )
    _print(_poll_now([a["id"] for a in added]), as_json)


@connections_app.command("list")
def list_connections(user: UserOption, as_json: JsonFlag = False) -> None:
    """The owner's connected calendars: status, last sync, events (URLs masked)."""
    from calendar_service.cli.common import run
    from calendar_service.delivery import connections as store

    found = run(lambda conn: store.list_connections(conn, user_id=owner_id(conn, user)))
    _print(found, as_json)


@connections_app.command("sync")
def sync(
    connection_id: Annotated[str, typer.Argument(help="conn_…")], as_json: JsonFlag = False
) -> None:
    """Read a connected calendar now and print it."""
    from calendar_service.cli.common import run
    from calendar_service.delivery import connections as store

    run(
        lambda conn: store.request_sync(
            conn, user_id=None, connection_id=connection_id, now=utcnow()
        )
    )
    _remove_now()
    _print(_poll_now([connection_id]), as_json)


@connections_app.command("visibility")
def visibility(
    connection_id: Annotated[str, typer.Argument(help="conn_…")],
    shown: Annotated[str, typer.Argument(help="busy or details", metavar="busy|details")],
    as_json: JsonFlag = False,
) -> None:
    """Show a connected calendar's times only (busy) or its events too, read-only (details);
    details reads it whole at once."""
    from calendar_service.cli.common import run
    from calendar_service.delivery import connections as store

    run(
        lambda conn: store.set_visibility(
            conn, user_id=None, connection_id=connection_id, visibility=shown, now=utcnow()
        )
    )
    if shown == "busy":
        _remove_now()
    _print(_poll_now([connection_id]) if shown == "details" else _listed(connection_id), as_json)


def _listed(connection_id: str) -> list[dict[str, Any]]:
    from calendar_service.cli.common import run
    from calendar_service.delivery import connections as store

    return [run(lambda conn: store.get_connection(conn, user_id=None, connection_id=connection_id))]


@connections_app.command("remove")
def remove(
    connection_id: Annotated[str, typer.Argument(help="conn_…")], as_json: JsonFlag = False
) -> None:
    """Remove a connected calendar, its stored secret and its copy (hidden at once, then
    deleted a step at a time)."""
    from calendar_service.cli.common import run
    from calendar_service.delivery import connections as store
    from calendar_service.platform.timeutil import utcnow

    run(
        lambda conn: store.remove_connection(
            conn, user_id=None, connection_id=connection_id, now=utcnow()
        )
    )
    _remove_now()
    emit({"removed": connection_id}, as_json, f"removed {connection_id}")
