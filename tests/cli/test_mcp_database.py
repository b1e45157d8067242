"""``calendar-service mcp`` says which database it looked in, and creates none by mistake."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import make_url

from calendar_service.access import keys
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database


def _mcp(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "calendar_service.cli", "mcp"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CALENDAR_DATABASE_URL"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # run from another directory
    return {**env, **settings}


def test_without_a_database_setting_it_names_the_missing_file_and_creates_none(
    tmp_path: Path,
) -> None:
    result = _mcp(_env(CALENDAR_API_KEY=keys.generate_secret()), tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert str(tmp_path / "calendar.db") in result.stderr
    assert "CALENDAR_DATABASE_URL" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no empty calendar.db left behind


def test_an_unknown_key_is_refused_naming_the_database_it_was_looked_up_in(
    config: Config, db: Database, tmp_path: Path
) -> None:
    secret = keys.generate_secret()
    env = _env(CALENDAR_DATABASE_URL=config.database_url, CALENDAR_API_KEY=secret)
    result = _mcp(env, tmp_path)
    assert result.returncode == 1
    assert "not known to this service" in result.stderr
    assert str(make_url(config.database_url).database) in result.stderr
    assert "CALENDAR_DATABASE_URL" in result.stderr
    assert secret not in result.stderr and secret[6:12] not in result.stderr
