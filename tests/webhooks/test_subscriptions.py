"""A key's webhook subscriptions over REST: made, listed, tested and deleted by the key; each
delivery signed with the subscription's own secret (checked with the standardwebhooks library);
only what the key reaches; nothing queued once its key is revoked; bad input named."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest

from calendar_service.access import keys
from calendar_service.calendar import events
from calendar_service.delivery import subscriptions, webhook_targets
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, bearer, own_server, wait_for
from tests.webhooks.support import Receiver, make_owner, set_webhook
from tests.webhooks.test_delivery import verify_both
from webhooks.dispatcher import Dispatcher

SUBSCRIPTIONS = "/api/v1/webhooks/subscriptions"
EVENTS = "/api/v1/calendar/events"
EVENT = {"title": "Standup", "startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T09:15:00Z"}
CHANGES = ["calendar.event.created", "calendar.event.updated", "calendar.event.deleted"]


def subscribe(api: httpx.Client, key: str, url: str, **fields: Any) -> dict[str, Any]:
    answer = api.post(SUBSCRIPTIONS, json={"url": url, **fields}, headers=bearer(key))
    assert answer.status_code == 201, answer.text
    return answer.json()  # type: ignore[no-any-return]


def sent_to(db: Database, owner_id: str, subscription_id: str) -> list[dict[str, Any]]:
    """The deliveries queued for a subscription, newest first."""
    return db.call(
        webhook_config.list_deliveries, user_id=owner_id, endpoint_id=subscription_id, limit=100
    )


def test_a_subscription_receives_changes_signed_with_its_own_secret(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    url = receiver.url()
    made = subscribe(hooks_api, key, url, events=CHANGES)
    assert made["id"].startswith("sub_") and made["secret"].startswith("whsec_")
    assert made["events"] == CHANGES and made["calendarIds"] is None
    assert made["minutesBefore"] is None and made["status"] == "active"

    created = hooks_api.post(EVENTS, json=EVENT, headers=bearer(key)).json()
    hooks_api.patch(f"{EVENTS}/{created['id']}", json={"title": "Standup!"}, headers=bearer(key))
    got = wait_for(lambda: len(receiver.received(url)) >= 2 and receiver.received(url))
    payloads = [verify_both(r, made["secret"]) for r in got]
    assert [p["type"] for p in payloads] == CHANGES[:2]
    assert payloads[0]["data"]["event"] == created
    for request, payload in zip(got, payloads, strict=True):
        assert request.headers["webhook-id"] == payload["id"]
    listed = hooks_api.get(SUBSCRIPTIONS, headers=bearer(key))
    assert listed.status_code == 200
    assert listed.json() == {"subscriptions": [{k: v for k, v in made.items() if k != "secret"}]}


def test_a_subscription_and_the_owners_webhook_each_get_the_change_with_its_own_id(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    own_url, sub_url = receiver.url(), receiver.url()
    own_secret = set_webhook(hooks_db, owner, own_url)
    made = subscribe(hooks_api, key, sub_url)
    hooks_api.post(EVENTS, json=EVENT, headers=bearer(key))
    [mine] = wait_for(lambda: receiver.received(own_url))
    [theirs] = wait_for(lambda: receiver.received(sub_url))
    ours, subscribed = verify_both(mine, own_secret), verify_both(theirs, made["secret"])
    assert ours["data"] == subscribed["data"] and ours["type"] == subscribed["type"]
    assert subscribed["id"].startswith(ours["id"] + ".") and len(subscribed["id"]) == 40


def test_a_one_calendar_key_hears_only_of_its_calendar_and_calendar_ids_narrow_further(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    factory = Factory(hooks_db)
    owner = make_owner(hooks_db)
    work = factory.calendar(owner, name="Work")
    _, everything = factory.key(owner)
    _, work_key = factory.key(owner, calendar_id=work)
    work_url, default_url = receiver.url(), receiver.url()
    subscribe(hooks_api, work_key, work_url)
    subscribe(hooks_api, everything, default_url, calendarIds=[owner.default_calendar_id])

    in_default = hooks_api.post(EVENTS, json=EVENT, headers=bearer(everything)).json()
    in_work = hooks_api.post(
        EVENTS, json={**EVENT, "calendarId": work}, headers=bearer(everything)
    ).json()
    [to_work] = wait_for(lambda: receiver.received(work_url))
    [to_default] = wait_for(lambda: receiver.received(default_url))
    assert json.loads(to_work.body)["data"]["event"]["id"] == in_work["id"]
    assert json.loads(to_default.body)["data"]["event"]["id"] == in_default["id"]


def test_a_freebusy_key_may_not_subscribe(hooks_api: httpx.Client, hooks_db: Database) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner, permission="freebusy")
    for answer in (
        hooks_api.post(SUBSCRIPTIONS, json={"url": "https://x.example/"}, headers=bearer(key)),
        hooks_api.get(SUBSCRIPTIONS, headers=bearer(key)),
    ):
        assert answer.status_code == 401
        assert answer.json()["code"] == "insufficient_scope"


def test_a_revoked_keys_subscriptions_get_nothing_queued_from_then_on(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    factory = Factory(hooks_db)
    owner = make_owner(hooks_db)
    key_id, key = factory.key(owner)
    _, other = factory.key(owner)
    made = subscribe(hooks_api, key, receiver.url())
    hooks_api.post(EVENTS, json=EVENT, headers=bearer(other))
    assert len(sent_to(hooks_db, owner.id, made["id"])) == 1
    hooks_db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    hooks_api.post(EVENTS, json=EVENT, headers=bearer(other))
    assert len(sent_to(hooks_db, owner.id, made["id"])) == 1


def test_a_subscription_can_be_deleted_by_its_key_only(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    factory = Factory(hooks_db)
    owner = make_owner(hooks_db)
    _, key = factory.key(owner)
    _, other = factory.key(owner)
    made = subscribe(hooks_api, key, receiver.url())
    item = f"{SUBSCRIPTIONS}/{made['id']}"
    refused = hooks_api.delete(item, headers=bearer(other))
    assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    assert hooks_api.delete(item, headers=bearer(key)).status_code == 204
    assert hooks_api.delete(item, headers=bearer(key)).status_code == 404
    assert hooks_api.get(SUBSCRIPTIONS, headers=bearer(key)).json() == {"subscriptions": []}
    hooks_api.post(EVENTS, json=EVENT, headers=bearer(key))
    assert sent_to(hooks_db, owner.id, made["id"]) == []


def test_the_test_operation_sends_a_signed_sample_of_each_type(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    url = receiver.url()
    types = ["calendar.event.created", "calendar.event.starting", "calendar.event.ended"]
    made = subscribe(hooks_api, key, url, events=types, minutesBefore=[15, 5])
    assert made["minutesBefore"] == [5, 15]
    answer = hooks_api.post(f"{SUBSCRIPTIONS}/{made['id']}/test", headers=bearer(key))
    assert answer.status_code == 202, answer.text
    assert [d["eventType"] for d in answer.json()["deliveries"]] == types
    got = wait_for(lambda: len(receiver.received(url)) >= 3 and receiver.received(url))
    payloads = sorted((verify_both(r, made["secret"]) for r in got), key=lambda p: p["type"])
    assert [p["type"] for p in payloads] == sorted(types)
    assert all(p["data"]["test"] is True for p in payloads)
    starting = next(p for p in payloads if p["type"] == "calendar.event.starting")
    assert {"event", "minutesBefore", "scheduledFor", "late"} <= set(starting["data"])


def test_a_key_has_at_most_25_subscriptions(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    for _ in range(subscriptions.MOST_PER_KEY):
        subscribe(hooks_api, key, receiver.url())
    answer = hooks_api.post(SUBSCRIPTIONS, json={"url": receiver.url()}, headers=bearer(key))
    assert answer.status_code == 400
    problem = answer.json()
    assert problem["code"] == "subscription_limit" and "25" in problem["detail"]


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"events": ["calendar.event.moved"]}, "events", "unknown types"),
        ({"events": []}, "events", "non-empty"),
        ({"minutesBefore": [10081]}, "minutesBefore", "0 to 10080"),
        ({"minutesBefore": [-1]}, "minutesBefore", "0 to 10080"),
        ({"minutesBefore": [15, 15]}, "minutesBefore", "twice"),
        ({"minutesBefore": list(range(11))}, "minutesBefore", "at most 10"),
        ({"minutesBefore": [1.5]}, "minutesBefore", "whole numbers"),
        ({"minutesBefore": [True]}, "minutesBefore", "whole numbers"),
        ({"minutesBefore": "15"}, "minutesBefore", "list"),
        (
            {"events": ["calendar.event.ended"], "minutesBefore": [5]},
            "minutesBefore",
            "calendar.event.starting",
        ),
        ({"calendarIds": ["cal_nowhere"]}, "calendarIds", "cal_nowhere"),
        ({"colour": "red"}, "colour", "not a known field"),
        ({"url": ""}, "url", "absolute https"),
        ({"url": "https://a\u0000b.example/"}, "url", "NUL"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    hooks_api: httpx.Client,
    hooks_db: Database,
    receiver: Receiver,
    fields: dict[str, Any],
    field: str,
    words: str,
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    answer = hooks_api.post(
        SUBSCRIPTIONS, json={"url": receiver.url(), **fields}, headers=bearer(key)
    )
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["code"] == "validation_error"
    [error] = problem["errors"]
    assert error["field"] == field and words in error["message"]


def test_a_one_calendar_key_naming_another_calendar_is_a_400_on_calendar_ids(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    factory = Factory(hooks_db)
    owner = make_owner(hooks_db)
    work = factory.calendar(owner, name="Work")
    _, key = factory.key(owner, calendar_id=work)
    answer = hooks_api.post(
        SUBSCRIPTIONS,
        json={"url": receiver.url(), "calendarIds": [owner.default_calendar_id]},
        headers=bearer(key),
    )
    assert answer.status_code == 400
    [error] = answer.json()["errors"]
    assert error["field"] == "calendarIds"
    assert subscribe(hooks_api, key, receiver.url(), calendarIds=["Work"])["calendarIds"] == [work]


def _one_address_of_each_class() -> list[str]:
    """A literal address of every class the target rules refuse (``webhook_targets``)."""
    networks = [n for n, _ in webhook_targets._V4_CLASSES + webhook_targets._V6_CLASSES]
    hosts = []
    for network in networks:
        address = network.network_address + (1 if network.num_addresses > 1 else 0)
        hosts.append(f"[{address}]" if address.version == 6 else str(address))
    return hosts


def test_every_address_class_and_plain_http_are_refused_when_subscribing(
    hooks_config: Config, hooks_db: Database
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    deployed = dataclasses.replace(hooks_config, webhook_allow_local=False)
    urls = [f"https://{host}/hook" for host in _one_address_of_each_class()]
    with own_server(deployed) as server, httpx.Client(base_url=server.url, timeout=30) as api:
        for url in [*urls, "http://hooks.example.com/hook"]:
            answer = api.post(SUBSCRIPTIONS, json={"url": url}, headers=bearer(key))
            assert answer.status_code == 400, (url, answer.text)
            assert answer.json()["code"] == "webhook_target_refused", url
        assert api.get(SUBSCRIPTIONS, headers=bearer(key)).json() == {"subscriptions": []}


async def test_a_subscriptions_delivery_is_refused_at_send_time_when_its_host_turns_private(
    quiet_db: Database, hooks_config: Config
) -> None:
    owner = make_owner(quiet_db)
    record, _ = Factory(quiet_db).key_record(owner)
    principal = keys.Principal(
        key_id=record["id"],
        user_id=owner.id,
        permission="write",
        calendar_id=None,
        expires_at=utcnow() + timedelta(days=1),
    )
    public = webhook_targets.check_endpoint_url(
        "https://hooks.example.com/in", allow_local=False, resolve=lambda _: ["93.184.216.34"]
    )
    made = quiet_db.call(
        subscriptions.create_subscription,
        principal=principal,
        body={"url": public.url},
        target=public,
        now=utcnow(),
    )
    quiet_db.call(
        events.create_event,
        principal=principal,
        data=EventCreate(title="Standup", starts_at=EVENT["startsAt"], ends_at=EVENT["endsAt"]),
        now=utcnow(),
    )
    seen: list[httpx.Request] = []

    def record_request(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    deployed = dataclasses.replace(hooks_config, webhook_allow_local=False)
    async with httpx.AsyncClient(transport=httpx.MockTransport(record_request)) as client:
        dispatcher = Dispatcher(quiet_db, deployed, client, resolver=lambda _: ["10.9.8.7"])
        await dispatcher.drain()
    [sent] = sent_to(quiet_db, owner.id, made["id"])
    assert sent["status"] in ("retrying", "failed")
    assert sent["lastError"].startswith("target refused") and "private" in sent["lastError"]
    assert seen == []


def test_an_event_starting_soon_reaches_the_subscription_signed_when_it_starts(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    owner = make_owner(hooks_db)
    _, key = Factory(hooks_db).key(owner)
    url = receiver.url()
    made = subscribe(hooks_api, key, url, events=["calendar.event.starting"])
    start = (utcnow() + timedelta(seconds=5)).replace(microsecond=0)
    body = {
        "title": "Soon",
        "startsAt": start.isoformat().replace("+00:00", "Z"),
        "endsAt": (start + timedelta(minutes=5)).isoformat().replace("+00:00", "Z"),
    }
    event = hooks_api.post(EVENTS, json=body, headers=bearer(key)).json()
    [request] = wait_for(lambda: receiver.received(url))
    payload = verify_both(request, made["secret"])
    assert payload["type"] == "calendar.event.starting"
    assert payload["data"]["event"] == event
    assert payload["data"]["minutesBefore"] == 0
    assert payload["data"]["scheduledFor"] == body["startsAt"]
    assert isinstance(payload["data"]["late"], int)


def _revoke(db: Database, user_id: str, key_id: str) -> None:
    db.call(keys.revoke_key, user_id=user_id, key_id=key_id, now=utcnow())


def _expire(db: Database, user_id: str, key_id: str) -> None:
    db.call(
        lambda conn: conn.execute(
            keys.keys_t.update()
            .where(keys.keys_t.c.id == key_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    )


@pytest.mark.parametrize(
    ("end", "why"),
    [
        (_revoke, "the subscription's key was revoked"),
        (_expire, "the subscription's key has expired"),
    ],
)
async def test_a_delivery_queued_before_its_key_was_revoked_or_expired_is_failed_not_sent(
    quiet_db: Database, hooks_config: Config, end: Any, why: str
) -> None:
    owner = make_owner(quiet_db)
    record, _ = Factory(quiet_db).key_record(owner)
    principal = keys.Principal(
        key_id=record["id"],
        user_id=owner.id,
        permission="write",
        calendar_id=None,
        expires_at=utcnow() + timedelta(days=1),
    )
    target = webhook_targets.check_endpoint_url(
        "http://127.0.0.1:9/hook", allow_local=True, resolve=webhook_targets.system_resolve
    )
    made = quiet_db.call(
        subscriptions.create_subscription,
        principal=principal,
        body={"url": target.url},
        target=target,
        now=utcnow(),
    )
    quiet_db.call(
        events.create_event,
        principal=principal,
        data=EventCreate(title="Standup", starts_at=EVENT["startsAt"], ends_at=EVENT["endsAt"]),
        now=utcnow(),
    )
    end(quiet_db, owner.id, record["id"])
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(200))
    async with httpx.AsyncClient(transport=transport) as client:
        await Dispatcher(quiet_db, hooks_config, client).drain()
    [failed] = sent_to(quiet_db, owner.id, made["id"])
    assert failed["status"] == "failed" and failed["lastError"] == why
    assert seen == []
