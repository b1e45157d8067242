"""What the commands share: the database, printing, and the one translation of errors.

A command lets a ``CalendarError`` go, and refuses a command line it cannot run with ``usage``
(a click usage error, as typer's own refusals of options are): the app's group (``Commands``)
turns either into a message on standard error and an exit code (``fail``), for every command and
only there. With ``--json`` the message is one JSON object, the REST problem's ``code``,
``message`` and members (``errors: [{field, message}]``, ``changes``, …): ``usage_error`` for a
command line refused, with the option as typed in ``errors`` when one is named. Exit codes: 2 for
invalid input (``ValidationFailed``, a usage error), else 1.

Start-up: the CLI's modules import only typer and the light parts of the core at the top; each
command imports the core modules it uses (the models, the database, alembic: most of a second)
when it runs, so that ``--help`` and a mistyped option answer at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperGroup

from calendar_service.platform.config import Config
from calendar_service.platform.errors import CalendarError, ValidationFailed

if TYPE_CHECKING:
    from calendar_service.platform.db import Database

T = TypeVar("T")

# click's usage error and the error all its refusals are (the click typer uses: its own copy in
# recent versions, which it does not export), found through typer's public ``BadParameter``.
UsageError: type[Exception] = typer.BadParameter.__mro__[1]
ClickError: type[Exception] = typer.BadParameter.__mro__[2]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
UserOption = Annotated[str, typer.Option("--user", help="Owner email.")]


def owner_check(refused: str) -> Any:
    """An optional ``--user``: the owner's email, so that the command refuses ``refused`` (what
    belongs to another owner) rather than act on it."""
    return typer.Option("--user", help=f"Owner email: refuse {refused}.")


def open_database(config: Config | None = None) -> Database:
    """The configured database, migrated to the latest schema."""
    from calendar_service.platform.db import Database
    from calendar_service.platform.migrate import upgrade

    config = config or Config.from_env()
    db = Database(config)
    upgrade(db.engine)
    return db


def run(fn: Callable[..., T], /, **kwargs: Any) -> T:
    """Run a core function in one transaction on the configured database.

    Its errors are left to ``Commands``, which turns them into a message and exit code."""
    db = open_database()
    try:
        return db.call(fn, **kwargs)
    finally:
        db.close()


def run_as(email: str, fn: Callable[..., T], /, **kwargs: Any) -> T:
    """``run`` of ``fn(conn, user_id=…, **kwargs)`` for the owner with this email (NotFound
    when there is none)."""
    return run(lambda conn: fn(conn, user_id=owner_id(conn, email), **kwargs))


def owner_id(conn: Any, email: str) -> str:
    """The id of the owner with this email (NotFound when there is none)."""
    from calendar_service.access import owners as users

    return str(users.get_user_by_email(conn, email=email)["id"])


def emit(data: dict[str, Any], as_json: bool, text: str | Callable[[], None]) -> None:
    """Print ``data`` as one JSON object with ``--json``, else ``text`` (or what it prints)."""
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False))
    elif callable(text):
        text()
    else:
        typer.echo(text)


def usage(message: str) -> NoReturn:
    """Refuse the command line as it was given (exit 2): ``message`` says what to give."""
    raise UsageError(message)


def fail(exc: CalendarError, *, as_json: bool = False) -> NoReturn:
    """The message (and each invalid field) on standard error, or with ``as_json`` the error as
    one JSON object there; exit 2 for invalid input, else 1."""
    if as_json:
        typer.echo(json.dumps(exc.to_dict(), ensure_ascii=False), err=True)
    else:
        typer.echo(f"error: {exc.message}", err=True)
        for item in getattr(exc, "errors", []):
            typer.echo(f"  {item['field']}: {item['message']}", err=True)
    raise typer.Exit(2 if isinstance(exc, ValidationFailed) else 1)


def _refused_line(exc: Any) -> dict[str, Any]:
    """A command line click (or ``usage``) refused, as ``fail`` prints an error with --json."""
    message = exc.format_message()
    refusal: dict[str, Any] = {"code": "usage_error", "message": message}
    param = getattr(exc, "param", None)
    if param is not None:
        name = param.opts[0] if param.opts else param.human_readable_name
        refusal["errors"] = [{"field": name, "message": message}]
    return refusal


def _wants_json(args: list[str]) -> bool:
    """Whether the command line asks for ``--json`` (before a ``--`` that ends the options).
    Read from the words given, so that a line refused before its options are parsed is
    answered as asked too."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class Commands(TyperGroup):
    """The ``calendar-service`` group: an error from any command, at any depth, ends in ``fail``
    here, the one place the CLI translates them: a ``CalendarError``, or a command line refused
    (a click usage error: an unknown option, a bad value, or ``usage``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Note the words given (``--json``?) before click parses them."""
        ctx.meta["calendar_service.args"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors click privately)
        """Run the command; a ``CalendarError`` or usage error becomes its message and exit
        code."""
        as_json = _wants_json(ctx.meta.get("calendar_service.args", []))
        try:
            return super().invoke(ctx)
        except CalendarError as exc:
            fail(exc, as_json=as_json)
        except ClickError as exc:
            if not as_json:
                raise  # click's usage line, a hint to --help and the message
            typer.echo(json.dumps(_refused_line(exc), ensure_ascii=False), err=True)
            raise typer.Exit(getattr(exc, "exit_code", 2)) from None
