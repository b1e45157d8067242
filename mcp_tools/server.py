"""The MCP server: ten calendar tools over the same core operations as the REST API.

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
would make, ``shapes.DryRun``) and its result carries ``changeId``, the change it made; a write
of a key whose writes wait for the owner's approval answers ``awaitsApproval`` and the
proposal instead (``shapes.awaiting``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from calendar_service.governance.change_shapes import ChangeList
from calendar_service.journal.invitations import MailPolicy
from calendar_service.operations import catalog as operations
from calendar_service.operations.catalog import Operation
from calendar_service.operations.gateway import CallContext, finished, perform
from calendar_service.platform import service_secrets
from calendar_service.platform.db import Database
from calendar_service.platform.errors import CalendarError, FieldError, ValidationFailed
from calendar_service.platform.inputs import parse_flag, parse_model, parse_partial
from calendar_service.platform.models import (
    EventPublic,
    EventUpdate,
    FreeBusyPublic,
    FreeTimePublic,
)
from calendar_service.platform.models.links import SchedulingLinkCreated
from calendar_service.platform.timeutil import utcnow
from mcp_tools import shapes
from mcp_tools.errors import error_result, tool_errors
from mcp_tools.shapes import SEND_UPDATES


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


INSTRUCTIONS = """\
Tools for one person's calendars, acting with an API key that the person issued. The key decides
what you can reach: all of the person's calendars or one, read-only or read-and-write.
Call listCalendarEvents first: it tells you the current time, the calendars you can reach and
their time zones. Date-times are RFC 3339; write them with an explicit offset
(2026-03-02T09:30:00+01:00). A date-time without an offset is read in the target calendar's time
zone. Events come back with times in their calendar's time zone. A recurring event is a series
(created with `recurrence`); the list gives its occurrences, each with an id of its own.
To find an event by what it is called, call searchCalendarEvents; never ask the person for an id.
For "when am I free?" or "find 30 minutes next week" use findFreeTime (or queryFreeBusy for the
busy times) rather than listing events: they count recurring events, all-day events and events
marked free correctly, and a free/busy-only key may call nothing else.
Every write tool takes dryRun: true, which checks everything and answers the change it would
make without making it, and returns the changeId of the change it made; listChanges shows what
was changed (by whom, before and after) and undoChange takes a change back. If the owner
made the key's writes wait for approval, a write answers awaitsApproval: true and a proposal
id instead: nothing is changed until the owner approves it.
"""

LIST_DOC = """\
List the events of the calendars this key can reach, within a time window.

Call it to answer questions about the schedule ("what do I have tomorrow?") and before
creating an event, to learn the current time and the calendars' time zones. To find free time
or check whether someone is busy, call findFreeTime or queryFreeBusy instead.

An event is returned when it overlaps [timeMin, timeMax): it ends after timeMin and starts
before timeMax; either bound may be omitted. Bounds without an offset are read in the time zone
of the key's calendar (for an all-calendars key, the default calendar).

Returns `now` (the current time, with its offset), `calendars` (id, name, timeZone, isDefault),
`events` ordered by start, each with times in its calendar's time zone, and `nextPageToken`
when more events remain: call again with the same window and pageToken set to it (a page may
hold fewer than `limit` events and still have one).

A recurring series is listed as its occurrences: each carries `recurringEventId` (the series'
id) and `originalStartsAt`, and its own `id` (<seriesId>_<start>), which getCalendarEvent,
updateCalendarEvent and deleteCalendarEvent take. With singleEvents false, each series is listed
once instead, with its `recurrence`.

To keep up with changes instead of listing everything again, keep the `nextSyncToken` of the
last page and later pass it as syncToken (without timeMin/timeMax): you get only the events
created, changed or deleted since (deleted ones as {id, status: "cancelled"}), series as
themselves, and a new nextSyncToken.
"""

SEARCH_DOC = """\
Find events by their words (title, description, location). Call it before asking the person
for an event's id: for "move my dentist appointment" or "when is the call with Ana?", search
for "dentist" or "call Ana" (the words go in `query`) and act on the id found.

Every word must match, case and accents aside, in any language; the last word may be the start
of a word ("denti" finds "Dentist"). Without timeMin it searches from now on (give timeMin for
past events). A recurring series matches by its own words: its occurrences are returned.

Returns what listCalendarEvents returns (`now`, `calendars`, `events` ordered by start,
`nextPageToken`: pass it back as pageToken with the same arguments).
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
silently. Pass an idempotencyKey to make retries safe. Set ifFree to true to book only if the
time is still free (else a `conflict` error lists what overlaps: pick another slot); set
transparency to "transparent" for an event that should not block the time (busy by default).

For a recurring event, add `recurrence` (RFC 5545 lines); startsAt/endsAt are the first
occurrence, and it repeats at that local time in the calendar's time zone:
- every Monday at 10: ["RRULE:FREQ=WEEKLY;BYDAY=MO"], startsAt a Monday 10:00;
- every other Tuesday: ["RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU"], startsAt a Tuesday;
- a series that ends: add COUNT=10 (ten occurrences) or UNTIL=20261231T235959Z, never both;
- skip a date: add "EXDATE:20260309T090000Z" (the occurrence's start in UTC).
FREQ is DAILY, WEEKLY, MONTHLY or YEARLY (MONTHLY;BYDAY=-1FR: last Friday of each month).

Meetings: `attendees` lists people. Always ask your user before inviting anyone:
sendUpdates "all" emails each an invitation; the default "none" emails nobody.

Returns the created event, with times in its calendar's time zone.
"""

GET_DOC = """\
Get one event by its id, if it is in a calendar this key can reach.

A series' id gives the series, with its `recurrence`; an occurrence's id (<seriesId>_<start>,
as listed) gives that occurrence. Returns the event, with times in its calendar's time zone.
"""

UPDATE_DOC = """\
Change some fields of an event; the fields not given stay as they are. Needs a
read-and-write key (calendar:write).

Give eventId and only the fields to change. Date-times need an explicit offset or are read in
the event's calendar's time zone; with allDay they are dates. description or location set to
null clears it. Repeating the same call leaves the event in the same state.

Recurring events: an occurrence's id changes that one meeting only (scope "this", the default;
moved, it keeps its id); scope "following" changes it and every later one (a new series starts
there, and is returned); scope "all", or the series' id, changes the whole series (new times of
an occurrence move every occurrence by as much). `recurrence` is for the series only: a new
rule drops the changed or cancelled occurrences it no longer produces; null makes the series a
single event.

`attendees` replaces the list ([] removes everyone). Ask your user before sendUpdates "all":
attendees are emailed the change (added ones an invitation, removed ones a cancellation).

Returns the event as it is after the change.
"""

DELETE_DOC = """\
Delete an event for good. Needs a read-and-write key (calendar:write).

Call it only when the person asked for the event to be removed. Deleting again answers
not_found. Returns `deleted: true` and the event as it was.

Recurring events: to cancel one meeting, give that occurrence's id (scope "this", the default);
to cancel it and every later one, add scope "following" (the series ends before it; the result
carries the shortened series); to delete the whole series, give scope "all" or the series' id.
sendUpdates "all" emails the attendees a cancellation (ask your user first).
"""


FREE_BUSY_DOC = """\
When the person's calendars are busy, between timeMin and timeMax (at most 92 days apart).

Use it instead of listing events to answer "am I free on Thursday afternoon?" or "when is Anna
busy this week?": it merges overlapping meetings, counts every occurrence of recurring events
and whole all-day events, and leaves out events marked transparent (free) and cancelled
occurrences. It shows no titles.

Returns, for each calendar, `busy`: [{startsAt, endsAt}] in time order, clipped to the window,
in that calendar's time zone.
"""

FREE_TIME_DOC = """\
Find times when every given calendar is free for durationMinutes (1 to 1440).

Use it to answer "find 30 minutes with nobody booked next week" or before proposing or creating
a meeting, instead of listing events and working out gaps yourself. Give timeMin and timeMax
(at most 92 days apart), durationMinutes, and optionally calendarIds (default: all the key can
reach; a slot must be free in all of them), timeZone (IANA, default: the first calendar's),
workingHours {start: "09:00", end: "17:00", days: ["MO","TU","WE","TH","FR"]} in that zone
(wall-clock times, correct on DST-change days), and limit (default 10, at most 100).

Returns `slots`: [{startsAt, endsAt}], earliest first, starting every 15 minutes (or every
durationMinutes when shorter) of local time; consecutive slots overlap, so pick one. To book
it safely while others may book too, call createCalendarEvent with ifFree: true.
"""

LIST_CHANGES_DOC = """\
What was changed in the calendars this key reaches, newest first: each change's kind, the event
before and after, who made it (actor) and how. To review what was done, or find a change to
undo with undoChange. More pages: pass nextPageToken back as pageToken.
"""

UNDO_DOC = """\
Undo one change (its changeId, from a write tool or listChanges): the event is put back as it
was before (a deleted event or series comes back with its id). Needs calendar:write. If the
event changed since, a `conflict` error names the later changes: undo those first, newest
first, or set force. Returns the undo, itself a change.
"""

LINK_DOC = """\
A link for someone not on this service to pick one of your free slots and book it (an event,
them as attendee). Send them the url.
"""

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
    """The MCP server with the ten calendar tools, acting through ``backend``."""
    # log_level: MCPServer configures the root logger if nothing else has; WARNING keeps the
    # SDK's per-call INFO lines (which quote tool error texts) out of the logs.
    return MCPServer(
        name,
        title="Calendar",
        instructions=INSTRUCTIONS,
        version=version,
        tools=[_tool(backend, spec) for spec in TOOLS],
        log_level="WARNING",
    )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: the core operation it performs, how it is shown to clients, and how its
    arguments become the operation's (``args``, run inside ``gateway.perform`` once the key's
    permission is checked, so its errors are the call's) and its result the tool's."""

    op: Operation
    title: str
    doc: str
    schema: Callable[[], dict[str, Any]]  # the input schema published to clients
    result: type[BaseModel]  # the output schema's model (a write's dry run: shapes.DryRun)
    annotations: ToolAnnotations
    args: Callable[[dict[str, Any]], dict[str, Any]]
    present: Callable[[Any], Any] | None = None
    examples: tuple[dict[str, Any], ...] = ()  # published in the input schema
    # The core's field -> the argument's name, in the core's errors (never in those of the
    # arguments' own parsing, ``args``: they name what the caller sent).
    renames: Mapping[str, str] = field(default_factory=dict)
    token_key: bool = False  # whether the operation takes the page-token key
    outline: bool = False  # the output schema's outline only (``shapes.outline_output``)
    mail: bool = False  # whether it takes sendUpdates (and so the mail policy)


def _tool(backend: Backend, spec: ToolSpec) -> Tool:
    writes = spec.op.needs == WRITE

    async def call(ctx: Context) -> CallToolResult:
        arguments = _arguments(ctx)
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
        dry_run, refused = False, None
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
        )

    # The function takes only the Context and reads the raw arguments itself (see
    # ``_arguments``), so the SDK accepts any arguments and the core checks them. The schema
    # published to clients is the core models' one; the output schema, the result model's.
    call.__annotations__ = {"ctx": Context, "return": Annotated[CallToolResult, spec.result]}
    tool = Tool.from_function(
        call,
        name=spec.op.name,
        title=spec.title,
        description=spec.doc,
        annotations=spec.annotations,
    )
    tool.parameters = {**spec.schema(), "examples": list(spec.examples)}
    # Published compact (results are still checked against the model): see compact_output.
    tool.fn_metadata.output_schema = (
        shapes.outline_output(spec.result, writes=writes)
        if spec.outline
        else shapes.output_schema(spec.result, writes=writes)
    )
    if writes:  # its result, or a dry run's: checked by the published schema alone
        tool.fn_metadata.output_model = None
    return tool


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
                if not spec.renames or isinstance(exc, _ArgumentsRefused):
                    raise
                raise _renamed(exc, spec.renames) from None
    except ToolError as exc:
        return error_result(exc)
    value = outcome.value
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
    #        result model       annotations  arguments     result       options
    ToolSpec(operations.LIST,   "List calendar events",    LIST_DOC,    shapes.list_schema,
             shapes.EventsPage, _READS,      _list_args,   examples=LIST_EXAMPLES,
             token_key=True),
    ToolSpec(operations.SEARCH, "Search calendar events",  SEARCH_DOC,  shapes.search_schema,
             shapes.EventsPage, _READS,      _search_args, examples=SEARCH_EXAMPLES,
             renames={"q": "query"}, token_key=True, outline=True),
    ToolSpec(operations.CREATE, "Create a calendar event", CREATE_DOC,  shapes.create_schema,
             shapes.EventChanged, _CREATES, _create_args,
             _first,  # (event, replayed)
             examples=CREATE_EXAMPLES, renames={idempotency.HEADER: idempotency.ARGUMENT},
             mail=True),
    ToolSpec(operations.GET,    "Get a calendar event",    GET_DOC,     shapes.event_ref_schema,
             EventPublic,       _READS,      _event_ref,   examples=GET_EXAMPLES),
    ToolSpec(operations.UPDATE, "Update a calendar event", UPDATE_DOC,  shapes.update_schema,
             shapes.EventChanged, _CHANGES, _update_args,
             examples=UPDATE_EXAMPLES, mail=True),
    ToolSpec(operations.DELETE, "Delete a calendar event", DELETE_DOC,  shapes.delete_schema,
             shapes.DeletedEvent, _CHANGES, _delete_args, _deleted,
             examples=DELETE_EXAMPLES, mail=True, outline=True),  # its event: getCalendarEvent's
    ToolSpec(operations.FREE_BUSY, "When calendars are busy", FREE_BUSY_DOC,
             shapes.free_busy_schema,
             FreeBusyPublic,    _READS,      _availability_args,
             examples=FREE_BUSY_EXAMPLES),
    ToolSpec(operations.FREE_TIME, "Find free time",     FREE_TIME_DOC,
             shapes.free_time_schema,
             FreeTimePublic,    _READS,      _availability_args,
             examples=FREE_TIME_EXAMPLES),
    ToolSpec(operations.LIST_CHANGES, "List changes",     LIST_CHANGES_DOC,
             shapes.changes_schema,
             ChangeList,        _READS,      _changes_args, examples=CHANGES_EXAMPLES,
             token_key=True, outline=True),  # its items: undoChange's result's shape
    ToolSpec(operations.UNDO_CHANGE, "Undo a change",     UNDO_DOC,    shapes.undo_schema,
             shapes.ChangeUndone, _UNDOES, _undo_args,
             examples=UNDO_EXAMPLES),
    ToolSpec(operations.CREATE_LINK, "Make a scheduling link", LINK_DOC, shapes.link_schema,
             SchedulingLinkCreated, _CREATES, _link_args, examples=LINK_EXAMPLES),
)
# fmt: on
