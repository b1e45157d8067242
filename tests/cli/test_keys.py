"""``keys create`` expiry: a unit is required, short keys are asked for, the result is shown."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import httpx
import pytest

from calendar_service.platform.config import Config
from calendar_service.platform.timeutil import utcnow
from tests.cli.support import cli, cli_json
from tests.rest.conftest import EVENTS
from tests.support import bearer


def _owner(config: Config) -> str:
    email = f"cli-{uuid.uuid4().hex[:8]}@example.com"
    cli(config, "users", "create", email)
    return email


def _expires(key: dict[str, str]) -> datetime:
    return datetime.fromisoformat(key["expiresAt"].replace("Z", "+00:00"))


def test_a_lifetime_without_a_clear_unit_is_refused_and_no_key_is_made(config: Config) -> None:
    email = _owner(config)
    for lifetime in ("30", "1m", "1M", "100ms", "30s"):
        result = cli(
            config, "keys", "create", "--user", email, "--name", "x", "--expires-in", lifetime,
            check=False,
        )  # fmt: skip
        assert result.returncode == 2, result.stdout
        assert "min, h, d or w" in result.stderr
        assert "secret" not in result.stdout
    assert cli_json(config, "keys", "list", "--user", email)["keys"] == []


def test_a_key_for_less_than_an_hour_needs_the_explicit_flag(config: Config) -> None:
    email = _owner(config)
    base = ("keys", "create", "--user", email, "--name", "short")
    refused = cli(config, *base, "--expires-in", "30min", check=False)
    assert refused.returncode == 2
    assert "less than an hour" in refused.stderr and "--allow-short-expiry" in refused.stderr
    soon = (utcnow() + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert cli(config, *base, "--expires-at", soon, check=False).returncode == 2

    before = utcnow()
    key = cli_json(config, *base, "--expires-in", "30min", "--allow-short-expiry")
    assert before + timedelta(minutes=29) < _expires(key) <= utcnow() + timedelta(minutes=30)
    longer = cli_json(config, *base, "--expires-in", "90min")
    assert _expires(longer) > utcnow() + timedelta(minutes=85)


def test_a_free_busy_key_is_made_with_its_own_permission_and_scope(config: Config) -> None:
    email = _owner(config)
    key = cli_json(
        config, "keys", "create", "--user", email, "--name", "agent", "--permission", "freebusy"
    )
    assert key["permission"] == "freebusy"
    assert key["scopes"] == ["calendar:freebusy"]
    assert key["secret"].startswith("calsk_")
    [listed] = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert listed["permission"] == "freebusy"
    refused = cli(
        config, "keys", "create", "--user", email, "--name", "x", "--permission", "admin",
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "freebusy" in refused.stderr


def test_the_created_key_shows_when_it_expires(config: Config) -> None:
    email = _owner(config)
    base = ("keys", "create", "--user", email, "--name", "k")
    before = utcnow()
    for lifetime, delta in (("12h", timedelta(hours=12)), ("2w", timedelta(weeks=2))):
        key = cli_json(config, *base, "--expires-in", lifetime)
        assert before + delta - timedelta(seconds=5) < _expires(key) <= utcnow() + delta
    text = cli(config, *base, "--expires-in", "30d").stdout
    assert "in 30 days" in text
    assert "expires 20" in text


def test_expires_at_takes_a_date_and_the_key_works_through_that_day(config: Config) -> None:
    email = _owner(config)
    day = date.today() + timedelta(days=400)
    key = cli_json(
        config, "keys", "create", "--user", email, "--name", "d", "--expires-at", day.isoformat()
    )
    assert _expires(key) == datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC)


def test_revoke_takes_the_owner_and_refuses_another_owners_key(config: Config) -> None:
    email, other = _owner(config), _owner(config)
    key = cli_json(config, "keys", "create", "--user", email, "--name", "k")
    refused = cli(config, "keys", "revoke", key["id"], "--user", other, check=False)
    assert refused.returncode == 1
    assert key["id"] in refused.stderr and other in refused.stderr
    [still] = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert still["state"] == "active"

    revoked = cli_json(config, "keys", "revoke", key["id"], "--user", email)
    assert (revoked["id"], revoked["state"], revoked["revokedBy"]) == (
        key["id"],
        "revoked",
        "owner",
    )
    [listed] = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert listed["revokedBy"] == "owner"


@pytest.mark.parametrize("command", ["revoke", "calls"])
def test_a_secret_given_for_a_key_id_is_explained_and_never_echoed(
    config: Config, command: str
) -> None:
    email = _owner(config)
    key = cli_json(config, "keys", "create", "--user", email, "--name", "k")
    secret = key["secret"]
    args = ("keys", "revoke") if command == "revoke" else ("calls",)
    for given in (secret, key["prefix"]):
        result = cli(config, *args, given, check=False)
        assert result.returncode == 2
        assert "that is a secret" in result.stderr and "not a key id" in result.stderr
        assert "key_" in result.stderr and "keys list --user EMAIL" in result.stderr
        output = result.stdout + result.stderr
        assert secret[len("calsk_") :][:6] not in output  # not even the prefix's characters
    [still] = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert still["state"] == "active"


def test_last_use_is_the_last_call_let_through_in_list_and_revoke(
    config: Config, api: httpx.Client
) -> None:
    email = _owner(config)
    key = cli_json(config, "keys", "create", "--user", email, "--name", "reader",
                   "--permission", "read")  # fmt: skip
    assert api.get(EVENTS, headers=bearer(key["secret"])).status_code == 200
    refused = api.post(EVENTS, json={}, headers=bearer(key["secret"]))  # a read key writes
    assert refused.json()["code"] == "insufficient_scope", refused.text  # a 401
    newest_first = cli_json(config, "calls", key["id"])["calls"]
    assert [c["status"] for c in newest_first] == [401, 200]
    used = newest_first[1]["at"]

    [listed] = cli_json(config, "keys", "list", "--user", email)["keys"]
    assert listed["lastUsedAt"] == used
    assert f"last used {used}" in cli(config, "keys", "list", "--user", email).stdout
    revoked = cli_json(config, "keys", "revoke", key["id"], "--user", email)
    assert revoked["state"] == "revoked" and revoked["lastUsedAt"] == used
