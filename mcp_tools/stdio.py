"""The local transport: ``calendar-service mcp`` speaks MCP over stdin/stdout.

It acts with one key, the one in ``CALENDAR_API_KEY``, checked at start (a missing or refused key
stops it with a message saying why; an unknown one, with the database it was looked up in) and
again on every tool call through ``gateway.perform``, so a key revoked or expired while the
assistant runs is refused from its next call. Calls are recorded
in the key's history with transport ``mcp``, method ``STDIO`` and path ``stdio``.

stdout carries only the protocol: nothing here prints, and logs go to stderr.
"""

from __future__ import annotations

import time

import anyio
from mcp.server.mcpserver import Context
from sqlalchemy import make_url

from calendar_service import __version__
from calendar_service.access.keys import Principal
from calendar_service.access.ratelimit import RateLimiter
from calendar_service.operations.gateway import CallContext, authenticate
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database, sqlite_path
from calendar_service.platform.errors import AuthError, ConfigError, UnknownKey
from calendar_service.platform.ids import new_id
from mcp_tools.server import Backend, Caller, CallerOf, build_server

KEY_VARIABLE = "CALENDAR_API_KEY"
DATABASE_VARIABLE = "CALENDAR_DATABASE_URL"


def database_name(config: Config) -> str:
    """The database ``config`` opens, as a person can find it: a SQLite file's absolute path,
    or the URL without its password."""
    path = sqlite_path(config)
    if path is not None:
        return str(path.resolve())
    return make_url(config.database_url).render_as_string(hide_password=True)


def check_database(config: Config) -> None:
    """Refuse a SQLite file that does not exist, rather than create an empty one (which holds no
    key) in whatever directory the MCP client started the command in."""
    path = sqlite_path(config)
    if path is not None and not path.exists():
        raise ConfigError(
            f"There is no database at {database_name(config)}. Set {DATABASE_VARIABLE} to the "
            "database the service uses (for SQLite an absolute path, "
            "sqlite:////path/to/calendar.db): the MCP client starts this command in a directory "
            "of its choosing."
        )


def check_key(db: Database, secret: str | None) -> Principal:
    """The principal for ``secret``, or a ``ConfigError`` that says what to do."""
    if not secret:
        raise ConfigError(
            f"{KEY_VARIABLE} is not set. Create a key with 'calendar-service keys create "
            "--user EMAIL --name assistant --permission write' and put its secret in "
            f"{KEY_VARIABLE}."
        )
    try:
        return db.call(authenticate, secret=secret.strip())
    except UnknownKey as exc:
        raise ConfigError(
            f"The key in {KEY_VARIABLE} is refused: {exc.message} It was looked up in the "
            f"database {database_name(db.config)}; if the service uses another one, set "
            f"{DATABASE_VARIABLE} to it."
        ) from None
    except AuthError as exc:
        raise ConfigError(f"The key in {KEY_VARIABLE} is refused: {exc.message}") from None


def stdio_caller(secret: str) -> CallerOf:
    def caller_of(ctx: Context, operation: str) -> Caller:
        client = ctx.request_context.session.client_params
        info = client.client_info if client is not None else None
        agent = f"{info.name}/{info.version}" if info is not None else None
        call = CallContext(
            transport="mcp",
            operation=operation,
            method="STDIO",
            path="stdio",
            client_addr=None,
            user_agent=agent,
            request_id=new_id("req"),
            started=time.perf_counter(),
        )
        return Caller(secret=secret, call=call)

    return caller_of


def serve(config: Config, db: Database) -> None:
    """Check the key, then serve the tools on stdin/stdout until the client closes them."""
    secret = (config.api_key or "").strip()
    permission = check_key(db, secret).permission  # a key's permission never changes
    backend = Backend(
        db=db,
        limiter=RateLimiter(*config.rate_limit),
        caller_of=stdio_caller(secret),
        permission_of=lambda _: permission,
    )
    server = build_server(backend, name=config.service_name, version=__version__)
    anyio.run(server.run_stdio_async)
