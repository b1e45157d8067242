"""Calendar events: list, get, create, update, delete, scoped by the calling key.

Every query starts from what the principal may reach (``calendars.accessible_calendars``,
``calendars.within_reach``); every change writes its webhook delivery row in the same
transaction (``outbox.record_change``), and its change in the change log
(``events.changelog``). Core functions raise ``CalendarError`` subclasses *before* they write
anything.

The package, a module a concern:

- ``listing``: the list (window, pages) — the REST list's hot path;
- ``occurrences``: the list's page of occurrences: the series that may occur in its window,
  expanded only inside it, merged with the window's rows;
- ``chunks``: a stored series expanded a chunk at a time, the chunks kept (for the page
  and for busy time);
- ``memo``: the bounded LRU of what the list keeps in memory between requests;
- ``create``: create, with idempotency keys, from the input model or untrusted JSON;
- ``existing``: get, update, delete one event by id;
- ``changelog``: what each change writes to the change log (``changes``): its rows before
  and after, and the change;
- ``undo``: undoing a change (putting back the rows it touched), one or a key's since a time;
- ``undo_jobs``: undoing a key's work as a job kept in the database, a batch at a time;
- ``approving``: the owner approves a proposal (a write that waited): it is made as proposed;
- ``restoring``: what both do once decided: rows put back, their webhook, the event shown;
- ``series``: what an id names (an event, a series, an occurrence) and an occurrence's object;
- ``writes``: the tail every change shares (longest event, public event, webhook delivery);
- ``shapes``: the public event object, one at a time and the list's rows all at once;
- ``people``: attendees and organizer, as sent, stored (one JSON column) and shown;
- ``parsing``: list windows, titles and start/end times as callers send them;
- ``days``: an all-day event's last day, as people count it, and its exclusive end;
- ``tokens``: signed page tokens;
- ``search``: a search's words (``q``), and the condition that matches them on each database;
- ``sync``: incremental sync: the changes since a sync token, and the tokens;
- ``busy``: what takes time in calendars (series' occurrences too), for ``availability``;
- ``queries``: the SQL.

This module re-exports what the fronts and the tests use.
"""

from __future__ import annotations

from collections.abc import Sequence

from calendar_service.calendar.events.create import create_event, create_event_from_input
from calendar_service.calendar.events.existing import delete_event, get_event, update_event
from calendar_service.calendar.events.listing import list_events, list_events_later
from calendar_service.calendar.event_input import DEFAULT_LIMIT, MAX_LIMIT, parse_list_params
from calendar_service.calendar.events.queries import events_t, window_floor
from calendar_service.calendar.events.shapes import event_public
from calendar_service.access.keys import owner_principal

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
