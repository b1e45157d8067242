"""``rules show|set`` and ``keys create --rules exempt`` (docs/rules.md): the owner's rules for
agents set from a file or standard input, replaced whole, refused naming the field, and a key
the rules do not bind."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from calendar_service.platform.config import Config
from tests.cli.support import cli, cli_json

HOURS = {"workingHours": {"mon": [{"start": "09:00", "end": "17:00"}]}, "bufferMinutes": 10}


def test_the_owner_sets_shows_replaces_and_clears_the_rules(config: Config, tmp_path: Path) -> None:
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    assert cli_json(config, "rules", "show", "--user", email) == {
        "rules": {"onViolation": "refuse"}
    }
    piped = cli(config, "rules", "set", "--user", email, "--json", stdin=json.dumps(HOURS))
    assert json.loads(piped.stdout) == {"rules": {**HOURS, "onViolation": "refuse"}}
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"maxMeetingsPerDay": 4, "onViolation": "ask"}))
    replaced = cli_json(config, "rules", "set", "--user", email, "--file", str(path))
    assert replaced == {"rules": {"maxMeetingsPerDay": 4, "onViolation": "ask"}}
    assert cli_json(config, "rules", "show", "--user", email) == replaced
    text = cli(config, "rules", "show", "--user", email).stdout
    assert "maxMeetingsPerDay: 4" in text and "onViolation: ask" in text
    cleared = cli(config, "rules", "set", "--user", email, "--json", stdin="{}")
    assert json.loads(cleared.stdout) == {"rules": {"onViolation": "refuse"}}


def test_bad_rules_are_refused_naming_the_field_and_change_nothing(config: Config) -> None:
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    bad = {"workingHours": {"mon": [{"start": "17:00", "end": "09:00"}]}, "lunch": 1}
    refused = cli(
        config, "rules", "set", "--user", email, "--json", stdin=json.dumps(bad), check=False
    )
    assert refused.returncode == 2
    problem = json.loads(refused.stderr)
    assert problem["code"] == "validation_error"
    assert {e["field"] for e in problem["errors"]} == {"workingHours.mon[0].end", "lunch"}
    garbled = cli(config, "rules", "set", "--user", email, stdin="{not json", check=False)
    assert garbled.returncode == 2 and "stdin" in garbled.stderr
    assert cli_json(config, "rules", "show", "--user", email) == {
        "rules": {"onViolation": "refuse"}
    }


def test_a_key_made_exempt_says_so_in_the_list(config: Config) -> None:
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    made = cli_json(
        config, "keys", "create", "--user", email, "--name", "mine", "--permission", "write",
        "--rules", "exempt",
    )  # fmt: skip
    plain = cli_json(config, "keys", "create", "--user", email, "--name", "agent")
    assert (made["rules"], plain["rules"]) == ("exempt", "bound")
    listed = {
        k["id"]: k["rules"] for k in cli_json(config, "keys", "list", "--user", email)["keys"]
    }
    assert listed == {made["id"]: "exempt", plain["id"]: "bound"}
    assert "exempt from rules" in cli(config, "keys", "list", "--user", email).stdout
    wrong = cli(config, "keys", "create", "--user", email, "--name", "x", "--rules", "maybe",
                "--json", check=False)  # fmt: skip
    assert wrong.returncode == 2 and "rules" in wrong.stderr
