"""``calendar-service webhook …``: the contract fields of ``--json`` and the guard at ``set``."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from calendar_service.cli import app
from calendar_service.journal import webhook_outbox as outbox
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, Owner, bearer, wait_for
from tests.webhooks.support import Receiver, delivery, make_owner

runner = CliRunner()
EVENT = {"title": "Review", "startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T10:00:00Z"}


def cli(config: Config, *args: str, allow_local: bool = True) -> Any:
    env = {
        "CALENDAR_DATABASE_URL": config.database_url,
        "CALENDAR_WEBHOOK_ALLOW_LOCAL": "1" if allow_local else "0",
    }
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_set_prints_the_url_and_a_whsec_secret_and_show_never_prints_a_secret(
    hooks_config: Config, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    url = receiver.url()
    made = cli(hooks_config, "webhook", "set", "--user", owner.email, "--url", url, "--json")
    assert made["url"] == url and made["secret"].startswith("whsec_")
    shown = cli(hooks_config, "webhook", "show", "--user", owner.email, "--json")
    assert shown["url"] == url and shown["status"] == "active"
    assert "secret" not in shown and made["secret"] not in json.dumps(shown)

    rotated = cli(hooks_config, "webhook", "rotate", "--user", owner.email, "--json")
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != made["secret"]
    assert rotated["previousSecretExpiresAt"] is not None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://127.0.0.1/hook", "loopback"),
        ("https://10.0.0.8/hook", "private"),
        ("https://[fe80::1]/hook", "link-local"),
        ("http://hooks.example.com/hook", "https://"),
    ],
)
def test_set_refuses_non_public_or_plain_http_targets(
    hooks_config: Config, hooks_db: Database, url: str, reason: str
) -> None:
    owner = make_owner(hooks_db)
    env = {"CALENDAR_DATABASE_URL": hooks_config.database_url, "CALENDAR_WEBHOOK_ALLOW_LOCAL": ""}
    result = runner.invoke(app, ["webhook", "set", "--user", owner.email, "--url", url], env=env)
    assert result.exit_code == 1
    assert reason in result.stderr
    shown = runner.invoke(app, ["webhook", "show", "--user", owner.email], env=env)
    assert shown.exit_code == 1 and "No webhook" in shown.stderr


def test_set_refuses_a_url_of_the_wrong_shape_as_invalid_input_as_the_settings_page_does(
    hooks_config: Config, hooks_db: Database
) -> None:
    # The shape comes first, as on the settings page: exit 2 naming the field, and no DNS
    # look-up of hooks.example.com.
    owner = make_owner(hooks_db)
    strict = {
        "CALENDAR_DATABASE_URL": hooks_config.database_url,
        "CALENDAR_WEBHOOK_ALLOW_LOCAL": "",
    }
    for url, problem in [
        ("ftp://hooks.example.com/hook", "url: must be an absolute https:// URL"),
        ("https://hooks.example.com/hook#top", "url: must not have a #fragment"),
    ]:
        result = runner.invoke(
            app, ["webhook", "set", "--user", owner.email, "--url", url], env=strict
        )
        assert (result.exit_code, problem in result.stderr) == (2, True), result.output


def test_deliveries_lists_the_contract_fields_and_redeliver_sends_again(
    hooks_config: Config,
    hooks_db: Database,
    hooks_api: httpx.Client,
    receiver: Receiver,
) -> None:
    owner: Owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    url = receiver.url()
    cli(hooks_config, "webhook", "set", "--user", owner.email, "--url", url, "--json")
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))
    [request] = wait_for(lambda: receiver.received(url))
    delivery_id = request.headers["webhook-id"]
    wait_for(lambda: delivery(hooks_db, owner, delivery_id)["status"] == "succeeded")

    listed = cli(hooks_config, "webhook", "deliveries", "--user", owner.email, "--json")
    [item] = listed["deliveries"]
    assert {"id", "eventType", "status", "attempts", "lastStatusCode"} <= item.keys()
    assert item["id"] == delivery_id and item["eventType"] == "calendar.event.created"
    assert (item["status"], item["attempts"], item["lastStatusCode"]) == ("succeeded", 1, 200)

    one = cli(
        hooks_config, "webhook", "deliveries", "--user", owner.email, "--id", delivery_id, "--json"
    )
    assert [a["statusCode"] for a in one["attemptLog"]] == [200]

    again = cli(hooks_config, "webhook", "redeliver", "--user", owner.email, delivery_id, "--json")
    assert again["id"] == delivery_id and again["status"] == "pending"
    resent = wait_for(lambda: len(receiver.received(url)) == 2 and receiver.received(url))
    assert resent[1].headers["webhook-id"] == delivery_id


def test_enable_re_sends_failed_deliveries_when_asked(
    hooks_config: Config, hooks_db: Database, hooks_server: object, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    url = receiver.url(410)
    cli(hooks_config, "webhook", "set", "--user", owner.email, "--url", url, "--json")
    hooks_db.call(
        outbox.record_change,
        user_id=owner.id,
        event_type="calendar.event.created",
        event={"id": "ev_x"},
        now=utcnow(),
    )

    def disabled() -> dict[str, Any] | None:
        shown = cli(hooks_config, "webhook", "show", "--user", owner.email, "--json")
        return shown if shown["status"] == "disabled" else None

    shown = wait_for(disabled)
    assert "410" in shown["disabledReason"]
    enabled = cli(
        hooks_config, "webhook", "enable", "--user", owner.email, "--redeliver-failed", "--json"
    )
    assert enabled["status"] == "active" and enabled["redelivered"] == 1
    wait_for(lambda: len(receiver.received(url)) == 2)


def test_set_with_minutes_before_gives_the_owners_webhook_time_triggers(
    hooks_config: Config, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    url = receiver.url()
    made = cli(
        hooks_config, "webhook", "set", "--user", owner.email, "--url", url,
        "--minutes-before", "60,15", "--ended", "--json",
    )  # fmt: skip
    assert made["minutesBefore"] == [15, 60] and made["ended"] is True
    assert made["events"][-2:] == ["calendar.event.starting", "calendar.event.ended"]
    again = cli(hooks_config, "webhook", "set", "--user", owner.email, "--url", url, "--json")
    assert again["minutesBefore"] == [15, 60]  # kept when not said
    cleared = cli(
        hooks_config, "webhook", "set", "--user", owner.email, "--url", url,
        "--minutes-before", "none", "--no-ended", "--json",
    )  # fmt: skip
    assert cleared["minutesBefore"] is None and cleared["ended"] is False
    for bad in ("10081", "5,5", "soon", ",".join(str(m) for m in range(11))):
        result = runner.invoke(
            app,
            ["webhook", "set", "--user", owner.email, "--url", url, "--minutes-before", bad],
            env={"CALENDAR_DATABASE_URL": hooks_config.database_url,
                 "CALENDAR_WEBHOOK_ALLOW_LOCAL": "1"},
        )  # fmt: skip
        assert result.exit_code == 2, (bad, result.output)
        assert "minutesBefore" in result.output
