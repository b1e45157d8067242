"""``/api/v1/webhooks/subscriptions``: a key's webhook subscriptions (REST hooks), through
``gateway.perform`` as every operation (``subscriptions`` in the core does the work).

The URL is checked before the transaction, on a thread (resolving its host blocks), and only
for a key that may subscribe (``gateway.may_perform``): a stranger cannot make the service
resolve names for it. Its refusal is recorded with the key like any bad body."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.asgi.context import bearer_token, services
from calendar_service.delivery import webhook_targets
from calendar_service.delivery.webhook_targets import Target
from calendar_service.operations import catalog as operations
from calendar_service.operations.gateway import may_perform
from calendar_service.platform.errors import CalendarError
from calendar_service.platform.inputs import parse_json_body
from calendar_service.platform.timeutil import utcnow
from calendar_service.rest.routes import _body, _on_item, _perform, _respond

SUBSCRIPTIONS_PATH = "/api/v1/webhooks/subscriptions"


async def _target(request: Request, raw: bytes) -> Target | None:
    """The body's ``url`` as the target rules checked it (``None``: no URL to check)."""
    try:
        body = parse_json_body(raw)
    except CalendarError:
        return None  # the operation reports the body itself
    url = body.get("url") if isinstance(body, dict) else None
    if not isinstance(url, str) or "\x00" in url:
        return None
    config = services(request).config
    return await asyncio.to_thread(
        webhook_targets.check_endpoint_url,
        url,
        allow_local=config.webhook_allow_local,
        resolve=webhook_targets.system_resolve,
    )


async def create_subscription(request: Request) -> Response:
    raw, refused = await _body(request)
    target: Target | None = None
    if refused is None and await services(request).db.run(
        may_perform, secret=bearer_token(request), op=operations.SUBSCRIBE
    ):
        try:
            target = await _target(request, raw)
        except CalendarError as exc:  # refused once the key is known, as a bad body is
            refused = exc

    def args() -> dict[str, Any]:
        return {"body": parse_json_body(raw), "target": target, "now": utcnow()}

    outcome = await _perform(request, operations.SUBSCRIBE, args, refused=refused)
    base = services(request).config.base_url
    location = f"{base}{SUBSCRIPTIONS_PATH}/{outcome.value['id']}"
    return _respond(outcome, outcome.value, Location=location)


async def list_subscriptions(request: Request) -> Response:
    outcome = await _perform(request, operations.LIST_SUBSCRIPTIONS, {})
    return _respond(outcome, outcome.value)


async def delete_subscription(request: Request) -> Response:
    return await _on_item(request, operations.UNSUBSCRIBE, "subscription_id", answer=False)


async def send_samples(request: Request) -> Response:
    return await _on_item(request, operations.TEST_SUBSCRIPTION, "subscription_id", answer=True)


def routes() -> list[BaseRoute]:
    item = SUBSCRIPTIONS_PATH + "/{subscription_id}"
    return [
        Route(SUBSCRIPTIONS_PATH, list_subscriptions, methods=["GET"]),
        Route(SUBSCRIPTIONS_PATH, create_subscription, methods=["POST"]),
        Route(item, delete_subscription, methods=["DELETE"]),
        Route(item + "/test", send_samples, methods=["POST"]),
    ]
