"""The MCP server: five calendar tools over the same core functions as the REST API.

Every tool call goes through ``gateway.perform``, exactly like a REST request: the key is
identified and authorized (revoked or expired keys are refused at once), the rate budget is
spent, the core function runs, and the call is recorded in the key's history with transport
``mcp`` and the tool name as operation. The tools hold no rule of their own: they turn the
arguments into the core's input models and the core's results into tool results.

How a call identifies itself (which key, which request) depends on the transport, so it is
given as ``Backend.identify``: the HTTP front reads the key its ASGI wrapper verified, the stdio
front uses the key it was started with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Annotated, Any

import orjson
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from sqlalchemy import Connection

from calendar_service import events, service_secrets
from calendar_service.db import Database
from calendar_service.errors import FieldError, ValidationFailed
from calendar_service.gateway import CallContext, Operation, perform
from calendar_service.inputs import parse_model, parse_partial
from calendar_service.keys import Principal
from calendar_service.models import EventPublic, EventUpdate
from calendar_service.ratelimit import RateLimiter
from calendar_service.timeutil import format_in, utcnow, zone
from mcp_tools import shapes
from mcp_tools.errors import error_result, tool_errors


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes the current tool call: the key's secret and the request facts to record."""

    secret: str | None
    call: CallContext


Identify = Callable[[Context, str], Caller]


@dataclass(frozen=True, slots=True)
class Backend:
    db: Database
    limiter: RateLimiter | None
    identify: Identify
    # The page-token key, read (or made) once: service_secrets.page_token_key.
    _token_key: list[bytes] = field(default_factory=list, init=False, repr=False)

    async def token_key(self) -> bytes:
        if not self._token_key:
            self._token_key.append(await self.db.run(service_secrets.page_token_key, now=utcnow()))
        return self._token_key[0]


INSTRUCTIONS = """\
Tools for one person's calendars, acting with an API key that the person issued. The key decides
what you can reach: all of the person's calendars or one, read-only or read-and-write.
Call listCalendarEvents first: it tells you the current time, the calendars you can reach and
their time zones. Date-times are RFC 3339; write them with an explicit offset
(2026-03-02T09:30:00+01:00). A date-time without an offset is read in the target calendar's time
zone. Events come back with times in their calendar's time zone.
"""

LIST_DOC = """\
List the events of the calendars this key can reach, within a time window.

Call it to answer questions about the schedule ("what do I have tomorrow?", "am I free on
Friday afternoon?") and before creating an event, to learn the current time and the
calendars' time zones. An event is returned when it overlaps [timeMin, timeMax): it ends after
timeMin and starts before timeMax; either bound may be omitted. Bounds without an offset are read
in the time zone of the key's calendar (for an all-calendars key, the default calendar).

Returns `now` (the current time, with its offset), `calendars` (id, name, timeZone, isDefault),
`events` ordered by start, each with times in its calendar's time zone, and `nextPageToken`
when more events remain: call again with the same window and pageToken set to it.
"""

CREATE_DOC = """\
Create an event in one of the person's calendars. Needs a read-and-write key
(calendar:write).

Give title, startsAt and endsAt. Write date-times with an explicit offset
(2026-03-02T09:30:00+01:00); without one they are read in the target calendar's time zone.
For a whole-day event set allDay to true and give dates: endsAt is exclusive, or equal to
startsAt for a one-day event. The target calendar is calendarId or calendar (its name);
without either, a one-calendar key writes to its calendar and an all-calendars key to the
default calendar 'Личное'. A calendar name that does not exist is an error: nothing is created
silently. Pass an idempotencyKey to make retries safe.

Returns the created event, with times in its calendar's time zone.
"""

GET_DOC = """\
Get one event by its id, if it is in a calendar this key can reach.

Returns the event, with times in its calendar's time zone.
"""

UPDATE_DOC = """\
Change some fields of an event; the fields not given stay as they are. Needs a
read-and-write key (calendar:write).

Give eventId and only the fields to change. Date-times need an explicit offset or are read in
the event's calendar's time zone; with allDay they are dates. description or location set to
null clears it. Repeating the same call leaves the event in the same state.

Returns the event as it is after the change.
"""

DELETE_DOC = """\
Delete an event for good. Needs a read-and-write key (calendar:write).

Call it only when the person asked for the event to be removed. Deleting again answers
not_found. Returns `deleted: true` and the event as it was.
"""


def build_server(backend: Backend, *, name: str = "calendar", version: str = "") -> MCPServer:
    """The MCP server with the five calendar tools, acting through ``backend``."""
    tools = [
        _tool(
            _list_tool(backend),
            name="listCalendarEvents",
            title="List calendar events",
            description=LIST_DOC,
            schema=shapes.list_schema(),
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        _tool(
            _create_tool(backend),
            name="createCalendarEvent",
            title="Create a calendar event",
            description=CREATE_DOC,
            schema=shapes.create_schema(),
            # Not idempotent: without an idempotencyKey a repeated call creates a second event.
            annotations=ToolAnnotations(
                read_only_hint=False,
                destructive_hint=False,
                idempotent_hint=False,
                open_world_hint=False,
            ),
        ),
        _tool(
            _get_tool(backend),
            name="getCalendarEvent",
            title="Get a calendar event",
            description=GET_DOC,
            schema=shapes.event_ref_schema(),
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        _tool(
            _update_tool(backend),
            name="updateCalendarEvent",
            title="Update a calendar event",
            description=UPDATE_DOC,
            schema=shapes.update_schema(),
            # It overwrites fields (destructive); repeating it changes nothing more (idempotent).
            annotations=ToolAnnotations(
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
        _tool(
            _delete_tool(backend),
            name="deleteCalendarEvent",
            title="Delete a calendar event",
            description=DELETE_DOC,
            schema=shapes.event_ref_schema(),
            annotations=ToolAnnotations(
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
    ]
    # log_level: MCPServer configures the root logger if nothing else has; WARNING keeps the
    # SDK's per-call INFO lines (which quote tool error texts) out of the logs.
    return MCPServer(
        name,
        title="Calendar",
        instructions=INSTRUCTIONS,
        version=version,
        tools=tools,
        log_level="WARNING",
    )


def _tool(
    fn: Callable[..., Any],
    *,
    name: str,
    title: str,
    description: str,
    schema: dict[str, Any],
    annotations: ToolAnnotations,
) -> Tool:
    tool = Tool.from_function(
        fn, name=name, title=title, description=description, annotations=annotations
    )
    # The function takes only the Context and reads the raw arguments itself (see
    # ``_arguments``), so the SDK accepts any arguments and the core checks them. The schema
    # published to clients is the core models' one.
    tool.parameters = schema
    return tool


def _arguments(ctx: Context) -> dict[str, Any]:
    """The tool call's arguments exactly as sent (so that an omitted field and a null differ)."""
    params = ctx.request_context.params or {}
    arguments = params.get("arguments")
    return dict(arguments) if isinstance(arguments, Mapping) else {}


def _result(value: dict[str, Any]) -> CallToolResult:
    """``structuredContent`` and, for clients that only read text, the same JSON as text."""
    text = orjson.dumps(value).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=value)


async def _run(
    backend: Backend, ctx: Context, operation: str, op: Operation[Any]
) -> CallToolResult:
    """Perform ``op`` as the caller; its result, or its error returned as an ``isError`` result
    (raised, the SDK would put ``Error executing tool NAME:`` in front of the error's code)."""
    caller = backend.identify(ctx, operation)
    try:
        with tool_errors(operation, caller.call.request_id):
            outcome = await backend.db.run_grouped(
                perform, secret=caller.secret, ctx=caller.call, op=op, limiter=backend.limiter
            )
    except ToolError as exc:
        return error_result(exc)
    return _result(outcome.value)


def _renamed(exc: ValidationFailed, names: Mapping[str, str]) -> ValidationFailed:
    """The same errors with the core's field names replaced by the tool's argument names."""
    return ValidationFailed(
        [FieldError(names.get(e["field"], e["field"]), e["message"]) for e in exc.errors]
    )


# ---------------------------------------------------------------------------------------------
# The tools


def _list_tool(backend: Backend) -> Callable[..., Any]:
    async def list_calendar_events(ctx: Context) -> Annotated[CallToolResult, shapes.EventsPage]:
        args = _arguments(ctx)
        token_key = await backend.token_key()

        def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
            params = parse_model(shapes.ListArguments, args)
            page = events.list_events(
                conn,
                principal=principal,
                time_min=params.time_min,
                time_max=params.time_max,
                limit=params.limit,
                page_token=params.page_token,
                token_key=token_key,
            )
            calendars = page["calendars"]
            tz = zone(calendars[0]["timeZone"]) if calendars else UTC
            return 200, {"now": format_in(utcnow(), tz), **page}

        return await _run(backend, ctx, "listCalendarEvents", op)

    return list_calendar_events


def _create_tool(backend: Backend) -> Callable[..., Any]:
    async def create_calendar_event(ctx: Context) -> Annotated[CallToolResult, EventPublic]:
        body = _arguments(ctx)
        idempotency_key = body.pop("idempotencyKey", None)

        def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
            key = idempotency_key
            prior: list[FieldError] = []
            if key is not None and not isinstance(key, str):
                prior.append(FieldError("idempotencyKey", "must be a string"))
                key = None
            try:
                event, _replayed = events.create_event_from_input(
                    conn,
                    principal=principal,
                    body=body,
                    now=utcnow(),
                    idempotency_key=key,
                    prior_errors=prior,
                )
            except ValidationFailed as exc:
                raise _renamed(exc, {"Idempotency-Key": "idempotencyKey"}) from None
            return 201, event

        return await _run(backend, ctx, "createCalendarEvent", op)

    return create_calendar_event


def _get_tool(backend: Backend) -> Callable[..., Any]:
    async def get_calendar_event(ctx: Context) -> Annotated[CallToolResult, EventPublic]:
        args = _arguments(ctx)

        def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
            ref = parse_model(shapes.EventRef, args)
            return 200, events.get_event(conn, principal=principal, event_id=ref.event_id)

        return await _run(backend, ctx, "getCalendarEvent", op)

    return get_calendar_event


def _update_tool(backend: Backend) -> Callable[..., Any]:
    async def update_calendar_event(ctx: Context) -> Annotated[CallToolResult, EventPublic]:
        body = _arguments(ctx)
        ref_args = {"eventId": body.pop("eventId")} if "eventId" in body else {}

        def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
            principal.require_write()
            data, prior = parse_partial(EventUpdate, body)
            try:
                ref = parse_model(shapes.EventRef, ref_args)
            except ValidationFailed as exc:
                raise ValidationFailed([*exc.errors, *prior]) from None
            event = events.update_event(
                conn,
                principal=principal,
                event_id=ref.event_id,
                data=data,
                now=utcnow(),
                prior_errors=prior,
            )
            return 200, event

        return await _run(backend, ctx, "updateCalendarEvent", op)

    return update_calendar_event


def _delete_tool(backend: Backend) -> Callable[..., Any]:
    async def delete_calendar_event(ctx: Context) -> Annotated[CallToolResult, shapes.DeletedEvent]:
        args = _arguments(ctx)

        def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
            principal.require_write()
            ref = parse_model(shapes.EventRef, args)
            event = events.delete_event(
                conn, principal=principal, event_id=ref.event_id, now=utcnow()
            )
            return 200, {"deleted": True, "event": event}

        return await _run(backend, ctx, "deleteCalendarEvent", op)

    return delete_calendar_event
