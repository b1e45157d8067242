"""The webhook page over HTTP: the SSRF guard's refusals, secrets once, owners kept apart."""

from __future__ import annotations

import re

import pytest

from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings, signed_in
from tests.support import Factory, RunningServer

# A local port nobody listens on: the test config allows local targets, and deliveries to it
# fail at once instead of waiting on a network this machine does not have.
DEAD_END = "http://127.0.0.1:9/calendar-hook"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://hooks.example.com/x", "must start with https://"),
        ("https://127.0.0.1/hook", "resolves to 127.0.0.1, a loopback address"),
        ("https://10.1.2.3/hook", "a private address"),
        ("https://169.254.169.254/latest/meta-data", "a link-local address"),
        ("https://user:pw@hooks.example.com/x", "must not carry a user name or password"),
        ("not a url", "must be an absolute https:// URL"),
    ],
)
def test_a_url_the_ssrf_rules_refuse_is_not_set_and_the_page_says_why(
    strict_server: RunningServer, factory: Factory, url: str, message: str
) -> None:
    owner = factory.owner()
    session = signed_in(strict_server, owner)
    try:
        answer = session.post("/webhook", {"url": url})
        assert answer.status_code == 400
        assert message in answer.text
        assert 'aria-invalid="true"' in answer.text
        assert factory.db.call(webhook_config.find_endpoint, user_id=owner.id) is None
    finally:
        session.client.close()


def test_the_signing_secret_is_shown_once_when_set_and_when_rotated(
    settings: Settings, factory: Factory
) -> None:
    made = settings.post("/webhook", {"url": DEAD_END})
    assert made.status_code == 201
    assert made.headers["cache-control"] == "no-store"
    first = re.search(r'value="(whsec_[^"]+)"', made.text)
    assert first and "shown only this once" in made.text
    page = settings.get("/webhook").text
    assert "whsec_" not in page and DEAD_END in page

    rotated = settings.post("/webhook/rotate")
    second = re.search(r'value="(whsec_[^"]+)"', rotated.text)
    assert rotated.status_code == 200 and second and second.group(1) != first.group(1)
    assert "The previous secret keeps signing beside it until" in rotated.text
    assert "whsec_" not in settings.get("/webhook").text


def test_one_owner_cannot_reach_anothers_webhook_or_deliveries_by_changing_ids(
    settings: Settings, factory: Factory, server: RunningServer
) -> None:
    victim = factory.owner()
    victim_session = signed_in(server, victim)
    victim_session.post("/webhook", {"url": "http://127.0.0.1:9/victim-hook"})
    victim_session.post("/webhook/test")
    victim_session.client.close()
    [delivery] = factory.db.call(webhook_config.list_deliveries, user_id=victim.id)
    before = factory.db.call(webhook_config.get_endpoint, user_id=victim.id)

    assert settings.get(f"/webhook/deliveries/{delivery['id']}").status_code == 404
    assert settings.post(f"/webhook/deliveries/{delivery['id']}/redeliver").status_code == 404
    page = settings.get("/webhook").text
    assert "victim-hook" not in page and delivery["id"] not in page
    # Acting on "my" webhook never touches theirs.
    assert settings.post("/webhook/rotate").status_code == 404
    assert settings.post("/webhook/test").status_code == 404
    after = factory.db.call(webhook_config.get_endpoint, user_id=victim.id)
    unchanged = ("url", "status", "updatedAt", "previousSecretExpiresAt")  # no rotation either
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}


def test_a_disabled_webhook_is_shown_as_such_and_can_be_enabled_again(
    settings: Settings, factory: Factory
) -> None:
    settings.post("/webhook", {"url": DEAD_END})
    factory.db.call(
        webhook_config.disable_endpoint,
        user_id=settings.owner.id,
        reason="the receiver answered 410 Gone",
        now=utcnow(),
    )
    page = settings.get("/webhook").text
    assert "This webhook is disabled" in page and "410 Gone" in page
    assert ">Send a test event<" not in page
    enabled = settings.post("/webhook/enable", {"redeliver_failed": "on"})
    assert enabled.status_code == 303
    assert (
        "enabled again" in settings.get(enabled.headers["location"].removeprefix("/settings")).text
    )
    endpoint = factory.db.call(webhook_config.get_endpoint, user_id=settings.owner.id)
    assert endpoint["status"] == "active"


def test_without_a_webhook_the_page_offers_to_set_one(settings: Settings) -> None:
    page = settings.get("/webhook")
    assert page.status_code == 200
    assert "No webhook is set" in page.text
    assert "Set webhook" in page.text


def test_a_deliverys_page_shows_its_attempts_and_the_signed_body(
    settings: Settings, factory: Factory
) -> None:
    settings.post("/webhook", {"url": DEAD_END})
    settings.post("/webhook/test")
    [delivery] = factory.db.call(webhook_config.list_deliveries, user_id=settings.owner.id)
    page = settings.get(f"/webhook/deliveries/{delivery['id']}")
    assert page.status_code == 200
    assert delivery["id"] in page.text
    assert f"&#34;id&#34;: &#34;{delivery['id']}&#34;" in page.text  # the body, escaped
