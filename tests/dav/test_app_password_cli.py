"""``keys create --app-password``: the key a calendar app signs in with, over CalDAV."""

from __future__ import annotations

import uuid

import httpx

from calendar_service.platform.config import Config
from tests.cli.support import cli_json
from tests.support import RunningServer


def test_keys_create_app_password_signs_a_calendar_app_in(
    config: Config, server: RunningServer, api: httpx.Client
) -> None:
    email = f"app-{uuid.uuid4().hex[:8]}@example.com"
    cli_json(config, "users", "create", email)
    key = cli_json(config, "keys", "create", "--user", email, "--name", "iPhone",
                   "--permission", "write", "--app-password")  # fmt: skip
    assert key["appPassword"] is True
    plain = cli_json(config, "keys", "create", "--user", email, "--name", "script")
    assert plain["appPassword"] is False
    asked = {"Depth": "0"}
    assert (
        api.request("PROPFIND", "/caldav/", headers=asked, auth=(email, key["secret"])).status_code
        == 207
    )
