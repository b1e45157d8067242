"""``rules show|set``: the owner's rules for agents (``calendar.rules``; docs/rules.md).

``set`` replaces the rules with the JSON object in ``--file``, or on standard input without it,
and prints them; an empty object clears them. The owner in person is not bound by them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from calendar_service.cli.common import JsonFlag, UserOption, emit, run_as
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.timeutil import utcnow

rules_app = typer.Typer(
    help="Your rules for agents: working hours, buffers, limits, focus time.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _text(rules: dict[str, Any]) -> None:
    set_ = {name: value for name, value in rules.items() if name != "onViolation"}
    if not set_:
        typer.echo("no rules: agents may book any time")
    for name, value in set_.items():
        typer.echo(f"{name}: {json.dumps(value)}")
    typer.echo(f"onViolation: {rules.get('onViolation', 'refuse')}")


@rules_app.command("show")
def rules_show(user: UserOption, as_json: JsonFlag = False) -> None:
    """Print the owner's rules for agents."""
    from calendar_service.calendar.rules import stored_rules

    shown = run_as(user, stored_rules)
    emit({"rules": shown}, as_json, lambda: _text(shown))


@rules_app.command("set")
def rules_set(
    user: UserOption,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="A JSON file of rules (default: read standard input)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace the owner's rules with a JSON object ({} clears them) and print them."""
    from calendar_service.calendar.rules import set_rules

    field = "--file" if file is not None else "stdin"
    try:
        text = sys.stdin.read() if file is None else file.read_text(encoding="utf-8")
        value = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "is not a JSON object"
        raise ValidationFailed([FieldError(field, str(reason))]) from None
    shown = run_as(user, set_rules, value=value, now=utcnow())
    emit({"rules": shown}, as_json, lambda: _text(shown))
