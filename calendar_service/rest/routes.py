"""``/api/v1/calendar/events`` and ``/api/v1/calendar/changes``: thin handlers over the core's
operations, through ``gateway.perform``: each picks its operation
(``calendar_service.operations.catalog``) and translates the request into its arguments and its
result into the answer; the key, its permission and scope, the rate limit and the call history are
the core's. Every write answers with its change's id (``Calendar-Change-Id``) and takes
``?dryRun=true``; a write that waits for the owner's approval answers 202 with its proposal
(``Location``: ``/api/v1/calendar/proposals/{id}``, which the key polls)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import idempotency
from calendar_service.access.keys import WRITE
from calendar_service.asgi.context import (
    Query,
    bearer_token,
    call_context,
    header,
    key_in_url,
    read_json_body,
    record_refusal,
    service_key,
    services,
)
from calendar_service.asgi.responses import Encoded
from calendar_service.calendar.events.shapes import dumps
from calendar_service.interop.ical.reading import MAX_BYTES as MAX_ICS_BYTES
from calendar_service.interop.ical.reading import ReadFile, read_file
from calendar_service.journal.invitations import MailPolicy
from calendar_service.operations import catalog as operations
from calendar_service.operations.catalog import Operation
from calendar_service.operations.gateway import Arguments, Outcome, finished, may_perform, perform
from calendar_service.platform import service_secrets
from calendar_service.platform.errors import (
    CalendarError,
    KeyInUrl,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
)
from calendar_service.platform.inputs import NUL, nul_errors, parse_flag, parse_json_body
from calendar_service.platform.timeutil import utcnow
from calendar_service.rest import parameters

EVENTS_PATH = "/api/v1/calendar/events"
FREE_BUSY_PATH = "/api/v1/calendar/freeBusy"
FREE_TIME_PATH = "/api/v1/calendar/freeTime"
IMPORT_PATH = EVENTS_PATH + "/import"
CHANGES_PATH = "/api/v1/calendar/changes"
PROPOSALS_PATH = "/api/v1/calendar/proposals"
RULES_PATH = "/api/v1/calendar/rules"
ICS_MEDIA_TYPE = "text/calendar"
CHANGE_ID_HEADER = "Calendar-Change-Id"


async def _perform(
    request: Request,
    op: Operation,
    args: Arguments,
    *,
    refused: CalendarError | None = None,
    present: Callable[[Any], Any] | None = None,
    status: int | None = None,
    long: bool = False,
    query: Query | None = None,
) -> Outcome[Any]:
    """``gateway.perform`` for this request: its key, its facts, what the URL refuses (before
    the permission, once the key is known, so the refusal is in its history), ``present`` and
    ``status`` as ``perform`` takes them; ``long``: off the event loop whatever the backend
    (``Database.run_off_loop``), for work that takes seconds (an import). ``query``: the
    request's query parameters, if the handler read them already. A write's ``?dryRun=true``
    makes it a dry run."""
    svc = services(request)
    if query is None:
        query = Query(request.scope["query_string"])
    leaked = key_in_url(request, query)
    if leaked is not None:
        return await _refuse_key_in_url(request, op.name, *leaked)
    run = svc.db.run_off_loop if long else svc.db.run_grouped
    refusal = _nul_in_url(request, query) or _unknown_in_url(query, op) or refused
    dry_run = False
    if op.needs == WRITE and "dryRun" in query.last:
        try:
            dry_run = parse_flag("dryRun", query.last["dryRun"])
        except ValidationFailed as exc:
            refusal = refusal or exc
    outcome = await run(
        perform,
        secret=bearer_token(request),
        ctx=call_context(request, op.name),
        op=op,
        args=args,
        refused=refusal,
        limiter=svc.limiter,
        present=present,
        status=status,
        dry_run=dry_run,
        proposal_ttl=svc.config.proposal_ttl,
    )
    return await finished(outcome)  # what the operation left for after the transaction


_PATH_FIELDS = {
    "event_id": "eventId",
    "subscription_id": "subscriptionId",
    "change_id": "changeId",
    "proposal_id": "proposalId",
}


def _nul_in_url(request: Request, query: Query) -> ValidationFailed | None:
    """A 400 for path ids and query parameters with NUL in them (see ``inputs``): such an id
    can never exist, and PostgreSQL could not even be asked about it."""
    # bytes.find, not ``in``: ``in`` first tries the needle as an int, raising and dropping a
    # TypeError (~2,000 instructions) whenever it is bytes.
    if request.scope["query_string"].find(b"%00") < 0 and NUL not in request.scope["path"]:
        return None
    path = {_PATH_FIELDS.get(k, k): v for k, v in request.path_params.items()}
    errors = nul_errors(path) + nul_errors(query.items)
    return ValidationFailed(errors) if errors else None


def _unknown_in_url(query: Query, op: Operation) -> CalendarError | None:
    """A 400 for query parameters the operation does not take (``parameters.QUERY``)."""
    if not query.items or parameters.QUERY[op.name].keys() >= query.last.keys():
        return None
    return parameters.unknown(op.name, query.last)


async def _refuse_key_in_url(
    request: Request, operation: str, parameter: str, value: str
) -> NoReturn:
    """400 for a key in the URL. If it is a real key (in the header or the URL), the refused
    call goes into that key's history, so its owner can see the key may have leaked."""
    await record_refusal(
        request,
        services(request),
        KeyInUrl(parameter),
        operation=operation,
        transport="rest",
        fallback_secret=value,
    )


_NO_STORE = (b"cache-control", b"no-store")
_CHANGE_ID = CHANGE_ID_HEADER.lower().encode("latin-1")


def _respond(outcome: Outcome[Any], body: Any, **extra_headers: str) -> Response:
    """The answer: ``body`` (JSON, or already encoded) with the outcome's status and rate."""
    headers = outcome.rate.raw_headers() if outcome.rate else []
    headers.append(_NO_STORE)
    if outcome.change_id is not None:
        headers.append((_CHANGE_ID, outcome.change_id.encode("latin-1")))
    if outcome.proposal_id is not None:  # 202: the write waits for the owner's approval
        location = f"{PROPOSALS_PATH}/{outcome.proposal_id}"
        headers.append((b"location", location.encode("latin-1")))
    for name, value in extra_headers.items():
        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    if outcome.status == 204:
        return Encoded(b"", 204, headers, media_type=None)
    if not isinstance(body, bytes):  # not encoded yet
        body = orjson.dumps(body)
    return Encoded(body, outcome.status, headers)


async def list_calendar_events(request: Request) -> Response:
    query = Query(request.scope["query_string"])
    params = query.last
    args: dict[str, Any] = {
        "time_min": params.get("timeMin"),
        "time_max": params.get("timeMax"),
        "limit": params.get("limit"),
        "page_token": params.get("pageToken"),
        "token_key": await service_key(request, service_secrets.page_token_key),
    }
    if "singleEvents" in params:  # the hot path passes no more than it needs
        args["single_events"] = params["singleEvents"]
    if "calendarIds" in params:  # repeated, or comma-separated: the core reads both
        args["calendar_ids"] = query.getlist("calendarIds")
    if "q" in params:
        args["q"] = params["q"]
    if "syncToken" in params:
        args["sync_token"] = params["syncToken"]
        args["sync_retention_days"] = services(request).config.sync_retention_days
    # Encoded in the transaction, while the list is fresh in the cache: only the bytes wait
    # for the group commit (db.Database.run_grouped), not some 600 objects.
    outcome = await _perform(request, operations.LIST, args, present=dumps, query=query)
    return _respond(outcome, outcome.value)


async def _on_item(request: Request, op: Operation, name: str, *, answer: bool) -> Response:
    """``op`` on the one item the path names (``name``: the path parameter, and the core's
    argument), now: its answer the core's value (``answer``) or none (204)."""
    item = request.path_params[name]

    def args() -> dict[str, Any]:
        return {name: item, "now": utcnow()}

    outcome = await _perform(request, op, args)
    return _respond(outcome, outcome.value if answer else None)


async def _body(request: Request) -> tuple[bytes, CalendarError | None]:
    """The raw body, or why it is refused (too large, not JSON): the body is read before the
    key is checked, and its error is recorded with the key (``perform``'s ``refused``)."""
    try:
        return await read_json_body(request), None
    except CalendarError as exc:
        return b"", exc


async def _mail(request: Request) -> dict[str, Any]:
    """``sendUpdates`` and what sending takes (``journal.invitations``), when it is given."""
    if request.scope["query_string"].find(b"sendUpdates") < 0:  # the hot path: none
        return {}
    send = request.query_params.get("sendUpdates")
    if send is None:
        return {}
    key = await service_key(request, service_secrets.reply_link_key)
    return {"send_updates": send, "mail": MailPolicy.of(services(request).config, key)}


_IDEMPOTENCY_KEY = idempotency.HEADER.lower().encode("latin-1")


async def create_calendar_event(request: Request) -> Response:
    # Not request.headers: its Headers object, and a KeyError raised and caught without one.
    idem_key = header(request.scope, _IDEMPOTENCY_KEY)
    raw, refused = await _body(request)
    # The hot path (no sendUpdates) awaits nothing more.
    mail = await _mail(request) if request.scope["query_string"].find(b"sendUpdates") >= 0 else {}

    def args() -> dict[str, Any]:
        return {
            "body": parse_json_body(raw),
            "now": utcnow(),
            "idempotency_key": idem_key,
            **mail,
        }

    outcome = await _perform(request, operations.CREATE, args, refused=refused)
    if outcome.status in (200, 202):  # a dry run's change, or the proposal that waits
        if outcome.replayed:  # the proposal of the first request with this Idempotency-Key
            return _respond(outcome, outcome.value, **{"Idempotent-Replayed": "true"})
        return _respond(outcome, outcome.value)
    event, replayed = outcome.value
    base = services(request).config.base_url
    headers = {"Location": f"{base}{EVENTS_PATH}/{event['id']}"}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return _respond(outcome, event, **headers)


async def get_calendar_event(request: Request) -> Response:
    args = {"event_id": request.path_params["event_id"]}
    outcome = await _perform(request, operations.GET, args)
    return _respond(outcome, outcome.value)


async def update_calendar_event(request: Request) -> Response:
    event_id = request.path_params["event_id"]
    raw, refused = await _body(request)
    mail = await _mail(request)

    def args() -> dict[str, Any]:
        return {
            "event_id": event_id,
            "body": parse_json_body(raw),
            "now": utcnow(),
            "scope": request.query_params.get("scope"),
            **mail,
        }

    outcome = await _perform(request, operations.UPDATE, args, refused=refused)
    return _respond(outcome, outcome.value)


async def delete_calendar_event(request: Request) -> Response:
    event_id = request.path_params["event_id"]
    mail = await _mail(request)

    def args() -> dict[str, Any]:
        scope = request.query_params.get("scope")
        return {"event_id": event_id, "now": utcnow(), "scope": scope, **mail}

    outcome = await _perform(request, operations.DELETE, args, status=204)
    return _respond(outcome, outcome.value)


async def _availability(request: Request, op: Operation) -> Response:
    raw, refused = await _body(request)

    def args() -> dict[str, Any]:
        return {"body": parse_json_body(raw)}

    outcome = await _perform(request, op, args, refused=refused)
    return _respond(outcome, outcome.value)


async def query_free_busy(request: Request) -> Response:
    return await _availability(request, operations.FREE_BUSY)


async def find_free_time(request: Request) -> Response:
    return await _availability(request, operations.FREE_TIME)


async def _ics_body(request: Request) -> tuple[bytes, CalendarError | None]:
    """The raw iCalendar body (``text/calendar``, at most ``reading.MAX_BYTES``), or why it
    is refused, recorded with the key as ``_body`` does."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    too_large = PayloadTooLarge(
        f"The body is larger than {MAX_ICS_BYTES // (1024 * 1024)} MiB: split the file (for "
        "example by year) and import the parts one after another."
    )
    if media != ICS_MEDIA_TYPE:
        return b"", UnsupportedMediaType(
            f"Send the .ics file as the body with 'Content-Type: {ICS_MEDIA_TYPE}' "
            f"(got {media or 'none'!r})."
        )
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_ICS_BYTES:
        return b"", too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_ICS_BYTES:
            return b"", too_large
        chunks.append(chunk)
    return b"".join(chunks), None


async def import_calendar_events(request: Request) -> Response:
    if request.method != "POST":  # not an event named "import": the path is the import's
        raise HTTPException(405, headers={"Allow": "POST, OPTIONS"})
    raw, refused = await _ics_body(request)
    parsed: ReadFile | None = None
    # Only a key that may import gets the file parsed (that costs CPU); ``perform`` decides.
    may = refused is None and await services(request).db.run(
        may_perform, secret=bearer_token(request), op=operations.IMPORT
    )
    if may:
        try:  # parsing takes a while for a big file: off the event loop, before perform
            parsed = await run_in_threadpool(read_file, raw)
        except CalendarError as exc:  # refused once the key is known, as a bad body is
            refused = exc
    params = request.query_params

    def args() -> dict[str, Any]:
        return {
            "data": parsed if parsed is not None else raw,
            "now": utcnow(),
            # Empty means not given, as for the list's parameters.
            "calendar_id": params.get("calendarId") or None,
            "calendar_name": params.get("calendar") or None,
        }

    # Applying a big file takes seconds: off the event loop too.
    outcome = await _perform(request, operations.IMPORT, args, refused=refused, long=True)
    outcome.change_id = None  # one change an event: listChanges lists them
    return _respond(outcome, outcome.value)


import_calendar_events.allowed_methods = ["POST"]  # type: ignore[attr-defined]


async def list_changes(request: Request) -> Response:
    params = request.query_params
    args: dict[str, Any] = {
        "since": params.get("since"),
        "event_id": params.get("eventId") or None,
        "calendar_id": params.get("calendarId") or None,
        "limit": params.get("limit"),
        "page_token": params.get("pageToken"),
        "token_key": await service_key(request, service_secrets.page_token_key),
    }
    outcome = await _perform(request, operations.LIST_CHANGES, args)
    return _respond(outcome, outcome.value)


async def undo_change(request: Request) -> Response:
    change_id = request.path_params["change_id"]

    def args() -> dict[str, Any]:
        force = parse_flag("force", request.query_params.get("force"))
        return {"change_id": change_id, "now": utcnow(), "force": force}

    outcome = await _perform(request, operations.UNDO_CHANGE, args)
    return _respond(outcome, outcome.value)


async def get_proposal(request: Request) -> Response:
    return await _on_item(request, operations.GET_PROPOSAL, "proposal_id", answer=True)


async def get_scheduling_rules(request: Request) -> Response:
    outcome = await _perform(request, operations.GET_RULES, {})
    return _respond(outcome, outcome.value)


_ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def routes() -> list[BaseRoute]:
    return [
        Route(EVENTS_PATH, list_calendar_events, methods=["GET"]),
        Route(EVENTS_PATH, create_calendar_event, methods=["POST"]),
        # Every method: the import's path is not an event id (``asgi.methods``).
        Route(IMPORT_PATH, import_calendar_events, methods=list(_ALL_METHODS)),
        Route(EVENTS_PATH + "/{event_id}", get_calendar_event, methods=["GET"]),
        Route(EVENTS_PATH + "/{event_id}", update_calendar_event, methods=["PATCH"]),
        Route(EVENTS_PATH + "/{event_id}", delete_calendar_event, methods=["DELETE"]),
        Route(FREE_BUSY_PATH, query_free_busy, methods=["POST"]),
        Route(FREE_TIME_PATH, find_free_time, methods=["POST"]),
        Route(CHANGES_PATH, list_changes, methods=["GET"]),
        Route(CHANGES_PATH + "/{change_id}/undo", undo_change, methods=["POST"]),
        Route(PROPOSALS_PATH + "/{proposal_id}", get_proposal, methods=["GET"]),
        Route(RULES_PATH, get_scheduling_rules, methods=["GET"]),
    ]
