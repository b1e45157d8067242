"""The calendars page over HTTP: new calendars, the event form, and webhooks for its changes."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from sqlalchemy import insert, select

from calendar_service.access import keys
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import deliveries_t, endpoints_t
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings, event_form, text_of
from tests.support import Factory, bearer

EVENTS = "/api/v1/calendar/events"


def test_a_calendar_needs_a_fresh_name_and_a_real_time_zone(settings: Settings) -> None:
    made = settings.post("/calendars", {"name": "Travel", "time_zone": "Asia/Tokyo"})
    assert made.status_code == 303
    page = settings.get("/calendars").text
    assert "Travel" in page and "Asia/Tokyo" in page
    bad = settings.post("/calendars", {"name": "Travel", "time_zone": "Mars/Olympus"})
    assert bad.status_code == 400
    assert "a calendar named &#39;Travel&#39; already exists" in bad.text
    assert "must be an IANA time zone such as Europe/Berlin" in bad.text
    assert 'value="Mars/Olympus"' in bad.text


def test_the_event_form_reads_times_in_the_calendars_zone(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    tokyo = factory.calendar(settings.owner, name="Tokyo office", time_zone="Asia/Tokyo")
    _, secret = factory.key(settings.owner, permission="read")
    assert settings.post("/events", event_form(tokyo)).status_code == 303
    [event] = api.get(EVENTS, params={"timeMin": "2031-06-01"}, headers=bearer(secret)).json()[
        "events"
    ]
    assert event["startsAt"] == "2031-06-02T09:00:00+09:00"
    assert event["endsAt"] == "2031-06-02T09:15:00+09:00"
    assert "Mon 2 Jun 2031, 09:00 – 09:15 Standup" in text_of(settings.get("/calendars").text)


def test_an_all_day_events_last_day_is_inclusive_on_the_page(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    form = event_form(
        settings.owner.default_calendar_id,
        title="Conference",
        all_day="on",
        start_date="2031-09-15",
        end_date="2031-09-17",
        start_time="",
        end_time="",
    )
    assert settings.post("/events", form).status_code == 303
    [event] = api.get(EVENTS, params={"timeMin": "2031-09-01"}, headers=bearer(secret)).json()[
        "events"
    ]
    assert event["allDay"] is True
    assert event["endsAt"] == "2031-09-18T00:00:00Z"  # the API's end is the midnight after
    edit = settings.get(f"/events/{event['id']}/edit").text
    assert 'name="end_date" value="2031-09-17"' in edit
    assert "Mon 15 Sep 2031 – Wed 17 Sep 2031 All day" in text_of(settings.get("/calendars").text)


def test_an_event_shown_as_free_is_transparent_and_leaves_its_time_free(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    calendar = factory.calendar(settings.owner, name="Focus")
    _, secret = factory.key(settings.owner, permission="read")
    assert settings.post("/events", event_form(calendar, title="Deep work", free="on")).status_code
    [event] = api.get(
        EVENTS, params={"timeMin": "2031-06-01", "timeMax": "2031-06-03"}, headers=bearer(secret)
    ).json()["events"]
    assert event["transparency"] == "transparent"
    assert "Deep work Free" in text_of(settings.get("/calendars").text)
    edit = settings.get(f"/events/{event['id']}/edit").text
    assert 'name="free" id="free" checked' in edit
    busy = api.post(
        "/api/v1/calendar/freeBusy",
        json={"timeMin": "2031-06-02", "timeMax": "2031-06-03", "calendarIds": [calendar]},
        headers=bearer(secret),
    )
    assert busy.json()["calendars"][0]["busy"] == []
    # Saved without the box ticked: busy again.
    form = event_form(calendar, title="Deep work")
    assert settings.post(f"/events/{event['id']}", form).status_code == 303
    shown = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
    assert shown["transparency"] == "opaque"


def test_the_event_form_names_each_bad_field_and_keeps_what_was_typed(settings: Settings) -> None:
    answer = settings.post(
        "/events",
        event_form(
            settings.owner.default_calendar_id,
            title=" ",
            start_time="",
            end_date="2031-06-01",
            location="Room 9",
        ),
    )
    assert answer.status_code == 400
    assert 'id="title-error">must not be empty<' in answer.text
    assert 'id="start-error">choose a time, or tick “All day”<' in answer.text
    assert 'value="Room 9"' in answer.text
    wrong_order = settings.post(
        "/events", event_form(settings.owner.default_calendar_id, end_time="08:00")
    )
    assert wrong_order.status_code == 400
    assert 'id="end-error">must not be before startsAt<' in wrong_order.text


def test_changes_made_in_the_page_queue_webhooks_like_any_other(
    settings: Settings, factory: Factory
) -> None:
    owner = settings.owner

    def add_endpoint(conn: Any) -> None:
        now = utcnow()
        conn.execute(
            insert(endpoints_t).values(
                id=new_id("whe"),
                user_id=owner.id,
                url="https://hooks.example/calendar",
                secret="whsec_" + "A" * 44,
                status="active",
                created_at=now,
                updated_at=now,
            )
        )

    factory.db.call(add_endpoint)
    assert settings.post("/events", event_form(owner.default_calendar_id)).status_code == 303

    def deliveries(conn: Any) -> list[tuple[str, dict[str, Any]]]:
        table = deliveries_t
        rows = conn.execute(
            select(table.c.event_type, table.c.payload)
            .where(table.c.user_id == owner.id)
            .order_by(table.c.created_at, table.c.id)
        )
        return [(r.event_type, orjson.loads(r.payload)["data"]["event"]) for r in rows]

    [(kind, event)] = factory.db.call(deliveries)
    assert kind == "calendar.event.created" and event["title"] == "Standup"
    edited = event_form(owner.default_calendar_id, title="Standup (longer)", end_time="09:45")
    assert settings.post(f"/events/{event['id']}", edited).status_code == 303
    assert settings.post(f"/events/{event['id']}/delete").status_code == 303
    sent = factory.db.call(deliveries)
    assert [kind for kind, _ in sent] == [
        "calendar.event.created",
        "calendar.event.updated",
        "calendar.event.deleted",
    ]
    assert sent[1][1]["title"] == "Standup (longer)"
    assert sent[1][1]["endsAt"] == "2031-06-02T09:45:00Z"


# ---------------------------------------------------------------------------------------------
# Changing and deleting a calendar


def test_a_calendar_is_renamed_and_re_zoned_on_its_edit_page(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    work = factory.calendar(settings.owner, name="Work")
    factory.calendar(settings.owner, name="Home")
    _, secret = factory.key(settings.owner, permission="read", calendar_id=work)
    assert settings.post("/events", event_form(work)).status_code == 303
    form = settings.get(f"/calendars/{work}/edit")
    assert form.status_code == 200
    assert 'name="name" value="Work"' in form.text and 'value="UTC"' in form.text
    refused = settings.post(f"/calendars/{work}", {"name": "Home", "time_zone": "Mars/Olympus"})
    assert refused.status_code == 400
    assert "a calendar named &#39;Home&#39; already exists" in refused.text
    assert "must be an IANA time zone such as Europe/Berlin" in refused.text
    assert 'value="Mars/Olympus"' in refused.text
    saved = settings.post(f"/calendars/{work}", {"name": "Office", "time_zone": "Asia/Tokyo"})
    assert saved.status_code == 303
    assert "Calendar saved." in settings.client.get(saved.headers["location"]).text
    [event] = api.get(EVENTS, params={"timeMin": "2031-06-01"}, headers=bearer(secret)).json()[
        "events"
    ]
    assert (event["calendar"], event["startsAt"]) == ("Office", "2031-06-02T18:00:00+09:00")
    assert "Time zone Asia/Tokyo" in text_of(settings.get("/calendars").text)


def test_a_calendar_gets_a_colour_on_its_forms_and_a_bad_one_is_named_beside_the_field(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    made = settings.post("/calendars", {"name": "Work", "time_zone": "UTC", "color": "#1A73E8"})
    assert made.status_code == 303
    listing = text_of(settings.get("/calendars").text)
    assert "Time zone UTC · colour #1a73e8" in listing
    _, secret = factory.key(settings.owner)
    [work] = [c for c in api.get(EVENTS, headers=bearer(secret)).json()["calendars"]
              if c["name"] == "Work"]  # fmt: skip
    assert work["color"] == "#1a73e8"
    form = settings.get(f"/calendars/{work['id']}/edit")
    assert 'name="color" value="#1a73e8"' in form.text
    refused = settings.post(
        f"/calendars/{work['id']}", {"name": "Work", "time_zone": "UTC", "color": "blue"}
    )
    assert refused.status_code == 400
    assert "must be a colour as #rrggbb" in refused.text and 'value="blue"' in refused.text
    kept = settings.post(f"/calendars/{work['id']}", {"name": "Office", "time_zone": "UTC"})
    assert kept.status_code == 303  # a form without the field keeps the colour
    assert "colour #1a73e8" in text_of(settings.get("/calendars").text)
    cleared = settings.post(
        f"/calendars/{work['id']}", {"name": "Office", "time_zone": "UTC", "color": ""}
    )
    assert cleared.status_code == 303
    assert "colour #" not in text_of(settings.get("/calendars").text)


def test_deleting_a_calendar_first_says_what_goes_then_takes_it_and_revokes_its_keys(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    work = factory.calendar(settings.owner, name="Work")
    _, secret = factory.key(settings.owner, calendar_id=work)
    for day in ("2031-06-02", "2031-06-03", "2031-06-04"):
        assert settings.post("/events", event_form(work, start_date=day, end_date=day)).is_redirect
    confirm = settings.get(f"/calendars/{work}/delete")
    assert confirm.status_code == 200
    shown = text_of(confirm.text)
    assert "Delete the calendar “Work”?" in shown
    assert "3 events" in shown and "0 feeds" in shown and "1 key" in shown
    assert api.get(EVENTS, headers=bearer(secret)).status_code == 200  # nothing happened yet
    done = settings.post(f"/calendars/{work}/delete")
    assert done.status_code == 303
    page = settings.client.get(done.headers["location"]).text
    assert "Calendar deleted: its events are gone, its feeds and keys revoked." in page
    assert f"cal-{work}" not in page
    refused = api.get(EVENTS, headers=bearer(secret))
    assert (refused.status_code, refused.json()["code"]) == (401, "revoked_api_key")
    assert settings.get(f"/calendars/{work}/delete").status_code == 404


def test_the_default_calendar_offers_no_delete_and_refuses_one(settings: Settings) -> None:
    default = settings.owner.default_calendar_id
    page = settings.get("/calendars").text
    assert f"/calendars/{default}/edit" in page
    assert f"/calendars/{default}/delete" not in page
    refused = settings.post(f"/calendars/{default}/delete")
    assert refused.status_code == 409
    assert "The default calendar cannot be deleted" in refused.text
    assert settings.get(f"/calendars/{default}/delete").status_code == 409


def test_another_owners_calendar_is_nothing_of_yours(settings: Settings, factory: Factory) -> None:
    theirs = factory.calendar(factory.owner(), name="Theirs")
    for path in (f"/calendars/{theirs}/edit", f"/calendars/{theirs}/delete"):
        assert settings.get(path).status_code == 404
    assert settings.post(f"/calendars/{theirs}", {"name": "Mine"}).status_code == 404
    assert settings.post(f"/calendars/{theirs}/delete").status_code == 404


def test_the_owner_shares_free_busy_on_the_calendars_page_and_stops(
    settings: Settings, factory: Factory
) -> None:
    other = factory.owner()
    shared = settings.post("/sharing", {"email": other.email})
    assert shared.status_code == 303
    page = settings.get("/calendars").text
    assert (
        "Shared: they may now count your busy times"
        in settings.get(shared.headers["location"].split("/settings", 1)[-1]).text
    )
    assert other.email in page
    refused = settings.post("/sharing", {"email": settings.owner.email})
    assert "share-refused" in refused.headers["location"]
    assert settings.post("/sharing/remove", {"email": other.email}).status_code == 303
    assert other.email not in settings.get("/calendars").text
    # the pages' owner and the keys page: a key may be made to send invitations
    made = settings.post(
        "/keys",
        {"name": "Inviter", "permission": "write", "expires": "30d", "may_invite": "yes"},
    )
    assert made.status_code == 201, made.text
    listed = factory.db.call(keys.list_keys, user_id=settings.owner.id, now=utcnow())
    assert [k["mayInvite"] for k in listed if k["name"] == "Inviter"] == [True]
