"""Recurring events in the calendars page: a series shown as such, one occurrence cancelled,
the event form's repeat choice (new events, and a rule changed or ended), and the sentence a
rule is shown as."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from playwright.sync_api import expect

from calendar_service.account.repeats import describe
from calendar_service.delivery import webhook_settings as webhook_config
from tests.account.conftest import Settings, browser_sign_in, event_form, screenshot, text_of
from tests.support import Factory, Owner, bearer

EVENTS = "/api/v1/calendar/events"


def _series(settings: Settings) -> httpx.Response:
    """A weekly stand-up from Monday 2 June 2031, made through the page's form."""
    form = event_form(settings.owner.default_calendar_id, repeat="WEEKLY", rule="")
    return settings.post("/events", form)


def _listed(api: httpx.Client, secret: str, **params: str) -> list[dict[str, Any]]:
    answer = api.get(EVENTS, params={"timeMin": "2031-06-01", **params}, headers=bearer(secret))
    assert answer.status_code == 200, answer.text
    events: list[dict[str, Any]] = answer.json()["events"]
    return events


def test_a_series_shows_its_occurrences_marked_with_how_it_repeats(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    assert _series(settings).status_code == 303
    [series] = _listed(api, secret, singleEvents="false")
    assert series["recurrence"] == ["RRULE:FREQ=WEEKLY"]
    page = settings.get("/calendars").text
    text = text_of(page)
    assert "Mon 2 Jun 2031, 09:00 – 09:15 Standup Series Repeats weekly on Monday" in text
    assert "Mon 9 Jun 2031, 09:00 – 09:15 Standup Series Repeats weekly on Monday" in text
    assert text.count("Repeats weekly on Monday") == 10  # every occurrence shown is marked
    assert f'href="/settings/events/{series["id"]}/edit">Edit the series' in page
    first = f"{series['id']}_20310602T090000Z"
    assert f'href="/settings/events/{first}/delete">Cancel' in page

    edit = settings.get(f"/events/{series['id']}/edit").text
    assert "Repeats weekly on Monday. Changes here apply to every occurrence" in text_of(edit)
    assert "Delete series…" in edit
    one = text_of(settings.get(f"/events/{first}/edit").text)
    assert "One occurrence of a series (Repeats weekly on Monday)" in one
    assert "Cancel this occurrence…" in one and "How often" not in one


def test_cancelling_one_occurrence_removes_it_and_queues_its_deleted_webhook(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    owner = settings.owner
    _, secret = factory.key(owner, permission="read")
    # Queued is what is checked here: nothing needs to listen there.
    assert settings.post("/webhook", {"url": "http://127.0.0.1:9/hooks"}).status_code == 201
    assert _series(settings).status_code == 303
    [_, second, *_] = _listed(api, secret, limit="3")
    assert second["startsAt"] == "2031-06-09T09:00:00Z"

    confirm = settings.get(f"/events/{second['id']}/delete")
    assert confirm.status_code == 200
    assert "Cancel “Standup” on Mon 9 Jun 2031?" in text_of(confirm.text)
    assert 'name="scope" value="this"' in confirm.text
    done = settings.post(f"/events/{second['id']}/delete", {"scope": "this"})
    assert done.status_code == 303

    page = text_of(settings.get("/calendars?notice=occurrence-cancelled").text)
    assert "Occurrence cancelled; the rest of the series goes on." in page
    assert "Mon 9 Jun 2031" not in page
    assert "Mon 2 Jun 2031" in page and "Mon 16 Jun 2031" in page
    starts = [e["startsAt"] for e in _listed(api, secret, limit="3")]
    assert starts == ["2031-06-02T09:00:00Z", "2031-06-16T09:00:00Z", "2031-06-23T09:00:00Z"]
    gone = api.get(f"{EVENTS}/{second['id']}", headers=bearer(secret))
    assert gone.status_code == 404

    def last_delivery(conn: Any) -> dict[str, Any]:
        [newest] = webhook_config.list_deliveries(conn, user_id=owner.id, limit=1)
        return webhook_config.get_delivery(conn, user_id=owner.id, delivery_id=newest["id"])

    delivery = factory.db.call(last_delivery)
    assert delivery["eventType"] == "calendar.event.deleted"
    sent = orjson.loads(delivery["payload"])["data"]["event"]
    assert sent["id"] == second["id"]
    assert sent["recurringEventId"] == second["recurringEventId"]
    assert sent["originalStartsAt"] == "2031-06-09T09:00:00Z"


def test_editing_one_occurrence_changes_it_alone_and_the_series_keeps_its_exceptions(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    calendar = settings.owner.default_calendar_id
    assert _series(settings).status_code == 303
    [first, second, third] = _listed(api, secret, limit="3")
    moved = event_form(calendar, title="Standup (late)", start_time="11:00", end_time="11:30")
    moved.update(start_date="2031-06-09", end_date="2031-06-09")
    assert settings.post(f"/events/{second['id']}", moved).status_code == 303
    assert settings.post(f"/events/{third['id']}/delete", {"scope": "this"}).status_code == 303

    renamed = event_form(calendar, title="Daily standup")
    assert settings.post(f"/events/{first['recurringEventId']}", renamed).status_code == 303
    shown = [(e["id"], e["title"], e["startsAt"]) for e in _listed(api, secret, limit="3")]
    assert shown == [
        (first["id"], "Daily standup", "2031-06-02T09:00:00Z"),
        (second["id"], "Standup (late)", "2031-06-09T11:00:00Z"),
        (f"{first['recurringEventId']}_20310623T090000Z", "Daily standup", "2031-06-23T09:00:00Z"),
    ]
    page = text_of(settings.get("/calendars").text)
    assert "Mon 9 Jun 2031, 11:00 – 11:30 Standup (late) Series Repeats weekly on Monday" in page


def test_the_edit_form_changes_a_series_rule_or_makes_an_event_repeat_or_stop_repeating(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    calendar = settings.owner.default_calendar_id
    assert _series(settings).status_code == 303
    [first, second, *_] = _listed(api, secret, limit="2")
    series = f"/events/{first['recurringEventId']}"
    assert '<option value="WEEKLY" selected>' in settings.get(f"{series}/edit").text
    assert settings.post(f"/events/{second['id']}/delete", {"scope": "this"}).status_code == 303
    # Daily still produces 9 June: its cancellation stays.
    assert settings.post(series, event_form(calendar, repeat="DAILY", rule="")).status_code == 303
    days = [e["startsAt"][8:10] for e in _listed(api, secret, limit="8")]
    assert days == ["02", "03", "04", "05", "06", "07", "08", "10"]

    bad = settings.post(series, event_form(calendar, repeat="custom", rule="FREQ=WEEKLY;BYDAY=XX"))
    assert bad.status_code == 400
    assert 'id="repeat-error">' in bad.text and 'value="FREQ=WEEKLY;BYDAY=XX"' in bad.text
    monthly = event_form(calendar, repeat="custom", rule="FREQ=MONTHLY;BYDAY=1MO")
    assert settings.post(series, monthly).status_code == 303
    edit = settings.get(f"{series}/edit").text
    assert 'value="RRULE:FREQ=MONTHLY;BYDAY=1MO"' in edit
    assert "Repeats monthly on the first Monday." in text_of(edit)

    assert settings.post(series, event_form(calendar, repeat="", rule="")).status_code == 303
    [single] = _listed(api, secret)
    assert single["id"] == first["recurringEventId"] and "recurrence" not in single
    assert "Series" not in text_of(settings.get("/calendars").text)
    yearly = event_form(calendar, repeat="YEARLY", rule="")
    assert settings.post(f"/events/{single['id']}", yearly).status_code == 303
    [again] = _listed(api, secret, singleEvents="false")
    assert again["recurrence"] == ["RRULE:FREQ=YEARLY"]


def test_an_all_day_yearly_series_on_29_february_is_shown_and_one_year_cancelled(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    berlin = factory.calendar(settings.owner, name="Birthdays", time_zone="Europe/Berlin")
    _, secret = factory.key(settings.owner, permission="read")
    leap = event_form(berlin, title="Leap day", all_day="on", repeat="YEARLY", rule="")
    leap.update(start_date="2032-02-29", end_date="2032-02-29", start_time="", end_time="")
    assert settings.post("/events", leap).status_code == 303
    [first, second, third] = _listed(api, secret, limit="3")
    assert [e["id"][-9:] for e in (first, second, third)] == ["_20320229", "_20360229", "_20400229"]
    page = text_of(settings.get("/calendars").text)
    assert "Sun 29 Feb 2032 All day Leap day Series Repeats yearly on 29 February" in page
    assert settings.post(f"/events/{second['id']}/delete", {"scope": "this"}).status_code == 303
    assert [e["id"] for e in _listed(api, secret, limit="2")] == [first["id"], third["id"]]


def test_cancelling_an_occurrence_without_the_csrf_token_is_refused(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    assert _series(settings).status_code == 303
    [first, *_] = _listed(api, secret, limit="2")
    path = f"/settings/events/{first['id']}/delete"
    for token in ({}, {"csrf_token": "guess"}):
        answer = settings.client.post(path, data={"scope": "this", **token})
        assert answer.status_code == 403
        assert "Form expired" in answer.text
    assert api.get(f"{EVENTS}/{first['id']}", headers=bearer(secret)).status_code == 200


def test_a_cancel_with_an_unknown_scope_or_of_a_cancelled_occurrence_is_explained(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    assert _series(settings).status_code == 303
    [first, *_] = _listed(api, secret, limit="2")
    path = f"/events/{first['id']}/delete"
    bogus = settings.post(path, {"scope": "every"})
    assert bogus.status_code == 400
    assert "scope: must be this, following or all" in text_of(bogus.text)
    assert settings.post(path, {"scope": "this"}).status_code == 303
    again = settings.post(path, {"scope": "this"})
    assert again.status_code == 404
    assert "There is nothing of yours at this address." in again.text
    assert settings.get(path).status_code == 404


def test_deleting_the_series_from_its_page_removes_every_occurrence(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    assert _series(settings).status_code == 303
    [first, *_] = _listed(api, secret, limit="2")
    confirm = text_of(settings.get(f"/events/{first['recurringEventId']}/delete").text)
    assert "Delete the series “Standup”?" in confirm
    assert settings.post(f"/events/{first['recurringEventId']}/delete").status_code == 303
    assert _listed(api, secret) == []


def test_a_custom_rule_makes_a_series_and_a_bad_one_is_explained_beside_the_field(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(settings.owner, permission="read")
    calendar = settings.owner.default_calendar_id
    hourly = settings.post("/events", event_form(calendar, repeat="custom", rule="FREQ=HOURLY"))
    assert hourly.status_code == 400
    assert 'id="repeat-error">' in hourly.text and "HOURLY" in hourly.text
    assert 'value="FREQ=HOURLY"' in hourly.text
    assert '<option value="custom" selected>' in hourly.text
    typed_only = settings.post("/events", event_form(calendar, repeat="", rule="FREQ=DAILY"))
    assert typed_only.status_code == 400
    assert "choose “Custom rule” to use the rule you typed, or clear it" in typed_only.text
    assert _listed(api, secret) == []

    tuesdays = event_form(
        calendar,
        start_date="2031-06-03",
        end_date="2031-06-03",
        repeat="custom",
        rule="RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU EXDATE:20310617T090000Z",
    )
    assert settings.post("/events", tuesdays).status_code == 303
    starts = [e["startsAt"][:10] for e in _listed(api, secret, limit="3")]
    assert starts == ["2031-06-03", "2031-07-01", "2031-07-15"]
    assert "Repeats every 2 weeks on Tuesday" in text_of(settings.get("/calendars").text)


def test_an_owner_makes_a_weekly_series_and_cancels_one_meeting_in_the_browser(
    page: Any, owner: Owner, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(owner, permission="read")
    browser_sign_in(page, owner, start="/settings/events/new")
    page.get_by_label("Title").fill("Team sync")
    times = {
        "start_date": "2031-06-02",
        "start_time": "09:00",
        "end_date": "2031-06-02",
        "end_time": "09:30",
    }
    for field, value in times.items():
        page.locator(f"#{field}").fill(value)
    page.get_by_label("How often").select_option("WEEKLY")
    screenshot(page, "16-event-form-repeats")
    page.get_by_role("button", name="Create event").click()
    expect(page.get_by_role("status")).to_have_text("Event created.")
    expect(page.locator(".repeats", has_text="Repeats weekly on Monday")).to_have_count(10)

    page.get_by_role("link", name="Cancel Team sync on Mon 9 Jun 2031").click()
    screenshot(page, "17-occurrence-cancel")
    page.get_by_role("button", name="Cancel this occurrence").click()
    expect(page.get_by_role("status")).to_have_text(
        "Occurrence cancelled; the rest of the series goes on."
    )
    expect(page.get_by_role("link", name="Cancel Team sync on Mon 9 Jun 2031")).to_have_count(0)
    expect(page.get_by_role("link", name="Cancel Team sync on Mon 16 Jun 2031")).to_be_visible()
    starts = [e["startsAt"][:10] for e in _listed(api, secret, limit="2")]
    assert starts == ["2031-06-02", "2031-06-16"]

    page.set_viewport_size({"width": 390, "height": 860})  # a phone: nothing scrolls sideways
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    screenshot(page, "18-series-on-a-phone")


@pytest.mark.parametrize(
    ("rule", "starts_at", "said"),
    [
        ("RRULE:FREQ=DAILY", "2031-06-02T09:00:00Z", "Repeats daily"),
        ("RRULE:FREQ=DAILY;INTERVAL=3;COUNT=5", "2031-06-02", "Repeats every 3 days, 5 times"),
        (
            "RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR;UNTIL=20310630T215959Z",
            "2031-06-02T09:00:00+02:00",
            "Repeats weekly on Monday, Wednesday and Friday, until Mon 30 Jun 2031",
        ),
        ("RRULE:FREQ=WEEKLY;WKST=SU", "2031-06-05T09:00:00Z", "Repeats weekly on Thursday"),
        ("RRULE:FREQ=MONTHLY", "2031-06-15T09:00:00Z", "Repeats monthly on day 15"),
        ("RRULE:FREQ=MONTHLY;BYDAY=-1FR", "2031-06-27", "Repeats monthly on the last Friday"),
        (
            "RRULE:FREQ=MONTHLY;BYDAY=1MO,3MO;COUNT=1",
            "2031-06-02",
            "Repeats monthly on the first Monday and the third Monday, once",
        ),
        (
            "RRULE:FREQ=YEARLY;UNTIL=20360229",
            "2032-02-29",
            "Repeats yearly on 29 February, until Fri 29 Feb 2036",
        ),
        (
            "RRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
            "2031-06-30",
            "Repeats: FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
        ),
        ("RRULE:FREQ=YEARLY;BYWEEKNO=20", "2031-05-12", "Repeats: FREQ=YEARLY;BYWEEKNO=20"),
    ],
)
def test_a_rule_is_said_in_words_or_shown_as_written(rule: str, starts_at: str, said: str) -> None:
    all_day = len(starts_at) == 10  # a date: an all-day series, whose EXDATEs are dates
    exdate = "EXDATE;VALUE=DATE:20310609" if all_day else "EXDATE:20310609T090000Z"
    series = {"recurrence": [rule, exdate], "startsAt": starts_at, "allDay": all_day}
    assert describe(series) == said
