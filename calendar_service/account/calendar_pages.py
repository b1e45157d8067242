"""The calendars page: time zones, upcoming events, new calendars, and event editing.

A series shows as its occurrences, each marked with how the series repeats
(``repeats.describe``) and a link to the series; the owner edits or cancels one occurrence
(the core's ``scope=this``) or the series. The new-event form offers a repeat choice, or a rule
of one's own that the core checks.

Events are changed through the same core functions the API uses, with the owner acting in
person (``events.owner_principal``), so each change writes its webhook delivery like any other.
Times typed without an offset are read in the calendar's own time zone; an all-day event's
"last day" is inclusive on the page (the API's ``endsAt`` is the exclusive midnight after:
``events.days`` converts).
"""

from __future__ import annotations

import asyncio
import functools
from datetime import datetime
from typing import Any
from zoneinfo import available_timezones

from sqlalchemy import Connection
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.keys import Principal
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account import repeats, sharing_pages
from calendar_service.account.web import (
    FormPage,
    account,
    field_errors,
    form,
    owner_get,
    owner_page,
    render,
    see_other,
)
from calendar_service.asgi.context import request_id
from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.calendar import calendars, events, sharing
from calendar_service.calendar.events.days import end_after, last_day
from calendar_service.calendar.recurrence.rules import recurrence_change
from calendar_service.journal.change_record import Via
from calendar_service.journal.change_table import OWNER
from calendar_service.platform import service_secrets
from calendar_service.platform.errors import DefaultCalendarKept, FieldError, ValidationFailed
from calendar_service.platform.timeutil import format_utc, utcnow, zone

UPCOMING = 10
NOTICES = {
    "calendar-created": "Calendar created.",
    "calendar-updated": "Calendar saved.",
    "calendar-deleted": "Calendar deleted: its events are gone, its feeds and keys revoked.",
    "event-created": "Event created.",
    "event-updated": "Event saved.",
    "event-deleted": "Event deleted.",
    "occurrence-cancelled": "Occurrence cancelled; the rest of the series goes on.",
}
# Core field names (as in the API) to the form's groups of inputs.
_EVENT_FIELDS = {
    "startsAt": "start",
    "endsAt": "end",
    "calendarId": "calendar",
    "calendar": "calendar",
}
_EVENT_FIELDS.update(
    timeZone="time_zone", allDay="all_day", recurrence="repeat", transparency="free"
)


@functools.cache
def time_zones() -> list[str]:
    return sorted(available_timezones() | {"UTC"})


def _overview(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    found = []
    token_key = service_secrets.page_token_key(conn, now=now)
    for row in calendars.list_owner_calendars(conn, user_id=user_id):
        principal = events.owner_principal(user_id, calendar_id=row.id)
        listed = events.list_events(
            conn, principal=principal, time_min=format_utc(now), limit=UPCOMING, token_key=token_key
        )
        series: dict[str, dict[str, Any]] = {}
        shown = [dict(event) for event in listed["events"]]  # listed objects are shared
        for event in shown:
            event["lastDay"] = _from_event(event)["end_date"]
            if "recurringEventId" in event:
                event["repeats"] = _repeats(conn, principal, event, series)
        found.append(
            {
                **calendars.calendar_public(row),
                "events": shown,
                "more": "nextPageToken" in listed,
            }
        )
    return {"calendars": found, "shared_with": sharing.shared_with(conn, user_id=user_id)}


def _repeats(
    conn: Connection,
    principal: Principal,
    event: dict[str, Any],
    known: dict[str, dict[str, Any]],
) -> str:
    """How the series of occurrence ``event`` repeats (each series read once a page)."""
    series_id = event["recurringEventId"]
    if series_id not in known:
        known[series_id] = events.get_event(conn, principal=principal, event_id=series_id)
    series = known[series_id]
    return repeats.describe(series)


PAGE = FormPage(
    template="calendars.html",
    section="calendars",
    load=_overview,
    blank={"name": "", "time_zone": "UTC", "color": ""},
    notices={**NOTICES, **sharing_pages.NOTICES},
    names=_EVENT_FIELDS,
    extra=lambda: {"zones": time_zones()},
)


@owner_page
async def create_calendar(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    values = _calendar_values(data)
    try:
        await account(request).services.db.run(
            calendars.create_calendar,
            user_id=owner.user_id,
            name=values["name"],
            time_zone=values["time_zone"].strip() or "UTC",
            color=values["color"],
            now=utcnow(),
        )
    except ValidationFailed as exc:
        return await PAGE.show(request, owner, values=values, refused=exc)
    return see_other(request, "/calendars", notice="calendar-created")


def _calendar_values(data: FormData) -> dict[str, str]:
    """The calendar form's inputs (name, time zone, colour: empty for none)."""
    return {name: str(data.get(name, "")) for name in ("name", "time_zone", "color")}


# ---------------------------------------------------------------------------------------------
# Changing and deleting a calendar (calendar_changes: see docs/settings.md)


def _form(
    request: Request,
    template: str,
    *,
    values: dict[str, str],
    errors: dict[str, str] | None = None,
    status_code: int = 200,
    **shown: Any,
) -> Response:
    """A calendar's or an event's form: what was typed (``values``), each error beside its
    input, and what else the form shows (``shown``)."""
    context = {"section": "calendars", "values": values, "errors": errors or {}, **shown}
    return render(request, template, context, status_code=status_code)


def _calendar_form(request: Request, *, calendar: dict[str, Any], **form: Any) -> Response:
    return _form(request, "calendar_form.html", calendar=calendar, zones=time_zones(), **form)


async def _path_calendar(request: Request, owner: OwnerSessionInfo) -> dict[str, Any]:
    """The owner's calendar named in the path, with what deleting it takes (another owner's
    is a 404)."""
    return await account(request).services.db.run(
        calendar_changes.calendar_contents,
        user_id=owner.user_id,
        calendar_id=request.path_params["calendar_id"],
    )


@owner_page
async def edit_calendar(request: Request, owner: OwnerSessionInfo) -> Response:
    calendar = await _path_calendar(request, owner)
    values = {
        "name": calendar["name"],
        "time_zone": calendar["timeZone"],
        "color": calendar["color"] or "",
    }
    return _calendar_form(request, calendar=calendar, values=values)


@owner_page
async def update_calendar(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    calendar = await _path_calendar(request, owner)  # 404 first
    values = _calendar_values(data)
    db = account(request).services.db
    try:
        # On a thread of its own, always: a new time zone rewrites the calendar's all-day
        # events and series in one transaction, which on a big calendar is more than the
        # event loop may spend (``db.run`` runs SQLite's calls inline, on the loop).
        await asyncio.to_thread(
            db.call,
            calendar_changes.update_calendar,
            user_id=owner.user_id,
            calendar_id=calendar["id"],
            name=values["name"],
            time_zone=values["time_zone"],
            color=values["color"] if "color" in data else None,  # empty: none; absent: kept
            now=utcnow(),
        )
    except ValidationFailed as exc:
        errors = field_errors(exc, {"timeZone": "time_zone"})
        return _calendar_form(
            request, calendar=calendar, values=values, errors=errors, status_code=400
        )
    return see_other(request, "/calendars", notice="calendar-updated")


def _deletable(conn: Connection, *, user_id: str, calendar_id: str) -> dict[str, Any]:
    """The calendar and what deleting it takes; the default calendar is kept (refused)."""
    calendar = calendar_changes.calendar_contents(conn, user_id=user_id, calendar_id=calendar_id)
    if calendar["isDefault"]:
        raise DefaultCalendarKept()
    return calendar


@owner_page
async def delete_calendar(request: Request, owner: OwnerSessionInfo) -> Response:
    """Delete the calendar, a bounded step (one transaction) at a time."""
    await form(request)  # checks the CSRF token
    db = account(request).services.db
    calendar_id = request.path_params["calendar_id"]
    while True:
        step = await db.run(
            calendar_changes.delete_calendar_step,
            user_id=owner.user_id,
            calendar_id=calendar_id,
            now=utcnow(),
        )
        if step["done"]:
            return see_other(request, "/calendars", notice="calendar-deleted")


# ---------------------------------------------------------------------------------------------
# The event form


def _form_values(data: FormData) -> dict[str, str]:
    names = (
        "calendar",
        "title",
        "start_date",
        "start_time",
        "end_date",
        "end_time",
        "location",
        "description",
        "repeat",
        "rule",
    )
    values = {name: str(data.get(name, "")).strip() for name in names}
    values["all_day"] = "on" if data.get("all_day") else ""
    values["free"] = "on" if data.get("free") else ""
    # A form without the repeat choice (an occurrence's, or one posted by a script) leaves
    # an event's rule as it is.
    values["repeat_sent"] = "on" if "repeat" in data else ""
    return values


def _to_api(values: dict[str, str]) -> tuple[dict[str, Any], list[FieldError]]:
    """The form's inputs as the API's event fields (date-times without an offset)."""
    errors: list[FieldError] = []
    all_day = bool(values["all_day"])
    body: dict[str, Any] = {
        "title": values["title"],
        "allDay": all_day,
        "description": values["description"] or None,
        "location": values["location"] or None,
        "transparency": "transparent" if values.get("free") else "opaque",
    }
    for side, field in (("start", "startsAt"), ("end", "endsAt")):
        day, clock = values[f"{side}_date"], values[f"{side}_time"]
        if not day:
            errors.append(FieldError(field, "choose a date"))
            continue
        if all_day:
            if side == "end":  # the last day on the page, the midnight after it in the API
                try:
                    day = end_after(day)
                except ValueError:
                    errors.append(FieldError(field, "choose a date such as 2026-03-02"))
                    continue
            body[field] = day
        elif not clock:
            errors.append(FieldError(field, "choose a time, or tick “All day”"))
        else:
            body[field] = f"{day}T{clock}"
    return body, errors


def _from_event(event: dict[str, Any]) -> dict[str, str]:
    """An event's fields as the form's inputs, in its calendar's time zone."""
    starts = datetime.fromisoformat(event["startsAt"].replace("Z", "+00:00"))
    ends = datetime.fromisoformat(event["endsAt"].replace("Z", "+00:00"))
    if event["allDay"]:
        ends_values = (last_day(event["startsAt"], event["endsAt"]), "")
    else:
        ends_values = (ends.date().isoformat(), f"{ends:%H:%M}")
    return {
        "calendar": event["calendarId"],
        "title": event["title"],
        "start_date": starts.date().isoformat(),
        "start_time": "" if event["allDay"] else f"{starts:%H:%M}",
        "end_date": ends_values[0],
        "end_time": ends_values[1],
        "all_day": "on" if event["allDay"] else "",
        "free": "on" if event.get("transparency") == "transparent" else "",
        "location": event["location"] or "",
        "description": event["description"] or "",
        **repeats.choice_of(event.get("recurrence")),
    }


def _event_form(
    request: Request,
    *,
    owned: list[dict[str, Any]],
    event: dict[str, Any] | None = None,
    **form: Any,
) -> Response:
    frequencies = repeats.FREQUENCIES
    return _form(
        request, "event_form.html", calendars=owned, event=event, frequencies=frequencies, **form
    )


def _owned(conn: Connection, *, user_id: str) -> list[dict[str, Any]]:
    return [
        calendars.calendar_public(c) for c in calendars.list_owner_calendars(conn, user_id=user_id)
    ]


def _event_errors(exc: ValidationFailed) -> dict[str, str]:
    return field_errors(exc, _EVENT_FIELDS)


@owner_page
async def new_event(request: Request, owner: OwnerSessionInfo) -> Response:
    owned = await account(request).services.db.run(_owned, user_id=owner.user_id)
    chosen = request.query_params.get("calendar", "")
    if chosen not in {c["id"] for c in owned}:
        chosen = next((c["id"] for c in owned if c["isDefault"]), "")
    zone_name = next((c["timeZone"] for c in owned if c["id"] == chosen), "UTC")
    today = utcnow().astimezone(zone(zone_name)).date().isoformat()
    values = {
        "calendar": chosen,
        "title": "",
        "start_date": today,
        "start_time": "09:00",
        "end_date": today,
        "end_time": "10:00",
        "all_day": "",
        "free": "",
        "location": "",
        "description": "",
        "repeat": "",
        "rule": "",
    }
    return _event_form(request, owned=owned, values=values)


def _create(
    conn: Connection, *, user_id: str, values: dict[str, str], now: datetime, via: Via
) -> dict[str, Any]:
    body, errors = _to_api(values)
    body["calendarId"] = values["calendar"] or None
    recurrence, refused = repeats.recurrence_of(values["repeat"], values["rule"])
    if refused is not None:
        errors.append(FieldError("recurrence", refused))
    elif recurrence is not None:
        body["recurrence"] = recurrence
    # The form's own errors first (they name the input), then whatever the core finds.
    event, _ = events.create_event_from_input(
        conn,
        principal=events.owner_principal(user_id),
        body=body,
        now=now,
        prior_errors=errors,
        via=via,
    )
    return event


@owner_page
async def create_event(request: Request, owner: OwnerSessionInfo) -> Response:
    values = _form_values(await form(request))
    db = account(request).services.db
    try:
        await db.run(
            _create, user_id=owner.user_id, values=values, now=utcnow(), via=_via(request, owner)
        )
    except ValidationFailed as exc:
        owned = await db.run(_owned, user_id=owner.user_id)
        return _event_form(
            request, owned=owned, values=values, errors=_event_errors(exc), status_code=400
        )
    return see_other(request, "/calendars", notice="event-created")


def _event_shown(conn: Connection, *, user_id: str, event_id: str) -> dict[str, Any]:
    """The event, series or occurrence ``event_id`` names, with ``repeats`` (how its series
    repeats) for a series and its occurrences."""
    principal = events.owner_principal(user_id)
    event = events.get_event(conn, principal=principal, event_id=event_id)
    if "recurrence" in event:
        event["repeats"] = repeats.describe(event)
    elif "recurringEventId" in event:
        event["repeats"] = _repeats(conn, principal, event, {})
    return event


async def _path_event(request: Request, owner: OwnerSessionInfo) -> dict[str, Any]:
    """The owner's event named in the path (another owner's is a 404)."""
    return await account(request).services.db.run(
        _event_shown, user_id=owner.user_id, event_id=request.path_params["event_id"]
    )


@owner_page
async def edit_event(request: Request, owner: OwnerSessionInfo) -> Response:
    event = await _path_event(request, owner)
    return _event_form(request, owned=[], values=_from_event(event), event=event)


def _update(
    conn: Connection,
    *,
    user_id: str,
    event_id: str,
    values: dict[str, str],
    now: datetime,
    via: Via,
) -> dict[str, Any]:
    principal = events.owner_principal(user_id)
    event = events.get_event(conn, principal=principal, event_id=event_id)  # 404 first
    body, errors = _to_api(values)
    if values["repeat_sent"] and "recurringEventId" not in event:  # not an occurrence
        recurrence, refused = repeats.recurrence_of(values["repeat"], values["rule"])
        if refused is not None:
            errors.append(FieldError("recurrence", refused))
        else:
            body.update(recurrence_change(recurrence, event.get("recurrence")))
    return events.update_event(
        conn,
        principal=principal,
        event_id=event_id,
        body=body,
        now=now,
        prior_errors=errors,
        via=via,
    )


@owner_page
async def update_event(request: Request, owner: OwnerSessionInfo) -> Response:
    values = _form_values(await form(request))
    event_id = request.path_params["event_id"]
    db = account(request).services.db
    try:
        await db.run(
            _update,
            user_id=owner.user_id,
            event_id=event_id,
            values=values,
            now=utcnow(),
            via=_via(request, owner),
        )
    except ValidationFailed as exc:
        event = await _path_event(request, owner)
        return _event_form(
            request,
            owned=[],
            values=values,
            errors=_event_errors(exc),
            event=event,
            status_code=400,
        )
    return see_other(request, "/calendars", notice="event-updated")


@owner_page
async def delete_event(request: Request, owner: OwnerSessionInfo) -> Response:
    """Delete an event or a whole series, or (``scope=this``, sent by the page of an
    occurrence) cancel one occurrence alone."""
    scope = str((await form(request)).get("scope", "")) or None
    deleted = await account(request).services.db.run(
        events.delete_event,
        principal=events.owner_principal(owner.user_id),
        event_id=request.path_params["event_id"],
        now=utcnow(),
        scope=scope,
        via=_via(request, owner),
    )
    # Only a cancelled occurrence answers as an occurrence (other scopes answer the series).
    cancelled = "recurringEventId" in deleted
    return see_other(
        request, "/calendars", notice="occurrence-cancelled" if cancelled else "event-deleted"
    )


def _via(request: Request, owner: OwnerSessionInfo) -> Via:
    """The owner in person on these pages: each change is theirs (transport ``settings``)."""
    return Via(OWNER, owner.user_id, "settings", request_id(request) or None)


def routes() -> list[BaseRoute]:
    return [
        PAGE.route("/calendars"),
        Route("/calendars", create_calendar, methods=["POST"]),
        Route("/calendars/{calendar_id}/edit", edit_calendar, methods=["GET"]),
        Route("/calendars/{calendar_id}", update_calendar, methods=["POST"]),
        owner_get(
            "/calendars/{calendar_id}/delete",
            _deletable,
            template="calendar_delete.html",
            section="calendars",
        ),
        Route("/calendars/{calendar_id}/delete", delete_calendar, methods=["POST"]),
        Route("/events/new", new_event, methods=["GET"]),
        Route("/events", create_event, methods=["POST"]),
        Route("/events/{event_id}/edit", edit_event, methods=["GET"]),
        Route("/events/{event_id}", update_event, methods=["POST"]),
        owner_get(
            "/events/{event_id}/delete",
            _event_shown,
            template="event_delete.html",
            section="calendars",
        ),
        Route("/events/{event_id}/delete", delete_event, methods=["POST"]),
    ]
