"""The Scheduling links operations: the key's (``createSchedulingLink``,
``listSchedulingLinks``, ``deleteSchedulingLink``) and the public booking API a link's page is
built on (``listBookingSlots``, ``bookSchedulingLink``: no key, the token in the path), with
their schemas."""

from __future__ import annotations

from typing import Any

from calendar_service.operations import catalog as operations
from calendar_service.platform.models import links as models
from calendar_service.rest.links import BOOK_API, LINKS_PATH
from calendar_service.rest.openapi.parameters import parameter, path_text
from calendar_service.rest.openapi.refs import (
    RATE_DOC,
    RESPONSE,
    WRITE_NOTE,
    Tag,
    answer,
    json_content,
    link,
    model_schemas,
    operation,
)
from calendar_service.rest.openapi.responses import errors, problem_response

TAG = Tag(
    "Scheduling links",
    "Links a write key hands a person who is not on this service to pick a free time (as "
    "Calendly's and Cal.com's): the key makes, lists and deletes its own; the page "
    "(/book/{token}) and any site of the owner's book through the two public operations, "
    "which take no key: the token in the path is the link's only secret.",
)
LINK_EXAMPLE = {
    "id": "link_4kR8nW2qT6yB0dF3hJ5mP7",
    "url": "https://calendar.example.com/book/3q2Fv8Lk0pZ7mN4sR1tW9xY6bC5dE8gH",
    "title": "Intro call",
    "durationMinutes": 30,
    "timeMin": "2026-03-02T09:00:00+01:00",
    "timeMax": "2026-03-06T17:00:00+01:00",
    "calendarId": "cal_2Jd8fK1mQ4rT7vX0zB3nC5",
    "uses": 1,
    "usesLeft": 1,
    "expiresAt": "2026-03-06T16:00:00Z",
    "status": "active",
    "createdAt": "2026-02-20T14:03:11.482913Z",
}
CREATE_EXAMPLE = {
    "title": "Intro call",
    "durationMinutes": 30,
    "timeMin": "2026-03-02T09:00",
    "timeMax": "2026-03-06T17:00",
    "guest": {"email": "dana@example.com", "name": "Dana Scully"},
}
_PUBLIC = (
    " Public: no key (the token in the path is the link's secret); spends the link's and the "
    "client address's budget (`CALENDAR_BOOKING_RATE_LIMIT`)."
)


def paths() -> dict[str, Any]:
    collection = LINKS_PATH.removeprefix("/api/v1")
    book = BOOK_API.removeprefix("/api/v1") + "/{token}"
    return {
        collection: {"get": _list(), "post": _create()},
        collection + "/{linkId}": {"parameters": [_link_id()], "delete": _delete()},
        book + "/slots": {"parameters": [_token()], "get": _slots()},
        book: {"parameters": [_token()], "post": _book()},
    }


def _link_id() -> dict[str, Any]:
    return path_text("linkId", "A scheduling link of this key (link_…).", 40)


def _token() -> dict[str, Any]:
    return path_text("token", "The link's token: the last part of its url.", 100)


def _create() -> dict[str, Any]:
    return TAG.operation(
        operations.CREATE_LINK,
        "Make a scheduling link",
        "A link a person opens to book one of this key's free slots of "
        "durationMinutes within [timeMin, timeMax) (findFreeTime's, over every calendar the key "
        "reaches), into calendarId. Its url is in this answer only. It takes `uses` bookings "
        "(default 1) until expiresAt (default timeMax), and stops at once when deleted, when "
        "the owner revokes it, or when the key is revoked or expires (410 `link_gone`). A key "
        "whose writes wait for the owner's approval may not make links (400)."
        + WRITE_NOTE
        + RATE_DOC,
        {
            "201": answer(
                "The link, with its url (shown this once).",
                json_content("SchedulingLink", example=LINK_EXAMPLE),
                DeleteSchedulingLink=link(
                    operations.DELETE_LINK.name, "Stop the link.", linkId="$response.body#/id"
                ),
            ),
            **errors(),
        },
        body={
            "required": True,
            "content": json_content("SchedulingLinkCreate", example=CREATE_EXAMPLE),
        },
    )


def _list() -> dict[str, Any]:
    shown = {k: v for k, v in LINK_EXAMPLE.items() if k != "url"}
    return TAG.operation(
        operations.LIST_LINKS,
        "List this key's scheduling links",
        "The key's own links, newest first, without their urls; deleted ones "
        "left out." + WRITE_NOTE + RATE_DOC,
        {
            "200": answer(
                "The key's links.",
                json_content("SchedulingLinkList", example={"schedulingLinks": [shown]}),
            ),
            **errors(),
        },
    )


def _delete() -> dict[str, Any]:
    return TAG.operation(
        operations.DELETE_LINK,
        "Delete one of this key's scheduling links",
        "Its page takes no more bookings (410 `link_gone`); bookings made stay. "
        "Another key's link is not found (404)." + WRITE_NOTE + RATE_DOC,
        {
            "204": answer("Deleted."),
            **errors("404"),
        },
    )


def _public_errors(*codes: str) -> dict[str, Any]:
    chosen = {"400", "404", "429", "500", *codes}
    found = {code: value for code, value in errors("404", "409").items() if code in chosen}
    found["410"] = {"$ref": RESPONSE.format("LinkGone")}
    return dict(sorted(found.items()))


def _slots() -> dict[str, Any]:
    return operation(
        "listBookingSlots",
        TAG.name,
        "The free slots of a scheduling link",
        "The link's slots free now, earliest first, on a 15-minute grid, in "
        "timeZone (default: the link's calendar's): its window from now on, narrowed to "
        "timeMin and timeMax (dates or date-times, read in timeZone)." + _PUBLIC,
        {
            "200": answer(
                "The slots.",
                json_content(
                    "BookingSlots",
                    example={
                        "title": "Intro call",
                        "durationMinutes": 30,
                        "timeZone": "Europe/Berlin",
                        "slots": [
                            {
                                "startsAt": "2026-03-02T09:00:00+01:00",
                                "endsAt": "2026-03-02T09:30:00+01:00",
                            }
                        ],
                    },
                ),
            ),
            **_public_errors(),
        },
        security=[],
        parameters=[
            parameter(name, "query", text, {"type": "string", "maxLength": 100}, required=False)
            for name, text in (
                ("timeMin", "Slots from (a date or an RFC 3339 date-time)."),
                ("timeMax", "Slots until (a date or an RFC 3339 date-time)."),
                ("timeZone", "An IANA time zone, such as Europe/Berlin."),
            )
        ],
    )


def _book() -> dict[str, Any]:
    return operation(
        operations.BOOK.name,
        TAG.name,
        "Book a slot of a scheduling link",
        "One event in the link's calendar, the guest its attendee (invited by "
        "mail when the service has SMTP and the key may invite), made by the guest (actor "
        "`guest`, transport `link`) as a write of the link's key: in its change log and call "
        "history, with the webhooks `calendar.event.created` and `calendar.booking.created`. "
        "A slot no longer free (another guest, a meeting made meanwhile, off the grid or "
        "outside the window): 409 `slot_taken` with the fresh `slots`; two guests on one slot: "
        "exactly one wins. Used up, expired or revoked: 410 `link_gone`. manageUrl is the "
        "guest's page to reschedule or cancel." + _PUBLIC,
        {
            "201": answer(
                "Booked.",
                json_content(
                    "BookingCreated",
                    example={
                        "booking": {
                            "id": "bk_4kR8nW2qT6yB0dF3hJ5mP7",
                            "eventId": "ev_7Hq2LmN4pR6tV8xZ0bD3fG",
                            "startsAt": "2026-03-02T09:00:00+01:00",
                            "endsAt": "2026-03-02T09:30:00+01:00",
                            "manageUrl": "https://calendar.example.com/book/manage/Zm9v",
                        }
                    },
                ),
            ),
            **_public_errors("409", "413", "415"),
        },
        security=[],
        body={
            "required": True,
            "content": json_content(
                "BookingCreate",
                example={
                    "startsAt": "2026-03-02T09:00:00+01:00",
                    "name": "Dana Scully",
                    "email": "dana@example.com",
                },
            ),
        },
    )


def responses() -> dict[str, Any]:
    return {
        "LinkGone": problem_response(
            "The scheduling link takes no more bookings (`link_gone`): used up, expired, "
            "deleted or revoked, or its key was revoked.",
            {
                "type": "urn:calendar-service:problem:link_gone",
                "title": "Link no longer valid",
                "status": 410,
                "detail": "This scheduling link has expired. Ask whoever sent it for a new one.",
                "code": "link_gone",
            },
        )
    }


def schemas() -> dict[str, Any]:
    return model_schemas(
        (
            (models.SchedulingLinkCreate, "validation"),
            (models.SchedulingLinkPublic, "serialization"),
            (models.SchedulingLinkList, "serialization"),
            (models.BookingSlots, "serialization"),
            (models.BookingCreate, "validation"),
            (models.BookingCreated, "serialization"),
        ),
        {"SchedulingLinkPublic": "SchedulingLink", "GuestPublic": "Guest"},
    )
