"""What the commands share: the database, printing, and the one translation of core errors.

A command lets a ``CalendarError`` go: the app's group (``Commands``) turns it into a message on
standard error and an exit code (``fail``), for every command and only there.

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

from calendar_service.config import Config
from calendar_service.errors import CalendarError, ValidationFailed

if TYPE_CHECKING:
    from calendar_service.db import Database

T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
UserOption = Annotated[str, typer.Option("--user", help="Owner email.")]


def open_database(config: Config | None = None) -> Database:
    """The configured database, migrated to the latest schema."""
    from calendar_service.db import Database
    from calendar_service.migrate import upgrade

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


def owner_id(conn: Any, email: str) -> str:
    """The id of the owner with this email (NotFound when there is none)."""
    from calendar_service import users

    return str(users.get_user_by_email(conn, email=email)["id"])


def emit(data: dict[str, Any], as_json: bool, text: str | Callable[[], None]) -> None:
    """Print ``data`` as one JSON object with ``--json``, else ``text`` (or what it prints)."""
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False))
    elif callable(text):
        text()
    else:
        typer.echo(text)


def fail(exc: CalendarError) -> NoReturn:
    """The message (and each invalid field) on standard error; exit 2 for invalid input, else 1."""
    typer.echo(f"error: {exc.message}", err=True)
    for item in getattr(exc, "errors", []):
        typer.echo(f"  {item['field']}: {item['message']}", err=True)
    raise typer.Exit(2 if isinstance(exc, ValidationFailed) else 1)


class Commands(TyperGroup):
    """The ``calendar-service`` group: a core error from any command, at any depth, ends in
    ``fail`` here, the one place the CLI translates them."""

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors click privately)
        """Run the command; a ``CalendarError`` becomes its message and exit code."""
        try:
            return super().invoke(ctx)
        except CalendarError as exc:
            fail(exc)
