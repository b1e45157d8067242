"""The responses the operations share (``components.responses``): every error, as RFC 9457
problem details with an example of each, and the references an operation lists them by."""

from __future__ import annotations

from typing import Any

from calendar_service.asgi.context import MAX_BODY
from calendar_service.rest.openapi.examples import VALIDATION_PROBLEM, problem_example
from calendar_service.rest.openapi.refs import RESPONSE, SCHEMA, ref_headers

_NAMES = {
    "400": "BadRequest",
    "401": "Unauthorized",
    "403": "Forbidden",
    "404": "NotFound",
    "409": "Conflict",
    "410": "SyncTokenExpired",
    "413": "PayloadTooLarge",
    "415": "UnsupportedMediaType",
    "422": "IdempotencyKeyReused",
    "429": "TooManyRequests",
    "500": "InternalError",
}


def errors(*codes: str) -> dict[str, Any]:
    """An operation's error responses: 400, 401, 429 and 500, and ``codes``, by reference."""
    chosen = ("400", "401", *codes, "429", "500")
    return {code: {"$ref": RESPONSE.format(_NAMES[code])} for code in sorted(chosen)}


def problem_response(description: str, example: Any, *headers: str) -> dict[str, Any]:
    """An error answer: problem details like ``example``, with ``Request-Id`` and ``headers``."""
    return {
        "description": description,
        "headers": ref_headers("Request-Id", *headers),
        "content": {
            "application/problem+json": {
                "schema": {"$ref": SCHEMA.format("Problem")},
                "example": example,
            }
        },
    }


def responses() -> dict[str, Any]:
    return {**_request_errors(), **_body_and_service_errors()}


def _request_errors() -> dict[str, Any]:
    """What is wrong with the request itself: its fields, its key, what it names."""
    return {
        "BadRequest": problem_response(
            "Invalid request: `errors` lists every bad field (`code` `validation_error`), or "
            "every query parameter the operation does not take (`unknown_parameter`: each "
            "operation takes only the parameters listed here). Also `api_key_in_url` for a key "
            "sent in the query string, `duplicate_header` for two Authorization headers, and "
            "`mail_not_configured` for sendUpdates=all on a service without SMTP.",
            VALIDATION_PROBLEM,
        ),
        "Unauthorized": problem_response(
            "The API key is missing, malformed, unknown, expired or revoked, or lacks the "
            "permission or the calendar (`code` says which).",
            problem_example(
                401,
                "insufficient_scope",
                "Insufficient scope",
                "This operation needs a key with calendar:write permission.",
            ),
            "WWW-Authenticate",
        ),
        "Forbidden": problem_response(
            "`sendUpdates=all` from a key (or connected app) not made with --may-invite "
            "(`may_not_invite`): nothing was changed.",
            problem_example(
                403,
                "may_not_invite",
                "May not send invitations",
                "This API key may not send email invitations (sendUpdates=all): nothing was "
                "changed. Send the request with sendUpdates=none, or ask the owner for a key "
                "made with --may-invite (the key page and the consent page offer it).",
            ),
        ),
        "NotFound": problem_response(
            "No such event among those the key can reach (whether it exists elsewhere is not "
            "revealed).",
            problem_example(404, "not_found", "Not found", "No event with this id."),
        ),
        "Conflict": problem_response(
            "A request with this Idempotency-Key is still being processed; retry shortly "
            "(`idempotency_in_flight`). Or, with `ifFree`, the time is not free (`conflict`): "
            "`conflicts` lists the overlapping busy events' times (and their ids and titles).",
            problem_example(
                409,
                "idempotency_in_flight",
                "Request in progress",
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            ),
        ),
        "SyncTokenExpired": problem_response(
            "The sync token is older than the changes kept (CALENDAR_SYNC_RETENTION_DAYS): list "
            "the events again without syncToken; the last page carries a new nextSyncToken.",
            problem_example(
                410,
                "sync_token_expired",
                "Sync token expired",
                "This sync token is older than the 30 days of changes kept; list the events "
                "again without syncToken (the last page carries a new nextSyncToken).",
            ),
        ),
    }


def _body_and_service_errors() -> dict[str, Any]:
    """What is wrong with the body, the key's budget, or the service."""
    return {
        "PayloadTooLarge": problem_response(
            f"The body is larger than {MAX_BODY} bytes (1 MiB).",
            problem_example(
                413,
                "payload_too_large",
                "Payload too large",
                f"The body is larger than {MAX_BODY} bytes (1 MiB).",
            ),
        ),
        "UnsupportedMediaType": problem_response(
            "The body was sent with a media type other than JSON.",
            problem_example(
                415,
                "unsupported_media_type",
                "Unsupported media type",
                "Send the body as JSON with 'Content-Type: application/json' (got 'text/plain').",
            ),
        ),
        "IdempotencyKeyReused": problem_response(
            "This Idempotency-Key was used with a different body within 24 hours.",
            problem_example(
                422,
                "idempotency_key_reused",
                "Idempotency key reused",
                "This Idempotency-Key was already used with a different request body; use a "
                "new key for a new request.",
            ),
        ),
        "TooManyRequests": problem_response(
            "Over this key's request budget (`rate_limited`), or, with sendUpdates=all, over "
            "the recipients it may invite a day (`invite_limit`, CALENDAR_INVITES_PER_DAY: "
            "nothing was changed; no Retry-After).",
            problem_example(
                429,
                "rate_limited",
                "Too many requests",
                "This API key made more than 600 requests in 60 seconds; retry after 2 seconds.",
            ),
            "Retry-After",
            "RateLimit-Policy",
            "RateLimit-Limit",
            "RateLimit-Remaining",
            "RateLimit-Reset",
        ),
        "InternalError": problem_response(
            "Unexpected error on the service's side; quote the Request-Id when reporting it.",
            problem_example(
                500,
                "internal_error",
                "Internal server error",
                "Something went wrong on our side. Quote request id req_0sUIb7OoBX5RSefCq3ZAZf "
                "if you report it.",
            ),
        ),
    }
