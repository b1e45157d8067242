"""Calendar events: list, get, create, update, delete, scoped by the calling key.

Every query starts from what the principal may reach (``calendars.accessible_calendars``,
``calendars.within_reach``); every change writes its webhook delivery row in the same
transaction (``webhook_outbox.record_change``), and its change in the change log
(``events.changelog``). Core functions raise ``CalendarError`` subclasses *before* they write
anything.

The package, a module a concern:

- ``listing``: the list (window, pages) — the REST list's hot path;
- ``occurrences``: the list's page of occurrences: the series that may occur in its window,
  expanded only inside it, merged with the window's rows;
- ``chunks``: a stored series expanded a chunk at a time, the chunks kept (for the page
  and for busy time);
- ``create``: create, with idempotency keys, from the input model or untrusted JSON;
- ``existing``: get, update, delete one event by id;
- ``changelog``: what each change writes to the change log (``changes``): its rows before
  and after, and the change;
- ``series``: what an id names (an event, a series, an occurrence) and an occurrence's object;
- ``writes``: the tail every change shares (longest event, public event, webhook delivery);
- ``shapes``: the public event object, one at a time and the list's rows all at once;
- ``days``: an all-day event's last day, as people count it, and its exclusive end;
- ``search``: a search's words (``q``), and the condition that matches them on each database;
- ``sync``: incremental sync: the changes since a sync token, and the tokens;
- ``busy``: what takes time in calendars (series' occurrences too), for ``availability``;
- ``queries``: the SQL.

Undo, undo jobs and approvals are the change log's (``governance``); attendees, list input and
page tokens are the calendar's (``calendar.attendees``, ``calendar.event_input``,
``calendar.page_tokens``); the LRU is ``platform.lru``.

This module re-exports what the fronts and the tests use.
"""

from __future__ import annotations

from collections.abc import Sequence

from calendar_service.access.keys import owner_principal
from calendar_service.calendar.event_input import DEFAULT_LIMIT, MAX_LIMIT, parse_list_params
from calendar_service.calendar.events.create import create_event, create_event_from_input
from calendar_service.calendar.events.existing import delete_event, get_event, update_event
from calendar_service.calendar.events.listing import list_events, list_events_later
from calendar_service.calendar.events.queries import events_t, window_floor
from calendar_service.calendar.events.shapes import event_public

__all__: Sequence[str] = (
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "create_event",
    "create_event_from_input",
    "delete_event",
    "event_public",
    "events_t",
    "get_event",
    "list_events",
    "list_events_later",
    "owner_principal",
    "parse_list_params",
    "update_event",
    "window_floor",
)
