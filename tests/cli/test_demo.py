"""``calendar-service demo`` (what ``make run`` prints): one live demo key at a time."""

from __future__ import annotations

import uuid

from calendar_service.platform.config import Config
from tests.cli.support import cli, cli_json


def test_each_demo_run_revokes_the_earlier_demo_keys_and_says_so(config: Config) -> None:
    email = f"demo-{uuid.uuid4().hex[:8]}@example.com"
    first = cli_json(config, "demo", "--email", email)
    assert first["revokedKeys"] == []
    mine = cli_json(config, "keys", "create", "--user", email, "--name", "my own key")
    second = cli_json(config, "demo", "--email", email)
    assert second["revokedKeys"] == [first["key"]["id"]]
    third = cli(config, "demo", "--email", email).stdout
    assert "revoked 1 earlier demo key" in third

    states = {
        k["id"]: k["state"] for k in cli_json(config, "keys", "list", "--user", email)["keys"]
    }
    assert states[first["key"]["id"]] == states[second["key"]["id"]] == "revoked"
    assert states[mine["id"]] == "active"  # keys the owner made are left alone
    assert sorted(states.values()).count("active") == 2  # theirs and the newest demo key
