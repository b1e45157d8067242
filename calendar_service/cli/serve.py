"""``serve``, ``migrate`` and ``mcp``: the commands that run the service."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from calendar_service.cli.common import open_database
from calendar_service.platform.config import Config, served_base_url
from calendar_service.platform.logs import configure_logging
from calendar_service.platform.timeutil import utcnow


def base_url_for(host: str, port: int, *, tls: bool = False) -> str:
    """CALENDAR_BASE_URL if set, else the address ``serve --host HOST --port PORT`` answers on."""
    return (os.environ.get("CALENDAR_BASE_URL") or served_base_url(host, port, tls=tls)).rstrip("/")


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
    check use the address served: http(s)://HOST:PORT. That address (or CALENDAR_BASE_URL) is
    recorded in the database, where the commands that print links (feeds create) find it."""
    import uvicorn

    from calendar_service.platform import served_address

    # This process's logging, and (through the environment) each server process's, where the
    # app factory applies it: uvicorn installs none of its own (log_config=None).
    os.environ["CALENDAR_LOG_LEVEL"] = log_level
    configure_logging(log_level)
    base_url = base_url_for(host, port, tls=ssl_certfile is not None)
    db = open_database(Config.from_env())
    try:  # for the commands that print links (feeds create), run later in other processes
        db.call(served_address.record, base_url=base_url, now=utcnow())
    finally:
        db.close()
    if no_webhooks:
        os.environ["CALENDAR_RUN_WEBHOOKS"] = "0"
    # Through the environment: uvicorn builds the app (Config.from_env) in each worker process.
    os.environ["CALENDAR_BASE_URL"] = base_url
    uvicorn.run(
        "calendar_service.cli.asgi_app:app_from_env",
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


def migrate() -> None:
    """Bring the database schema up to date (every command also does this)."""
    open_database().close()
    typer.echo("schema is up to date")


def mcp() -> None:
    """Serve the MCP tools over stdio, acting with the key in CALENDAR_API_KEY."""
    from mcp_tools import stdio

    configure_logging("warning")  # to stderr (stdout is the protocol's), warnings and errors
    db = None
    try:
        config = Config.from_env()
        stdio.check_database(config)  # before opening it: that would create an empty one
        db = open_database(config)
        stdio.serve(config, db)
    finally:
        if db is not None:
            db.close()
