"""The MCP server: the calendar tools over the same core operations as the REST API.

Every tool call goes through ``gateway.perform``, exactly like a REST request: the key is
authorized (revoked or expired keys are refused at once), the rate budget is spent, the
operation's permission is checked, the core function runs, and the call is recorded in the key's
history with transport ``mcp`` and the tool name as operation. The tools hold no rule of their
own: each is a row of ``TOOLS``, naming its operation (``calendar_service.operations.catalog``), how
it is shown, how its arguments become the operation's and its result the tool's.

How a call identifies itself (which key, which request) depends on the transport, so it is
given as ``Backend.caller_of``: the HTTP front passes the principal its ASGI wrapper verified
for the request, the stdio front the key it was started with (checked again on every call).

Every write tool takes ``dryRun`` (the operation runs every check and answers the change it
would make: ``dryRun``, ``kind``, ``before``, ``after``) and its result carries ``changeId``,
the change it made; a write of a key whose writes wait for the owner's approval answers
``awaitsApproval`` and the proposal instead (``shapes.awaiting``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from calendar_service.access import idempotency
from calendar_service.access.keys import WRITE, Principal
from calendar_service.access.ratelimit import RateLimiter
from calendar_service.calendar.events.shapes import dumps
from calendar_service.journal.invitations import MailPolicy
from calendar_service.operations import catalog as operations
from calendar_service.operations.catalog import Operation
from calendar_service.operations.gateway import CallContext, finished, perform
from calendar_service.platform import service_secrets
from calendar_service.platform.db import Database
from calendar_service.platform.errors import (
    CalendarError,
    FieldError,
    NotFound,
    ValidationFailed,
)
from calendar_service.platform.inputs import parse_flag, parse_model, parse_partial
from calendar_service.platform.models import (
    EventUpdate,
)
from calendar_service.platform.models.links import SchedulingLinkCreated
from calendar_service.platform.timeutil import utcnow
from mcp_tools import shapes
from mcp_tools.detail import ARGUMENT as DETAIL
from mcp_tools.detail import FULL, summarized
from mcp_tools.detail import SCHEMA as DETAIL_SCHEMA
from mcp_tools.detail import parse as parse_detail
from mcp_tools.errors import error_result, tool_errors
from mcp_tools.per_key import PermissionOf, ToolsPerKey
from mcp_tools.portable import portable
from mcp_tools.shapes import SEND_UPDATES
from mcp_tools.teach import taught
from mcp_tools.texts import (
    ARGUMENT_DOCS,
    CREATE_DOC,
    DELETE_DOC,
    FREE_BUSY_DOC,
    FREE_TIME_DOC,
    GET_DOC,
    INSTRUCTIONS,
    LINK_DOC,
    LIST_CHANGES_DOC,
    LIST_DOC,
    RULES_DOC,
    SEARCH_DOC,
    UNDO_DOC,
    UPDATE_DOC,
)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes the current tool call: the key's secret, or the principal the transport
    already verified for this request (then the key is not checked again), and the request
    facts to record."""

    secret: str | None
    call: CallContext
    principal: Principal | None = None


CallerOf = Callable[[Context, str], Caller]


@dataclass(frozen=True, slots=True)
class Backend:
    db: Database
    limiter: RateLimiter | None
    caller_of: CallerOf
    # The calling key's permission, for the tools ``tools/list`` shows it (``per_key``).
    permission_of: PermissionOf
    # The page-token key, read (or made) once: service_secrets.page_token_key.
    _token_key: list[bytes] = field(default_factory=list, init=False, repr=False)
    _link_key: list[bytes] = field(default_factory=list, init=False, repr=False)

    async def token_key(self) -> bytes:
        if not self._token_key:
            self._token_key.append(await self.db.run(service_secrets.page_token_key, now=utcnow()))
        return self._token_key[0]

    async def mail_policy(self) -> MailPolicy:
        """What sending invitations takes (``sendUpdates``), with the reply links' key."""
        if not self._link_key:
            self._link_key.append(await self.db.run(service_secrets.reply_link_key, now=utcnow()))
        return MailPolicy.of(self.db.config, self._link_key[0])


# Each tool's examples (``examples`` in its input schema): arguments a validating client
# accepts and the service takes (tests/mcp_tools/test_tool_schemas.py calls each one).
_SERIES = "ev_7Hq2LmN4pR6tV8xZ0bD3fG"
_OCCURRENCE = f"{_SERIES}_20260309T090000Z"
LIST_EXAMPLES = ({"timeMin": "2026-03-02", "timeMax": "2026-03-09"},)
SEARCH_EXAMPLES = ({"query": "dentist"}, {"query": "call Ana", "timeMin": "2026-03-01"})
CREATE_EXAMPLES = (
    {"title": "Dentist", "startsAt": "2026-03-02T09:30:00+01:00", "endsAt": "2026-03-02T10:15"},
    {
        "title": "Team sync",
        "startsAt": "2026-03-02T10:00",
        "endsAt": "2026-03-02T10:30",
        "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO"],
    },
    {"title": "Holiday", "startsAt": "2026-03-09", "endsAt": "2026-03-14", "allDay": True},
)
GET_EXAMPLES = ({"eventId": _OCCURRENCE},)
UPDATE_EXAMPLES = (
    {"eventId": _OCCURRENCE, "startsAt": "2026-03-09T11:00", "endsAt": "2026-03-09T11:30"},
)
DELETE_EXAMPLES = ({"eventId": _OCCURRENCE, "scope": "following"},)
FREE_BUSY_EXAMPLES = ({"timeMin": "2026-03-02", "timeMax": "2026-03-07"},)
CHANGES_EXAMPLES = ({"since": "2026-03-02"},)
LINK_EXAMPLES = (
    {
        "title": "Intro call",
        "durationMinutes": 30,
        "timeMin": "2030-03-04",
        "timeMax": "2030-03-09",
    },
)
UNDO_EXAMPLES = ({"changeId": "chg_0661336e20f305d9796bc95f60de67"},)
FREE_TIME_EXAMPLES = (
    {
        "timeMin": "2026-03-02",
        "timeMax": "2026-03-07",
        "durationMinutes": 30,
        "workingHours": {"start": "09:00", "end": "17:00"},
    },
)


def build_server(backend: Backend, *, name: str = "calendar", version: str = "") -> MCPServer:
    """The MCP server with the calendar tools, acting through ``backend``; ``tools/list``
    shows each caller the tools its key may call (``per_key``)."""
    # log_level: MCPServer configures the root logger if nothing else has; WARNING keeps the
    # SDK's per-call INFO lines (which quote tool error texts) out of the logs.
    per_key = ToolsPerKey({spec.op.name: spec.needs for spec in TOOLS}, backend.permission_of)
    return MCPServer(
        name,
        title="Calendar",
        instructions=INSTRUCTIONS,
        version=version,
        tools=[_tool(backend, spec) for spec in TOOLS],
        log_level="WARNING",
        middleware=[per_key],
    )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: the core operation it performs, how it is shown to clients, and how its
    arguments become the operation's (``args``, run inside ``gateway.perform`` once the key's
    permission is checked, so its errors are the call's) and its result the tool's."""

    op: Operation
    title: str
    doc: str
    schema: Callable[[], dict[str, Any]]  # the input schema (published ``portable``)
    # The output schema published (``shapes``), or a result model to derive it from.
    result: dict[str, Any] | type[BaseModel]
    annotations: ToolAnnotations
    args: Callable[[dict[str, Any]], dict[str, Any]]
    present: Callable[[Any], Any] | None = None
    examples: tuple[dict[str, Any], ...] = ()  # published in the input schema
    # The core's field -> the argument's name, in the core's errors (never in those of the
    # arguments' own parsing, ``args``: they name what the caller sent).
    renames: Mapping[str, str] = field(default_factory=dict)
    token_key: bool = False  # whether the operation takes the page-token key
    # The arguments whose null means something (update: null clears a description); every
    # other optional argument is published without its null branch: omitting it leaves it unset.
    nulls: frozenset[str] = frozenset()
    mail: bool = False  # whether it takes sendUpdates (and so the mail policy)
    # Whether it lists events, each a summary unless ``detail: "full"`` (``mcp_tools.detail``).
    lists_events: bool = False

    @property
    def needs(self) -> str:
        """The permission the tool needs (read, write, freebusy): its operation's, declared
        once in ``operations.catalog``. ``tools/list`` shows the tool only to keys that have
        it (``per_key``); a call is checked by ``gateway.perform`` all the same."""
        return self.op.needs


def _tool(backend: Backend, spec: ToolSpec) -> Tool:
    writes = spec.op.needs == WRITE

    accepted = list(input_schema(spec)["properties"])  # named in refusals (``teach``)

    async def call(ctx: Context) -> CallToolResult:
        arguments = _arguments(ctx)
        sent = dict(arguments)
        extra: dict[str, Any] = {}
        if spec.token_key:  # the lists: their page and sync tokens, how long syncs are kept
            extra["token_key"] = await backend.token_key()
            if spec.op is operations.LIST:
                extra["sync_retention_days"] = backend.db.config.sync_retention_days
        if spec.op is operations.CREATE_LINK:  # the link's url
            extra["base_url"] = backend.db.config.base_url
        if spec.mail and SEND_UPDATES in arguments:  # invitations: checked by the core
            extra["send_updates"] = arguments.pop(SEND_UPDATES)
            extra["mail"] = await backend.mail_policy()
        dry_run, refused, detail = False, None, FULL
        if spec.lists_events:
            try:
                detail = parse_detail(arguments.pop(DETAIL, None))
            except CalendarError as exc:
                refused = exc
        if writes:
            try:
                dry_run = parse_flag("dryRun", arguments.pop("dryRun", None))
            except CalendarError as exc:
                refused = exc
        return await _run(
            backend,
            ctx,
            spec,
            lambda: {**_parsed(spec, arguments), **extra},
            dry_run=dry_run,
            refused=refused,
            sent=sent,
            accepted=accepted,
            detail=detail,
        )

    # The function takes only the Context and reads the raw arguments itself (see
    # ``_arguments``), so the SDK accepts any arguments and the core checks them. The schema
    # published to clients is the core models' one; the output schema, the result model's.
    call.__annotations__ = {"ctx": Context, "return": Annotated[CallToolResult, dict[str, Any]]}
    tool = Tool.from_function(
        call,
        name=spec.op.name,
        title=spec.title,
        description=spec.doc,
        annotations=spec.annotations,
    )
    tool.parameters = input_schema(spec)
    result = spec.result
    tool.fn_metadata.output_schema = (
        result if isinstance(result, dict) else shapes.output_schema(result)
    )
    # The answer is checked by the published schema (validating clients, the tests), which
    # names what a model uses; the answers carry more (``detail``).
    tool.fn_metadata.output_model = None
    return tool


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool's input schema as published: portable (``portable``), and an optional
    argument's null branch only where null means something (``ToolSpec.nulls``)."""
    schema = spec.schema()
    if spec.lists_events:
        schema["properties"][DETAIL] = dict(DETAIL_SCHEMA)
    for name, prop in schema["properties"].items():
        if name not in spec.nulls:
            prop = _not_null(prop)
        if name in ARGUMENT_DOCS:
            prop = {**prop, "description": ARGUMENT_DOCS[name]}
        schema["properties"][name] = prop
    return portable(schema)


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    kind = prop.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [t for t in kind if t != "null"]
        return {**prop, "type": rest[0] if len(rest) == 1 else rest}
    branches = prop.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        kept = [b for b in branches if b != {"type": "null"}]
        out = {k: v for k, v in prop.items() if k != "anyOf"}
        return {**kept[0], **out} if len(kept) == 1 else {**out, "anyOf": kept}
    return prop


def _arguments(ctx: Context) -> dict[str, Any]:
    """The tool call's arguments exactly as sent (so that an omitted field and a null differ)."""
    params = ctx.request_context.params or {}
    arguments = params.get("arguments")
    return dict(arguments) if isinstance(arguments, Mapping) else {}


def _result(value: dict[str, Any]) -> CallToolResult:
    """``structuredContent`` and, for clients that only read text, the same JSON as text."""
    text = dumps(value).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=value)


async def _run(
    backend: Backend,
    ctx: Context,
    spec: ToolSpec,
    args: Callable[[], dict[str, Any]],
    *,
    dry_run: bool = False,
    refused: CalendarError | None = None,
    sent: Mapping[str, Any] | None = None,
    accepted: Sequence[str] = (),
    detail: str = FULL,
) -> CallToolResult:
    """Perform the tool's operation as the caller; its result (a write's with its
    ``changeId``, or a dry run's answer), or its error returned as an ``isError`` result
    (raised, the SDK would put ``Error executing tool NAME:`` in front of the error's
    code)."""
    operation = spec.op.name
    caller = backend.caller_of(ctx, operation)
    try:
        with tool_errors(operation, caller.call.request_id):
            try:
                outcome = await backend.db.run_grouped(
                    perform,
                    secret=caller.secret,
                    principal=caller.principal,
                    ctx=caller.call,
                    op=spec.op,
                    args=args,
                    present=spec.present,
                    limiter=backend.limiter,
                    dry_run=dry_run,
                    refused=refused,
                    proposal_ttl=backend.db.config.proposal_ttl,
                )
                outcome = await finished(outcome)  # what it left for after the transaction
            except ValidationFailed as exc:
                if spec.renames and not isinstance(exc, _ArgumentsRefused):
                    exc = _renamed(exc, spec.renames)
                raise taught(exc, tool=operation, arguments=sent or {}, accepted=accepted) from None
            except NotFound as exc:
                raise taught(exc, tool=operation, arguments=sent or {}, accepted=accepted) from None
    except ToolError as exc:
        return error_result(exc)
    value = summarized(outcome.value, detail)
    if outcome.proposal_id is not None:
        value = shapes.awaiting(value)
    elif spec.op.needs == WRITE and not dry_run:
        value = {**value, "changeId": outcome.change_id}
    return _result(value)


class _ArgumentsRefused(ValidationFailed):
    """The tool's arguments refused by its own parsing (``ToolSpec.args``): their fields are
    the arguments as the caller sent them, never renamed (``_run`` renames the core's)."""


def _parsed(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """``spec.args(arguments)``; what it refuses, as the arguments' own refusal."""
    try:
        return spec.args(arguments)
    except _ArgumentsRefused:
        raise
    except ValidationFailed as exc:
        raise _ArgumentsRefused(exc.errors) from None


def _renamed(exc: ValidationFailed, names: Mapping[str, str]) -> ValidationFailed:
    """The same errors with the core's field names replaced by the tool's argument names."""
    return ValidationFailed(
        [FieldError(names.get(e["field"], e["field"]), e["message"]) for e in exc.errors]
    )


# ---------------------------------------------------------------------------------------------
# The tools: their arguments as the operations' keyword arguments


def _list_args(arguments: dict[str, Any]) -> dict[str, Any]:
    # The arguments' fields are list_events' keywords: time_min, time_max, limit, page_token,
    # single_events, sync_token.
    return {**dict(parse_model(shapes.ListArguments, arguments)), "now": utcnow()}


NOT_Q = "is not an argument of this tool: the words to find go in `query`"
"""``searchCalendarEvents``' refusal of REST's ``q`` given as an argument."""


def _search_args(arguments: dict[str, Any]) -> dict[str, Any]:
    # The list's keywords (time_min, time_max, limit, page_token, calendar_ids), and q: the
    # core checks it (an empty one too), and ``_run`` names its errors ``query``.
    try:
        found = dict(parse_model(shapes.SearchArguments, arguments))
    except ValidationFailed as exc:
        errors = [
            FieldError("q", NOT_Q) if e["field"] == "q" and "q" in arguments else e
            for e in exc.errors
        ]
        raise _ArgumentsRefused(errors) from None
    q = found.pop("query")
    return {**found, "q": q, "now": utcnow()}


def _create_args(arguments: dict[str, Any]) -> dict[str, Any]:
    body = dict(arguments)
    try:
        key, prior = idempotency.given_key(body.pop(idempotency.ARGUMENT, None))
    except ValidationFailed as exc:  # the core's, about its header: the argument sent
        raise _renamed(exc, {idempotency.HEADER: idempotency.ARGUMENT}) from None
    return {"body": body, "now": utcnow(), "idempotency_key": key, "prior_errors": prior}


def _event_ref(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"event_id": parse_model(shapes.EventRef, arguments).event_id}


def _scoped_ref(arguments: dict[str, Any]) -> dict[str, Any]:
    # The scope's value is the core's to check (this, following or all), as REST's ?scope=.
    ref = parse_model(shapes.ScopedEventRef, arguments)
    return {"event_id": ref.event_id, "scope": ref.scope}


def _update_args(arguments: dict[str, Any]) -> dict[str, Any]:
    body = dict(arguments)
    ref: dict[str, Any] = {name: body.pop(name) for name in ("eventId", "scope") if name in body}
    try:
        target = _scoped_ref(ref)
    except ValidationFailed as exc:  # with every bad field of the change, as the core reports
        _, type_errors = parse_partial(EventUpdate, body)
        raise ValidationFailed([*exc.errors, *type_errors]) from None
    return {**target, "body": body, "now": utcnow()}


def _delete_args(arguments: dict[str, Any]) -> dict[str, Any]:
    return {**_scoped_ref(arguments), "now": utcnow()}


def _changes_args(arguments: dict[str, Any]) -> dict[str, Any]:
    # The arguments' fields are list_changes' keywords: since, event_id, calendar_id, limit,
    # page_token.
    return dict(parse_model(shapes.ChangesArguments, arguments))


def _undo_args(arguments: dict[str, Any]) -> dict[str, Any]:
    undo = parse_model(shapes.UndoArguments, arguments)
    return {"change_id": undo.change_id, "force": bool(undo.force), "now": utcnow()}


def _no_args(arguments: dict[str, Any]) -> dict[str, Any]:
    parse_model(shapes.NoArguments, arguments)
    return {}


def _availability_args(arguments: dict[str, Any]) -> dict[str, Any]:
    # The arguments are the operation's body, checked by the core as REST's is.
    return {"body": dict(arguments)}


def _link_args(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"body": dict(arguments), "now": utcnow()}


def _first(result: tuple[Any, ...]) -> Any:
    return result[0]


def _deleted(event: dict[str, Any]) -> dict[str, Any]:
    return {"deleted": True, "event": event}


def _writes(*, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Create is not idempotent: without an idempotencyKey a repeated call creates a second event.
_CREATES = _writes(destructive=False, idempotent=False)
# Update and delete overwrite or remove (destructive); repeating them changes nothing more.
_CHANGES = _writes(destructive=True, idempotent=True)
# An undo overwrites or removes too; repeated, it is refused (already_undone).
_UNDOES = _writes(destructive=True, idempotent=False)

# fmt: off
TOOLS = (
    #        operation          title                      doc          input schema
    #        output schema      annotations  arguments     result       options
    ToolSpec(operations.LIST,   "List calendar events",    LIST_DOC,    shapes.list_schema,
             shapes.PAGE_OUTPUT, _READS,     _list_args,   examples=LIST_EXAMPLES,
             token_key=True, lists_events=True),
    ToolSpec(operations.SEARCH, "Search calendar events",  SEARCH_DOC,  shapes.search_schema,
             shapes.SEARCH_OUTPUT, _READS,   _search_args, examples=SEARCH_EXAMPLES,
             renames={"q": "query"}, token_key=True, lists_events=True),
    ToolSpec(operations.CREATE, "Create a calendar event", CREATE_DOC,  shapes.create_schema,
             shapes.WRITE_OUTPUT, _CREATES, _create_args,
             _first,  # (event, replayed)
             examples=CREATE_EXAMPLES, renames={idempotency.HEADER: idempotency.ARGUMENT},
             mail=True),
    ToolSpec(operations.GET,    "Get a calendar event",    GET_DOC,     shapes.event_ref_schema,
             shapes.EVENT_OUTPUT, _READS,    _event_ref,   examples=GET_EXAMPLES),
    ToolSpec(operations.UPDATE, "Update a calendar event", UPDATE_DOC,  shapes.update_schema,
             shapes.WRITE_OUTPUT, _CHANGES, _update_args,
             examples=UPDATE_EXAMPLES, mail=True,
             nulls=frozenset({"description", "location", "recurrence"})),
    ToolSpec(operations.DELETE, "Delete a calendar event", DELETE_DOC,  shapes.delete_schema,
             shapes.DELETE_OUTPUT, _CHANGES, _delete_args, _deleted,
             examples=DELETE_EXAMPLES, mail=True),
    ToolSpec(operations.FREE_BUSY, "When calendars are busy", FREE_BUSY_DOC,
             shapes.free_busy_schema,
             shapes.FREE_BUSY_OUTPUT, _READS, _availability_args,
             examples=FREE_BUSY_EXAMPLES),
    ToolSpec(operations.FREE_TIME, "Find free time",     FREE_TIME_DOC,
             shapes.free_time_schema,
             shapes.FREE_TIME_OUTPUT, _READS, _availability_args,
             examples=FREE_TIME_EXAMPLES),
    ToolSpec(operations.GET_RULES, "The owner's rules", RULES_DOC,
             shapes.no_arguments_schema,
             shapes.RULES_OUTPUT, _READS, _no_args, examples=({},)),
    ToolSpec(operations.LIST_CHANGES, "List changes",     LIST_CHANGES_DOC,
             shapes.changes_schema,
             shapes.CHANGES_OUTPUT, _READS,  _changes_args, examples=CHANGES_EXAMPLES,
             token_key=True),
    ToolSpec(operations.UNDO_CHANGE, "Undo a change",     UNDO_DOC,    shapes.undo_schema,
             shapes.UNDO_OUTPUT, _UNDOES,   _undo_args,
             examples=UNDO_EXAMPLES),
    ToolSpec(operations.CREATE_LINK, "Make a scheduling link", LINK_DOC, shapes.link_schema,
             SchedulingLinkCreated, _CREATES, _link_args, examples=LINK_EXAMPLES),
)
# fmt: on
