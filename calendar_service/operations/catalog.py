"""The calendar operations, each declared once: its name, what it needs of the key, and the
core function that does it.

The fronts only translate: REST and MCP pick an operation, turn their input into its
function's keyword arguments and its result into their answer. ``gateway.perform`` decides the
rest, for every front alike and once per call: it checks the key, spends its rate budget,
enforces the operation's ``needs`` before anything of the operation runs, runs it and records
the call. The event functions hold no permission check of their own; the calendar scope of a
key is decided where the events are read (``calendars.accessible_calendars``,
``calendars.within_reach``, ``calendars.resolve_target``).

The owner acting in person (the settings pages, the CLI) calls the event functions directly,
with ``keys.owner_principal``, which may do everything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from calendar_service.access.keys import FREEBUSY, READ, WRITE, Permission
from calendar_service.calendar import availability, events
from calendar_service.delivery import subscriptions
from calendar_service.governance.change_list import list_changes
from calendar_service.governance.dry_run import dry_answer, dry_import_answer
from calendar_service.governance.proposals import get_proposal
from calendar_service.governance.undo import undo_change
from calendar_service.interop.caldav import reports, resources, writing
from calendar_service.interop.ical.importing import import_events

Needs = Permission
"""What a key must be allowed (``keys.Permission``): ``READ`` (read and write keys),
``WRITE`` (write keys), or ``FREEBUSY`` (every key: read, write and free/busy keys)."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation: ``run(conn, principal=..., **arguments)``, for keys that have ``needs``.

    ``gateway.perform`` runs it inside the transaction it opened, once the key is authorized
    and its permission checked, and before the call is recorded (``status``, unless the front
    answers with another: REST's delete answers 204; or ``status_of`` the result, where the
    transaction's own answer decides it: a CalDAV PUT created, 201, or replaced, 204).

    An operation may run more than once for one request. Under ``Database.run_grouped`` (how the
    REST and MCP fronts run ``perform``) the calls of one turn of the event loop share one
    transaction on SQLite; when it is rolled back (another call of the group failed after
    writing, or the commit failed), ``perform`` runs again, and the operation with it, in a
    transaction of its own. The first run's writes are undone; only the last run's are
    committed, and only its value or error is answered. So an operation, and whatever a front
    gives ``perform`` to make its arguments or present its result, must:

    - act only through ``conn``, inside the transaction, so that a rollback undoes all it did:
      no effect outside it (no network, files, other connections; no change to caches, globals
      or objects the caller shares), unless repeating it is harmless, such as setting a
      variable the caller reads afterwards, which the last run sets last;
    - not open, commit, roll back or end a transaction, ``atomic`` and savepoints included:
      ``perform`` owns them, and inside a group an end of its own would end the other calls'
      work;
    - return a value that needs neither ``conn`` nor the transaction (it reaches the caller
      after the commit) and carries nothing over from an earlier run (a rerun makes new ids and
      reads the clock again, and the earlier run's rows are gone);
    - check before it writes where it can: a failure after a write rolls back the whole group,
      and every other call of it runs again.

    An operation may leave CPU-heavy work that needs no database for after the transaction by
    returning a ``later.Later`` (the list does, for series to expand): the fronts run it on a
    thread (``gateway.finished``).

    A write (``needs`` ``write``) takes ``via`` too (``journal.change_record.Via``: who makes its
    change, through what) and records its change with it; ``dry`` makes a dry run's answer of
    what it returned and the changes it recorded before they were rolled back.
    """

    name: str  # as recorded in the call history, and the MCP tool's name
    needs: Needs
    run: Callable[..., Any]
    status: int = 200
    dry: Callable[[Any, Sequence[dict[str, Any]]], Any] = dry_answer
    status_of: Callable[[Any], int] | None = None


LIST = Operation("listCalendarEvents", READ, events.list_events_later)
# The list with ``q`` (its MCP tool, ``searchCalendarEvents``); REST's is the list's ``?q=``.
SEARCH = Operation("searchCalendarEvents", READ, events.list_events_later)
CREATE = Operation("createCalendarEvent", WRITE, events.create_event_from_input, status=201)
GET = Operation("getCalendarEvent", READ, events.get_event)
UPDATE = Operation("updateCalendarEvent", WRITE, events.update_event)
DELETE = Operation("deleteCalendarEvent", WRITE, events.delete_event)
IMPORT = Operation("importCalendarEvents", WRITE, import_events, dry=dry_import_answer)
LIST_CHANGES = Operation("listChanges", READ, list_changes)
UNDO_CHANGE = Operation("undoChange", WRITE, undo_change)
GET_PROPOSAL = Operation("getProposal", READ, get_proposal)

FREE_BUSY = Operation("queryFreeBusy", FREEBUSY, availability.query_free_busy_later)
FREE_TIME = Operation("findFreeTime", FREEBUSY, availability.find_free_time_later)

SUBSCRIBE = Operation("createSubscription", READ, subscriptions.create_subscription, status=201)
LIST_SUBSCRIPTIONS = Operation("listSubscriptions", READ, subscriptions.list_subscriptions)
UNSUBSCRIBE = Operation("deleteSubscription", READ, subscriptions.delete_subscription, status=204)
TEST_SUBSCRIPTION = Operation("testSubscription", READ, subscriptions.send_samples, status=202)

# CalDAV (``dav.routes``): the calendar apps' requests, each a call in the key's history
# (transport ``caldav``). Not REST operations: no OpenAPI entry, no MCP tool.
CALDAV_PROPFIND = Operation("caldavPropfind", READ, resources.propfind, status=207)
CALDAV_PROPPATCH = Operation("caldavProppatch", READ, resources.proppatch, status=207)
CALDAV_REPORT = Operation("caldavReport", READ, reports.report, status=207)
CALDAV_GET = Operation("caldavGet", READ, resources.get_object)
CALDAV_PUT = Operation(
    "caldavPut", WRITE, writing.put_object, status=204, status_of=writing.put_status
)
CALDAV_DELETE = Operation("caldavDelete", WRITE, writing.delete_object, status=204)
CALDAV_MKCALENDAR = Operation("caldavMkcalendar", WRITE, writing.make_calendar, status=201)
CALDAV_DELETE_CALENDAR = Operation(
    "caldavDeleteCalendar", WRITE, writing.delete_calendar, status=204
)

OPERATIONS = (
    LIST,
    SEARCH,
    CREATE,
    GET,
    UPDATE,
    DELETE,
    IMPORT,
    FREE_BUSY,
    FREE_TIME,
    SUBSCRIBE,
    LIST_SUBSCRIPTIONS,
    UNSUBSCRIBE,
    TEST_SUBSCRIPTION,
    LIST_CHANGES,
    UNDO_CHANGE,
    GET_PROPOSAL,
)

__all__ = [
    "CALDAV_DELETE",
    "CALDAV_DELETE_CALENDAR",
    "CALDAV_GET",
    "CALDAV_MKCALENDAR",
    "CALDAV_PROPFIND",
    "CALDAV_PROPPATCH",
    "CALDAV_PUT",
    "CALDAV_REPORT",
    "CREATE",
    "DELETE",
    "FREE_BUSY",
    "FREE_TIME",
    "GET",
    "GET_PROPOSAL",
    "IMPORT",
    "LIST",
    "LIST_CHANGES",
    "LIST_SUBSCRIPTIONS",
    "OPERATIONS",
    "SEARCH",
    "SUBSCRIBE",
    "TEST_SUBSCRIPTION",
    "UNDO_CHANGE",
    "UNSUBSCRIBE",
    "UPDATE",
    "Needs",
    "Operation",
]
