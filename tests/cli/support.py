"""The ``calendar-service`` command run in the test's process, on a real database.

``cli`` invokes the same Typer app the console script runs (``calendar_service.cli.asgi_app``),
with typer's ``CliRunner``: the same commands, options, exit codes, standard output and
standard error, without the second of start-up (Python, then every import) that a process per
command costs; a test of the CLI makes a dozen. Standard input is not a terminal, as under
``subprocess.run(stdin=DEVNULL)``. An exception a command does not handle is raised in the
test, traceback and all, where a process would have printed it and exited 1.

What only a process shows (the console script itself, ``serve``, ``mcp`` over stdio, a command
run from another directory) is tested with real processes: ``test_cli.py``'s entry-point test,
``test_serve.py``, ``test_mcp_database.py``, ``tests/mcp_tools/test_stdio.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from typer.testing import CliRunner

from calendar_service.cli import app
from calendar_service.platform.config import Config


@dataclass(frozen=True)
class Ran:
    """What a command did, named as ``subprocess.CompletedProcess`` names it."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(env: dict[str, str | None], *args: str, check: bool = True) -> Ran:
    """``calendar-service ARGS`` with ``env`` over this process's environment (``None``: the
    variable unset); with ``check``, it must exit 0."""
    result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    ran = Ran(result.exit_code, result.stdout, result.stderr)
    if check:
        assert ran.returncode == 0, ran.stderr
    return ran


def cli(config: Config, *args: str, check: bool = True) -> Ran:
    """``calendar-service ARGS`` on ``config``'s database."""
    return run_cli({"CALENDAR_DATABASE_URL": config.database_url}, *args, check=check)


def cli_json(config: Config, *args: str) -> dict[str, Any]:
    """``calendar-service ARGS --json`` on ``config``'s database: the one JSON object printed."""
    return json.loads(cli(config, *args, "--json").stdout)  # type: ignore[no-any-return]
