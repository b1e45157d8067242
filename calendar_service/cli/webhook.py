"""``calendar-service webhook …`` (the owner's webhook) and ``calendar-service worker``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from calendar_service.cli.common import (
    JsonFlag,
    UserOption,
    emit,
    open_database,
    owner_id,
    run,
    run_as,
    usage,
)
from calendar_service.platform.config import Config
from calendar_service.platform.timeutil import utcnow

webhook_app = typer.Typer(
    help="The owner's webhook: signed notifications of every event change.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help, as the app's
)


def _print_triggers(endpoint: dict[str, Any]) -> None:
    if endpoint.get("minutesBefore"):
        minutes = ", ".join(str(m) for m in endpoint["minutesBefore"])
        typer.echo(f"calendar.event.starting: {minutes} minutes before each start")
    if endpoint.get("ended"):
        typer.echo("calendar.event.ended: when each event ends")


def _print_secret(endpoint: dict[str, Any], secret: str) -> None:
    typer.echo(f"signing secret (shown once, store it now): {secret}")
    if endpoint.get("previousSecretExpiresAt"):
        typer.echo(
            f"the previous secret keeps signing too until {endpoint['previousSecretExpiresAt']}"
        )


@webhook_app.command("set")
def webhook_set(
    user: UserOption,
    url: Annotated[str, typer.Option(help="Public https:// address that receives the events.")],
    minutes_before: Annotated[
        str | None,
        typer.Option(
            "--minutes-before",
            help="Also send calendar.event.starting this many minutes before each event and "
            "occurrence starts, e.g. 15,60 (0 to 10080, at most 10); 'none': no more.",
        ),
    ] = None,
    ended: Annotated[
        bool | None,
        typer.Option(
            "--ended/--no-ended", help="Also send calendar.event.ended when each event ends."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Set the owner's webhook URL and print its new signing secret (shown once).

    The URL must be https:// and resolve only to public addresses (unless
    CALENDAR_WEBHOOK_ALLOW_LOCAL=1). Setting it again issues a new secret; the old one keeps
    signing beside it for 24 hours. Its time triggers stay as they were unless
    --minutes-before or --ended says otherwise."""
    from calendar_service.delivery import webhook_settings as webhook_config
    from calendar_service.delivery import webhook_targets
    from calendar_service.delivery.triggers.kinds import parse_offsets

    config = Config.from_env()
    target = webhook_targets.check_endpoint_url(
        url, allow_local=config.webhook_allow_local, resolve=webhook_targets.system_resolve
    )

    def work(conn: Any) -> tuple[dict[str, Any], str]:
        user_id = owner_id(conn, user)
        endpoint, secret = webhook_config.set_endpoint(
            conn, user_id=user_id, target=target, now=utcnow()
        )
        if minutes_before is not None or ended is not None:
            offsets: Any = endpoint["minutesBefore"]
            if minutes_before is not None:
                wanted = minutes_before.strip().lower()
                offsets = None if wanted in ("", "none") else parse_offsets(minutes_before)
            endpoint = webhook_config.set_time_triggers(
                conn,
                user_id=user_id,
                minutes_before=offsets,
                ended=endpoint["ended"] if ended is None else ended,
                now=utcnow(),
            )
        return endpoint, secret

    endpoint, secret = run(work)

    def text() -> None:
        typer.echo(f"webhook set: {endpoint['url']} ({endpoint['id']})")
        _print_triggers(endpoint)
        _print_secret(endpoint, secret)

    emit({**endpoint, "secret": secret}, as_json, text)


@webhook_app.command("show")
def webhook_show(user: UserOption, as_json: JsonFlag = False) -> None:
    """Show the owner's webhook (never its secret)."""
    from calendar_service.delivery import webhook_settings as webhook_config

    endpoint = run_as(user, webhook_config.get_endpoint)

    def text() -> None:
        typer.echo(f"{endpoint['id']}  {endpoint['url']}  {endpoint['status']}")
        if endpoint["disabledReason"]:
            typer.echo(f"disabled: {endpoint['disabledReason']}")
        if endpoint["failingSince"]:
            typer.echo(f"failing since {endpoint['failingSince']}")
        if endpoint["previousSecretExpiresAt"]:
            typer.echo(f"previous secret signs until {endpoint['previousSecretExpiresAt']}")
        _print_triggers(endpoint)

    emit(endpoint, as_json, text)


@webhook_app.command("rotate")
def webhook_rotate(user: UserOption, as_json: JsonFlag = False) -> None:
    """Issue a new signing secret (shown once); the old one keeps signing for 24 hours."""
    from calendar_service.delivery import webhook_settings as webhook_config

    endpoint, secret = run_as(user, webhook_config.rotate_secret, now=utcnow())
    emit({**endpoint, "secret": secret}, as_json, lambda: _print_secret(endpoint, secret))


@webhook_app.command("enable")
def webhook_enable(
    user: UserOption,
    redeliver_failed: Annotated[
        bool, typer.Option("--redeliver-failed", help="Also re-send every failed delivery.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Enable a webhook that was disabled (after 410 Gone or days of failures)."""
    from calendar_service.delivery import webhook_settings as webhook_config

    endpoint = run_as(
        user, webhook_config.enable_endpoint, now=utcnow(), redeliver_failed=redeliver_failed
    )
    emit(
        endpoint,
        as_json,
        f"webhook enabled: {endpoint['url']}; {endpoint['redelivered']} failed deliveries re-sent",
    )


@webhook_app.command("deliveries")
def webhook_deliveries(
    user: UserOption,
    status: Annotated[
        str | None, typer.Option(help="pending, retrying, succeeded or failed.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
    delivery: Annotated[
        str | None, typer.Option("--id", help="Show one delivery with every attempt.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The webhook's deliveries, newest first (or one, with its attempts, with --id)."""
    from calendar_service.delivery import webhook_settings as webhook_config

    def work(conn: Any) -> dict[str, Any]:
        user_id = owner_id(conn, user)
        if delivery is not None:
            return webhook_config.get_delivery(conn, user_id=user_id, delivery_id=delivery)
        found = webhook_config.list_deliveries(conn, user_id=user_id, status=status, limit=limit)
        return {"deliveries": found}

    data = run(work)

    def text() -> None:
        for d in data.get("deliveries", [data]):
            code = d["lastStatusCode"] if d["lastStatusCode"] is not None else "-"
            typer.echo(
                f"{d['id']}  {d['createdAt']}  {d['eventType']:<24}  {d['status']:<9}  "
                f"attempts {d['attempts']}  last {code}  {d['lastError'] or ''}".rstrip()
            )
        for a in data.get("attemptLog", []):
            code = a["statusCode"] if a["statusCode"] is not None else "-"
            typer.echo(f"  {a['at']}  {code}  {a['durationMs']:.0f} ms  {a['error'] or ''}")

    emit(data, as_json, text)


@webhook_app.command("redeliver")
def webhook_redeliver(
    user: UserOption,
    delivery_id: Annotated[str | None, typer.Argument(help="The delivery (evt_…).")] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Re-send every failed one.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Send a delivery again (same webhook-id), or every failed one with --failed."""
    from calendar_service.delivery import webhook_settings as webhook_config

    if (delivery_id is None) == (not failed):
        usage("give a delivery id (evt_…) or --failed, not both")

    def work(conn: Any) -> dict[str, Any]:
        user_id = owner_id(conn, user)
        if delivery_id is None:
            count = webhook_config.redeliver_all_failed(conn, user_id=user_id, now=utcnow())
            return {"redelivered": count}
        found = webhook_config.redeliver(
            conn, user_id=user_id, delivery_id=delivery_id, now=utcnow()
        )
        return {**found, "redelivered": 1}

    data = run(work)
    emit(data, as_json, f"{data['redelivered']} deliveries queued to be sent again")


def worker(
    poll_interval: Annotated[
        float,
        typer.Option(
            min=0.05,
            help="Seconds between looks for new and due deliveries (on SQLite, changes "
            "committed by the servers reach the worker this way; on PostgreSQL they wake it "
            "at once, and the poll is the fallback).",
        ),
    ] = 0.25,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "info",
) -> None:
    """Run the webhook delivery job alone (no HTTP), until SIGINT or SIGTERM.

    For deployments with many server processes started with `serve --no-webhooks`; several
    workers may share one PostgreSQL database."""
    import asyncio

    from calendar_service.platform.logs import configure_logging

    configure_logging(
        log_level
    )  # the service's logging, as in serve (calendar_service.platform.logs)
    db = None
    try:
        config = Config.from_env()
        db = open_database(config)
        asyncio.run(_work_until_signalled(config, db, poll_interval))
    finally:
        if db is not None:
            db.close()


async def _work_until_signalled(config: Config, db: Any, poll_interval: float) -> None:
    import asyncio
    import logging
    import signal

    from webhooks.housekeeping import housekeeping_job
    from webhooks.scheduler import run_worker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    logging.getLogger("webhooks").info("webhook worker started")
    async with housekeeping_job(config, db):
        await run_worker(config, db, stop=stop, poll_interval=poll_interval)
