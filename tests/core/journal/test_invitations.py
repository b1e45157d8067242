"""What a change tells whom, and the signed reply links, as the journal queues them with the
change (``journal.invitations``, ``journal.reply_links``; docs/invitations.md)."""

from __future__ import annotations

from typing import Any

from calendar_service.journal.invitations import plan
from calendar_service.journal.reply_links import make_token, read_token

ORGANIZER = {"email": "owner@example.com", "name": "owner@example.com"}


def event(**extra: Any) -> dict[str, Any]:
    return {
        "id": "ev_1",
        "title": "Planning",
        "startsAt": "2027-03-02T10:00:00+01:00",
        "endsAt": "2027-03-02T10:30:00+01:00",
        "allDay": False,
        "description": None,
        "location": None,
        "transparency": "opaque",
        "organizer": ORGANIZER,
        "attendees": [{"email": "ana@example.org", "responseStatus": "needsAction"}],
        "sequence": 0,
        **extra,
    }


def test_what_each_change_tells_whom() -> None:
    created = plan({"id": "chg_1", "kind": "created", "before": None, "after": event()})
    assert [(m, [r["email"] for r in rs]) for m, _, rs in created] == [
        ("REQUEST", ["ana@example.org"])
    ]
    titled = plan(
        {"id": "c", "kind": "updated", "before": event(), "after": event(title="Renamed")}
    )
    assert titled == []
    bob = {"email": "bob@example.org", "responseStatus": "needsAction"}
    swapped = plan(
        {
            "id": "c",
            "kind": "updated",
            "before": event(),
            "after": event(
                attendees=[bob, {**ORGANIZER, "responseStatus": "accepted"}], sequence=1
            ),
        }
    )
    assert [(m, [r["email"] for r in rs]) for m, _, rs in swapped] == [
        ("CANCEL", ["ana@example.org"]),
        ("REQUEST", ["bob@example.org"]),  # never the organizer
    ]
    deleted = plan({"id": "c", "kind": "deleted", "before": event(), "after": None})
    assert [m for m, _, _ in deleted] == ["CANCEL"]


def test_a_link_token_is_read_back_only_as_signed() -> None:
    key = b"k" * 32
    token = make_token(key=key, event_id="ev_1", email="ana@example.org", sequence=3)
    assert read_token(key, token) == ("ev_1", "ana@example.org", 3)
    assert read_token(b"x" * 32, token) is None
    payload, signature = token.split(".")
    assert read_token(key, payload[:-1] + "A." + signature) is None
    assert read_token(key, "garbage") is None
