"""The Events operations (``listCalendarEvents``, ``createCalendarEvent``, ``getCalendarEvent``,
``updateCalendarEvent``, ``deleteCalendarEvent``): their paths, with the links from each answer
to what can be done next."""

from __future__ import annotations

from typing import Any

from calendar_service.operations import catalog as operations
from calendar_service.rest.openapi.examples import create_examples
from calendar_service.rest.openapi.refs import (
    OK_HEADERS,
    PARAMETER,
    RATE_DOC,
    WRITE_NOTE,
    Tag,
    answer,
    json_content,
    link,
    named_by,
    next_page,
)
from calendar_service.rest.openapi.responses import errors
from calendar_service.rest.routes import EVENTS_PATH

TAG = Tag(
    "Events",
    "Events in the calendars an API key can reach. Write operations need `calendar:write`; "
    "every change is sent to the owner's webhook.",
)
# The attendees of the examples of a create and of a change.
_ATTENDEES = [
    {"email": "ana@example.com", "name": "Ana Lima"},
    {"email": "bob@example.org", "optional": True},
]


def paths() -> dict[str, Any]:
    """The events and each event (relative to the ``/api/v1`` server), and their operations."""
    collection = EVENTS_PATH.removeprefix("/api/v1")
    return {
        collection: {"get": _list(), "post": _create()},
        collection + "/{eventId}": named_by(
            "eventId", get=_get(), patch=_update(), delete=_delete()
        ),
    }


def _list() -> dict[str, Any]:
    """The list (and sync) of the calendars' events."""
    return TAG.operation(
        operations.LIST,
        "List the calendars and events the key can reach",
        "The calendars the key can reach (or those of them calendarIds names), "
        "and their events that overlap "
        "[timeMin, timeMax): `endsAt > timeMin` and `startsAt < timeMax`. Ordered by startsAt, "
        "then id, in pages of `limit`; when more remain the body carries nextPageToken. "
        "Recurring series are listed as their occurrences (singleEvents); a page can be "
        "shorter than `limit` when expanding series reached the request's work bound, and "
        "then carries nextPageToken too. The last page carries nextSyncToken: sent back later "
        "as syncToken, it gets every change made since (incremental sync, docs/sync.md). "
        "With q, a search: only the events whose words match (docs/api.md, Search), from now "
        "on when timeMin is omitted." + RATE_DOC,
        {
            "200": answer(
                "The calendars and a page of their events.",
                json_content("EventList"),
                NextPage=next_page(
                    "listCalendarEvents",
                    "The next page, if any (send the same timeMin and timeMax with it).",
                ),
                Sync=link(
                    "listCalendarEvents",
                    "Later: every change since this list or sync (on its last page).",
                    syncToken="$response.body#/nextSyncToken",
                ),
            ),
            **errors("410"),
        },
    )


def _create() -> dict[str, Any]:
    """A new event, safe to retry with an Idempotency-Key."""
    return TAG.operation(
        operations.CREATE,
        "Create an event",
        "Creates an event in the calendar named by calendarId or calendar (by "
        "default the key's calendar, or the owner's default calendar for an all-calendars "
        "key). Answers with the event and its URL in Location. Send an Idempotency-Key to make "
        "retries safe." + WRITE_NOTE + RATE_DOC,
        {
            "201": _event_answer(
                "The created event (or, for a replayed Idempotency-Key, the event the first "
                "request created).",
                "created",
                headers=("Location", *OK_HEADERS, "Idempotent-Replayed"),
            ),
            **errors("403", "409", "413", "415", "422"),
        },
        before=({"$ref": PARAMETER.format("Idempotency-Key")},),
        body={
            "required": True,
            "description": "The new event.",
            "content": json_content(
                "EventCreate",
                examples={
                    "timed": {
                        "summary": "A meeting, with its offset",
                        "value": create_examples()[0],
                    },
                    "allDay": {
                        "summary": "An all-day event over two days",
                        "value": create_examples()[1],
                    },
                    "meeting": {
                        "summary": "A meeting with attendees (?sendUpdates=all emails them)",
                        "value": {
                            "title": "Design review",
                            "startsAt": "2026-03-02T10:00:00+01:00",
                            "endsAt": "2026-03-02T10:30:00+01:00",
                            "location": "Room 4",
                            "attendees": _ATTENDEES,
                        },
                    },
                },
            ),
        },
    )


def _get() -> dict[str, Any]:
    """One event."""
    return TAG.operation(
        operations.GET,
        "Get one event",
        "The event, if it is in a calendar the key can reach." + RATE_DOC,
        {
            "200": _event_answer("The event.", "read"),
            **errors("404"),
        },
    )


def _update() -> dict[str, Any]:
    """A change of some of an event's fields."""
    return TAG.operation(
        operations.UPDATE,
        "Change some fields of an event",
        "Changes only the fields sent (JSON merge semantics: `null` clears "
        "description or location); the event as changed is validated as a whole. For a "
        "series, a change of its rule or times drops the changed or cancelled occurrences the "
        "new rule no longer produces; `recurrence: null` makes it a single event. For an "
        "occurrence id, see scope." + WRITE_NOTE + RATE_DOC,
        {
            "200": _event_answer("The event as changed.", "changed"),
            **errors("403", "404", "413", "415"),
        },
        body={
            "required": True,
            "description": "The fields to change.",
            "content": json_content(
                "EventUpdate",
                examples={
                    "move": {
                        "summary": "Rename and move the start",
                        "value": {
                            "title": "Design review (moved)",
                            "startsAt": "2026-03-02T11:00:00+01:00",
                            "endsAt": "2026-03-02T12:00:00+01:00",
                        },
                    },
                    "clearLocation": {"summary": "Clear the location", "value": {"location": None}},
                    "invite": {
                        "summary": "Invite two people (with ?sendUpdates=all, by email)",
                        "value": {"attendees": _ATTENDEES},
                    },
                },
            ),
        },
    )


def _delete() -> dict[str, Any]:
    """An event's deletion."""
    return TAG.operation(
        operations.DELETE,
        "Delete an event",
        "Deletes the event (a series with its changed occurrences); the "
        "owner's webhook hears of it with the event as it was. For an occurrence id, cancels "
        "that occurrence (scope=this), or ends the series before it (scope=following)."
        + WRITE_NOTE
        + RATE_DOC,
        {
            "204": answer(
                "Deleted.",
                GetDeletedEvent=link(
                    "getCalendarEvent",
                    "A deleted event is gone (404).",
                    eventId="$request.path.eventId",
                ),
            ),
            **errors("403", "404"),
        },
    )


def _event_answer(
    description: str, source: str, *, headers: tuple[str, ...] = OK_HEADERS
) -> dict[str, Any]:
    """A response carrying one event, with the links from it to reading, changing and
    deleting it."""
    return answer(description, json_content("Event"), headers=headers, **_event_links(source))


def _event_links(source: str) -> dict[str, Any]:
    links = {
        "GetEvent": link(
            "getCalendarEvent", f"Read the {source} event.", eventId="$response.body#/id"
        ),
        "UpdateEvent": link(
            "updateCalendarEvent", f"Change the {source} event.", eventId="$response.body#/id"
        ),
        "DeleteEvent": link(
            "deleteCalendarEvent", f"Delete the {source} event.", eventId="$response.body#/id"
        ),
    }
    if source == "read":
        del links["GetEvent"]
    return links
