"""The CLI's help and the docs' examples say what the commands really take."""

from __future__ import annotations

import base64
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from calendar_service.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (typer vendors its own click)
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


def test_flags_are_shown_without_a_value_in_every_commands_help() -> None:
    runner = CliRunner()
    paths = list(_commands(typer.main.get_command(app)))
    assert ("keys", "list") in paths and ("webhook", "set") in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, (path, result.output)
        assert re.search(r"--help\s+Show this message", result.output), result.output


def test_the_json_flag_is_listed_as_a_plain_flag() -> None:
    result = CliRunner().invoke(app, ["keys", "list", "--help"], env={"COLUMNS": "200"})
    assert re.search(r"--json\s+Print one JSON object\.", result.output), result.output


def test_the_example_webhook_secrets_in_the_docs_are_32_bytes_as_the_table_says() -> None:
    text = (ROOT / "docs" / "webhooks.md").read_text(encoding="utf-8")
    secrets = re.findall(r"whsec_([A-Za-z0-9+/]{8,}={0,2})", text)
    assert secrets
    for secret in secrets:
        assert len(base64.b64decode(secret, validate=True)) == 32, secret


def test_the_project_license_is_an_spdx_expression() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
    requires = " ".join(project["build-system"]["requires"])
    assert re.search(r"setuptools>=(7[7-9]|[89]\d)", requires), requires
