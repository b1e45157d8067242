"""The webhook page: the URL, its signing secret (shown once), its time triggers, test events
and deliveries; and every subscription of the owner's keys (which key, its deliveries, delete).

Built on the webhook core (``webhook_config``, every function scoped by the owner's id) and its
target rules (``webhook_targets.check_endpoint_url``), exactly as the CLI uses them: a URL is
checked (shape, scheme, every resolved address public) before it is stored, and a refusal is
shown with the rule's own message.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import (
    account,
    form,
    owner_page,
    owner_post,
    render,
    see_other,
)
from calendar_service.delivery import subscriptions, webhook_targets
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.delivery.mail import sending as mail_outbox
from calendar_service.delivery.triggers import firing
from calendar_service.delivery.triggers.kinds import parse_offsets
from calendar_service.platform.errors import NotFound, ValidationFailed, WebhookTargetRefused
from calendar_service.platform.timeutil import utcnow

DELIVERIES_SHOWN = 50
NOTICES = {
    "test-sent": "Test event queued: it is sent within seconds and listed below.",
    "redelivered": "The delivery is queued to be sent again now.",
    "enabled": "The webhook is enabled again.",
    "enabled-resent": "The webhook is enabled again, and its failed deliveries are being re-sent.",
    "triggers-set": "Time triggers saved: they are planned within seconds.",
    "subscription-deleted": "The subscription is deleted: nothing more is sent to it.",
    "subscription-enabled": "The subscription is enabled again.",
}


def _page_data(conn: Connection, *, user_id: str) -> dict[str, Any]:
    endpoint = webhook_config.find_endpoint(conn, user_id=user_id)
    skipped = 0
    if endpoint is not None:
        skipped = firing.skipped_count(conn, user_id=user_id, endpoint_ids=[endpoint["id"]])
    return {
        "endpoint": endpoint,
        "deliveries": webhook_config.list_deliveries(conn, user_id=user_id, limit=DELIVERIES_SHOWN),
        "skipped": skipped,
        "subscriptions": subscriptions.owner_subscriptions(conn, user_id=user_id, now=utcnow()),
        "mail": mail_outbox.list_mail(conn, user_id=user_id, limit=DELIVERIES_SHOWN),
    }


async def _webhook_page(
    request: Request, owner: OwnerSessionInfo, refused: tuple[str, str, str] | None = None
) -> Response:
    """The page; ``refused``: a form the core refused (400), its input's name (``url`` or
    ``minutes_before``), what was typed in it and the error shown beside it."""
    data = await account(request).services.db.run(_page_data, user_id=owner.user_id)
    endpoint = data["endpoint"] or {}
    values = {
        "url": endpoint.get("url", ""),
        "minutes_before": ", ".join(str(m) for m in endpoint.get("minutesBefore") or []),
    }
    errors: dict[str, str] = {}
    if refused is not None:
        name, typed, error = refused
        values[name] = typed
        errors[name] = error
    return render(
        request,
        "webhook.html",
        {
            **data,
            "section": "webhook",
            "url": values["url"],
            "error": errors.get("url"),
            "triggers_value": values["minutes_before"],
            "triggers_error": errors.get("minutes_before"),
            "signature_header": account(request).services.config.signature_header,
            "notice": NOTICES.get(request.query_params.get("notice", "")),
        },
        status_code=200 if refused is None else 400,
    )


def _said(exc: ValidationFailed) -> str:
    return "; ".join(e["message"] for e in exc.errors) or exc.message


@owner_page
async def webhook_page(request: Request, owner: OwnerSessionInfo) -> Response:
    return await _webhook_page(request, owner)


def _secret_page(
    request: Request, endpoint: dict[str, Any], secret: str, *, rotated: bool
) -> Response:
    # Rendered in the POST's own answer, never stored by this page nor redirected to.
    return render(
        request,
        "webhook_secret.html",
        {
            "section": "webhook",
            "endpoint": endpoint,
            "secret": secret,
            "rotated": rotated,
            "signature_header": account(request).services.config.signature_header,
        },
        status_code=201 if not rotated else 200,
    )


@owner_page
async def set_url(request: Request, owner: OwnerSessionInfo) -> Response:
    url = str((await form(request)).get("url", "")).strip()
    config = account(request).services.config
    try:
        # Resolves the host (on a thread: it blocks): every address must be public (unless
        # local targets are allowed).
        target = await asyncio.to_thread(
            webhook_targets.check_endpoint_url,
            url,
            allow_local=config.webhook_allow_local,
            resolve=webhook_targets.system_resolve,
        )
        endpoint, secret = await account(request).services.db.run(
            webhook_config.set_endpoint, user_id=owner.user_id, target=target, now=utcnow()
        )
    except ValidationFailed as exc:
        return await _webhook_page(request, owner, ("url", url, f"The URL {_said(exc)}."))
    except WebhookTargetRefused as exc:
        return await _webhook_page(request, owner, ("url", url, exc.message))
    return _secret_page(request, endpoint, secret, rotated=False)


@owner_page
async def rotate(request: Request, owner: OwnerSessionInfo) -> Response:
    endpoint, secret = await account(request).services.db.run(
        webhook_config.rotate_secret, user_id=owner.user_id, now=utcnow()
    )
    return _secret_page(request, endpoint, secret, rotated=True)


@owner_page
async def enable(request: Request, owner: OwnerSessionInfo) -> Response:
    resend = bool((await form(request)).get("redeliver_failed"))
    await account(request).services.db.run(
        webhook_config.enable_endpoint,
        user_id=owner.user_id,
        now=utcnow(),
        redeliver_failed=resend,
    )
    return see_other(request, "/webhook", notice="enabled-resent" if resend else "enabled")


@owner_page
async def delivery_page(request: Request, owner: OwnerSessionInfo) -> Response:
    delivery = await account(request).services.db.run(
        webhook_config.get_delivery,
        user_id=owner.user_id,
        delivery_id=request.path_params["delivery_id"],
    )
    payload = orjson.dumps(orjson.loads(delivery["payload"]), option=orjson.OPT_INDENT_2)
    return render(
        request,
        "webhook_delivery.html",
        {"section": "webhook", "delivery": delivery, "payload": payload.decode()},
    )


@owner_page
async def set_triggers(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    typed = str(data.get("minutes_before", "")).strip()
    try:
        await account(request).services.db.run(
            webhook_config.set_time_triggers,
            user_id=owner.user_id,
            minutes_before=parse_offsets(typed) if typed else None,
            ended=bool(data.get("ended")),
            now=utcnow(),
        )
    except ValidationFailed as exc:
        refused = ("minutes_before", typed, f"Minutes before {_said(exc)}.")
        return await _webhook_page(request, owner, refused)
    return see_other(request, "/webhook", notice="triggers-set")


def _subscription_data(conn: Connection, *, user_id: str, subscription_id: str) -> dict[str, Any]:
    row = subscriptions.owner_subscription(conn, user_id=user_id, subscription_id=subscription_id)
    if row.status == subscriptions.DELETED:
        raise NotFound(f"No subscription {subscription_id[:100]!r} of this owner's keys.")
    found = subscriptions.owner_subscriptions(conn, user_id=user_id, now=utcnow())
    return {
        "sub": next(s for s in found if s["id"] == row.id),
        "deliveries": webhook_config.list_deliveries(
            conn, user_id=user_id, endpoint_id=row.id, limit=DELIVERIES_SHOWN
        ),
    }


@owner_page
async def subscription_page(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await account(request).services.db.run(
        _subscription_data,
        user_id=owner.user_id,
        subscription_id=request.path_params["subscription_id"],
    )
    return render(request, "webhook_subscription.html", {"section": "webhook", **data})


def routes() -> list[BaseRoute]:
    subscription = "/webhook/subscriptions/{subscription_id}"
    return [
        Route("/webhook", webhook_page, methods=["GET"]),
        Route("/webhook", set_url, methods=["POST"]),
        Route("/webhook/rotate", rotate, methods=["POST"]),
        owner_post(
            "/webhook/test", webhook_config.send_test_event, back="/webhook", notice="test-sent"
        ),
        Route("/webhook/enable", enable, methods=["POST"]),
        Route("/webhook/triggers", set_triggers, methods=["POST"]),
        Route(subscription, subscription_page, methods=["GET"]),
        owner_post(
            subscription + "/delete",
            subscriptions.owner_delete_subscription,
            back="/webhook",
            notice="subscription-deleted",
        ),
        owner_post(
            subscription + "/enable",
            subscriptions.owner_enable_subscription,
            back="/webhook",
            notice="subscription-enabled",
        ),
        Route("/webhook/deliveries/{delivery_id}", delivery_page, methods=["GET"]),
        owner_post(
            "/webhook/deliveries/{delivery_id}/redeliver",
            webhook_config.redeliver,
            back="/webhook",
            notice="redelivered",
        ),
    ]
