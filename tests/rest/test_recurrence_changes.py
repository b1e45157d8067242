"""Changing and deleting series and single occurrences over REST (PATCH/DELETE with scope),
each with the webhook docs/recurrence.md names, and the key's calendar scope for every id form."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS
from tests.rest.recurrence_support import Cal, calendar_in, create, listed, watch
from tests.support import Factory, RunningServer, bearer, queued

BERLIN = "Europe/Berlin"


@pytest.fixture
def cal(factory: Factory, db: Database) -> Cal:
    cal = calendar_in(factory, BERLIN)
    watch(db, cal.owner)
    return cal


def _weekly(api: httpx.Client, cal: Cal, **body: Any) -> dict[str, Any]:
    """Mondays and Wednesdays at 09:30 Berlin from Monday 2 March 2026."""
    values: dict[str, Any] = {
        "title": "Stand-up",
        "startsAt": "2026-03-02T09:30",
        "endsAt": "2026-03-02T10:00",
        "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE"],
    }
    values.update(body)
    return create(api, cal, **values)


def _march(api: httpx.Client, cal: Cal) -> list[dict[str, Any]]:
    return listed(api, cal, timeMin="2026-03-01", timeMax="2026-04-01")


def test_a_series_reads_back_with_its_normalized_rule_and_an_occurrence_by_its_id(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(
        api, cal, recurrence=["rrule:freq=weekly;byday=mo,we", "EXDATE:20260304T083000Z"]
    )
    assert series["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE", "EXDATE:20260304T083000Z"]
    assert "recurringEventId" not in series
    assert api.get(f"{EVENTS}/{series['id']}", headers=cal.headers).json() == series
    one = api.get(f"{EVENTS}/{series['id']}_20260309T083000Z", headers=cal.headers)
    assert one.status_code == 200, one.text
    assert one.json()["startsAt"] == "2026-03-09T09:30:00+01:00"
    assert one.json()["recurringEventId"] == series["id"]
    for missing in ("20260310T083000Z", "20260304T083000Z", "20260309T083001Z", "20260309"):
        response = api.get(f"{EVENTS}/{series['id']}_{missing}", headers=cal.headers)
        assert response.status_code == 404, missing  # not a day of the rule, or an EXDATE
    assert queued(db, cal.owner) == [
        ("calendal.event.created".replace("calendal", "calendar"), series)
    ]


def test_singleevents_false_lists_the_series_itself(api: httpx.Client, cal: Cal) -> None:
    series = _weekly(api, cal)
    single = create(api, cal, startsAt="2026-03-05T12:00", endsAt="2026-03-05T13:00")
    listed_series = listed(
        api, cal, timeMin="2026-03-01", timeMax="2026-04-01", singleEvents="false"
    )
    assert listed_series == [series, single]
    assert len(_march(api, cal)) == 10  # 9 Mondays and Wednesdays, and the single event
    bad = api.get(EVENTS, params={"singleEvents": "maybe"}, headers=cal.headers)
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "singleEvents"


def test_a_moved_occurrence_keeps_its_id_and_original_start_and_queues_updated(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(api, cal)
    occurrence_id = f"{series['id']}_20260309T083000Z"
    moved = api.patch(
        f"{EVENTS}/{occurrence_id}",
        json={"startsAt": "2026-03-10T14:00", "endsAt": "2026-03-10T14:30", "title": "Moved"},
        headers=cal.headers,
    )
    assert moved.status_code == 200, moved.text
    body = moved.json()
    assert body["id"] == occurrence_id
    assert body["recurringEventId"] == series["id"]
    assert body["originalStartsAt"] == "2026-03-09T09:30:00+01:00"
    assert (body["startsAt"], body["title"]) == ("2026-03-10T14:00:00+01:00", "Moved")
    march = _march(api, cal)
    assert [e["startsAt"][:16] for e in march][1:4] == [
        "2026-03-04T09:30",
        "2026-03-10T14:00",  # moved from Monday the 9th, in time order
        "2026-03-11T09:30",
    ]
    assert [e for e in march if e["id"] == occurrence_id] == [body]
    assert api.get(f"{EVENTS}/{occurrence_id}", headers=cal.headers).json() == body
    assert queued(db, cal.owner)[-1] == ("calendar.event.updated", body)
    again = api.patch(
        f"{EVENTS}/{occurrence_id}", json={"title": "Moved twice"}, headers=cal.headers
    )
    assert again.json()["originalStartsAt"] == "2026-03-09T09:30:00+01:00"
    assert again.json()["startsAt"] == "2026-03-10T14:00:00+01:00"


def test_a_cancelled_occurrence_is_gone_and_queues_deleted_carrying_it(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(api, cal)
    occurrence_id = f"{series['id']}_20260311T083000Z"
    before = api.get(f"{EVENTS}/{occurrence_id}", headers=cal.headers).json()
    deleted = api.delete(f"{EVENTS}/{occurrence_id}", headers=cal.headers)
    assert deleted.status_code == 204, deleted.text
    assert api.get(f"{EVENTS}/{occurrence_id}", headers=cal.headers).status_code == 404
    assert api.delete(f"{EVENTS}/{occurrence_id}", headers=cal.headers).status_code == 404
    assert (
        api.patch(f"{EVENTS}/{occurrence_id}", json={"title": "x"}, headers=cal.headers).status_code
        == 404
    )
    assert occurrence_id not in [e["id"] for e in _march(api, cal)]
    assert len(_march(api, cal)) == 8  # of the 9 Mondays and Wednesdays in March
    assert queued(db, cal.owner)[-1] == ("calendar.event.deleted", before)


def test_changing_the_series_keeps_the_exceptions_its_new_rule_still_produces(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(api, cal)
    monday = f"{series['id']}_20260309T083000Z"
    wednesday = f"{series['id']}_20260311T083000Z"
    api.patch(f"{EVENTS}/{monday}", json={"title": "Kept"}, headers=cal.headers)
    api.delete(f"{EVENTS}/{wednesday}", headers=cal.headers)
    changed = api.patch(
        f"{EVENTS}/{series['id']}",
        json={"recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO"], "title": "Mondays"},
        headers=cal.headers,
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO"]
    assert queued(db, cal.owner)[-1] == ("calendar.event.updated", changed.json())
    march = _march(api, cal)
    assert [(e["startsAt"][:10], e["title"]) for e in march] == [
        ("2026-03-02", "Mondays"),
        ("2026-03-09", "Kept"),  # the Monday exception survives, as it was made
        ("2026-03-16", "Mondays"),
        ("2026-03-23", "Mondays"),
        ("2026-03-30", "Mondays"),
    ]
    # The Wednesday cancellation went with the Wednesdays; bringing them back brings it back.
    api.patch(
        f"{EVENTS}/{series['id']}",
        json={"recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE"]},
        headers=cal.headers,
    )
    assert api.get(f"{EVENTS}/{wednesday}", headers=cal.headers).status_code == 200
    # Moving the series' time drops every exception: none of their original starts remain.
    api.patch(
        f"{EVENTS}/{series['id']}",
        json={"startsAt": "2026-03-02T11:00", "endsAt": "2026-03-02T11:30"},
        headers=cal.headers,
    )
    assert api.get(f"{EVENTS}/{monday}", headers=cal.headers).status_code == 404
    assert {e["startsAt"][11:16] for e in _march(api, cal)} == {"11:00"}


def test_recurrence_null_turns_a_series_into_a_single_event(api: httpx.Client, cal: Cal) -> None:
    series = _weekly(api, cal)
    api.patch(f"{EVENTS}/{series['id']}_20260309T083000Z", json={"title": "x"}, headers=cal.headers)
    single = api.patch(f"{EVENTS}/{series['id']}", json={"recurrence": None}, headers=cal.headers)
    assert single.status_code == 200, single.text
    assert "recurrence" not in single.json()
    assert [e["id"] for e in _march(api, cal)] == [series["id"]]


def test_deleting_a_series_deletes_its_exceptions_and_queues_one_deleted(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(api, cal)
    moved = f"{series['id']}_20260309T083000Z"
    api.patch(f"{EVENTS}/{moved}", json={"title": "Moved"}, headers=cal.headers)
    deliveries = len(queued(db, cal.owner))
    assert api.delete(f"{EVENTS}/{series['id']}", headers=cal.headers).status_code == 204
    assert _march(api, cal) == []
    for gone in (series["id"], moved, f"{series['id']}_20260311T083000Z"):
        assert api.get(f"{EVENTS}/{gone}", headers=cal.headers).status_code == 404
    assert queued(db, cal.owner)[deliveries:] == [("calendar.event.deleted", series)]


def test_scope_all_from_an_occurrence_changes_and_moves_the_whole_series(
    api: httpx.Client, cal: Cal
) -> None:
    series = _weekly(api, cal)
    response = api.patch(
        f"{EVENTS}/{series['id']}_20260311T083000Z",
        params={"scope": "all"},
        json={"title": "Later", "startsAt": "2026-03-11T10:30", "endsAt": "2026-03-11T11:00"},
        headers=cal.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["id"] == series["id"]
    assert response.json()["startsAt"] == "2026-03-02T10:30:00+01:00"
    march = _march(api, cal)
    assert {(e["title"], e["startsAt"][11:16]) for e in march} == {("Later", "10:30")}
    assert len(march) == 9


def test_scope_following_ends_the_series_and_starts_a_new_one_with_the_change(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(api, cal, recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=8"])
    deliveries = len(queued(db, cal.owner))
    response = api.patch(
        f"{EVENTS}/{series['id']}_20260316T083000Z",
        params={"scope": "following"},
        json={"title": "New time", "startsAt": "2026-03-16T13:00", "endsAt": "2026-03-16T14:00"},
        headers=cal.headers,
    )
    assert response.status_code == 200, response.text
    new = response.json()
    assert new["id"] != series["id"] and new["recurrence"] == [
        "RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=4"
    ]
    old = api.get(f"{EVENTS}/{series['id']}", headers=cal.headers).json()
    assert old["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20260316T082959Z"]
    assert [(e["startsAt"][:16], e["title"]) for e in _march(api, cal)] == [
        ("2026-03-02T09:30", "Stand-up"),
        ("2026-03-04T09:30", "Stand-up"),
        ("2026-03-09T09:30", "Stand-up"),
        ("2026-03-11T09:30", "Stand-up"),
        ("2026-03-16T13:00", "New time"),
        ("2026-03-18T13:00", "New time"),
        ("2026-03-23T13:00", "New time"),
        ("2026-03-25T13:00", "New time"),
    ]
    # One transaction, so one created_at: the two deliveries in either order.
    assert sorted(queued(db, cal.owner)[deliveries:], key=lambda d: d[0]) == [
        ("calendar.event.created", new),
        ("calendar.event.updated", old),
    ]


def test_delete_with_scope_following_ends_the_series_before_the_occurrence(
    api: httpx.Client, cal: Cal, db: Database
) -> None:
    series = _weekly(api, cal)
    api.patch(f"{EVENTS}/{series['id']}_20260325T083000Z", json={"title": "x"}, headers=cal.headers)
    response = api.delete(
        f"{EVENTS}/{series['id']}_20260318T083000Z",
        params={"scope": "following"},
        headers=cal.headers,
    )
    assert response.status_code == 204, response.text
    assert [e["startsAt"][:10] for e in listed(api, cal)] == [
        "2026-03-02",
        "2026-03-04",
        "2026-03-09",
        "2026-03-11",
        "2026-03-16",
    ]
    old = api.get(f"{EVENTS}/{series['id']}", headers=cal.headers).json()
    assert queued(db, cal.owner)[-1] == ("calendar.event.updated", old)
    # From the first occurrence, "this and following" is the whole series.
    api.delete(
        f"{EVENTS}/{series['id']}_20260302T083000Z",
        params={"scope": "following"},
        headers=cal.headers,
    )
    assert api.get(f"{EVENTS}/{series['id']}", headers=cal.headers).status_code == 404


def test_a_bad_scope_and_a_rule_sent_to_one_occurrence_are_400s(
    api: httpx.Client, cal: Cal
) -> None:
    series = _weekly(api, cal)
    one = f"{EVENTS}/{series['id']}_20260309T083000Z"
    bad = api.delete(one, params={"scope": "some"}, headers=cal.headers)
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "scope"
    rule = api.patch(one, json={"recurrence": ["RRULE:FREQ=DAILY"]}, headers=cal.headers)
    assert rule.status_code == 400 and rule.json()["errors"][0]["field"] == "recurrence"


def test_a_one_calendar_key_reaches_no_series_or_occurrence_of_another_calendar_by_any_id(
    api: httpx.Client, factory: Factory
) -> None:
    mine = calendar_in(factory, BERLIN)
    other = calendar_in(factory, BERLIN, owner=mine.owner)
    series = _weekly(api, other)
    exception = f"{series['id']}_20260309T083000Z"
    cancelled = f"{series['id']}_20260311T083000Z"
    api.patch(f"{EVENTS}/{exception}", json={"title": "Changed"}, headers=other.headers)
    api.delete(f"{EVENTS}/{cancelled}", headers=other.headers)
    ids = (
        series["id"],
        exception,
        cancelled,
        f"{series['id']}_20260316T083000Z",
        f"{series['id']}_20260316",
    )
    for event_id in ids:
        url = f"{EVENTS}/{event_id}"
        assert api.get(url, headers=mine.headers).status_code == 404, event_id
        assert api.patch(url, json={"title": "x"}, headers=mine.headers).status_code == 404
        for scope in ("this", "following", "all"):
            assert api.delete(url, params={"scope": scope}, headers=mine.headers).status_code == 404
    assert _march(api, mine) == []
    # Another owner's key with every calendar reaches none of it either.
    _, stranger = factory.key(factory.owner())
    for event_id in ids:
        assert api.get(f"{EVENTS}/{event_id}", headers=bearer(stranger)).status_code == 404
    assert len(_march(api, other)) == 8  # all there (less the cancelled one) for its own key


def test_an_idempotency_key_replays_the_series_it_created(api: httpx.Client, cal: Cal) -> None:
    body = {
        "title": "Weekly",
        "calendarId": cal.id,
        "startsAt": "2026-03-02T09:30",
        "endsAt": "2026-03-02T10:00",
        "recurrence": ["RRULE:FREQ=WEEKLY"],
    }
    headers = {**cal.headers, "Idempotency-Key": "series-once"}
    first = api.post(EVENTS, json=body, headers=headers)
    again = api.post(EVENTS, json=body, headers=headers)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    other = api.post(EVENTS, json={**body, "recurrence": ["RRULE:FREQ=DAILY"]}, headers=headers)
    assert other.status_code == 422
    assert len(listed(api, cal, singleEvents="false")) == 1


def test_splitting_just_after_a_start_the_rule_does_not_give_keeps_that_start(
    api: httpx.Client, cal: Cal
) -> None:
    # Sunday 1 March is the first occurrence (RFC 5545), then Mondays.
    series = _weekly(
        api,
        cal,
        startsAt="2026-03-01T09:30",
        endsAt="2026-03-01T10:00",
        recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO"],
    )
    response = api.delete(
        f"{EVENTS}/{series['id']}_20260302T083000Z",
        params={"scope": "following"},
        headers=cal.headers,
    )
    assert response.status_code == 204, response.text
    assert [e["startsAt"][:10] for e in listed(api, cal)] == ["2026-03-01"]


def test_requests_racing_to_change_one_occurrence_never_fail_on_the_exception_row(
    server: RunningServer, cal: Cal
) -> None:
    with httpx.Client(base_url=server.url) as client:
        series = _weekly(client, cal)
    url = f"{EVENTS}/{series['id']}_20260309T083000Z"

    def change(n: int) -> int:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            if n % 2:
                return client.delete(url, headers=cal.headers).status_code
            return client.patch(url, json={"title": f"t{n}"}, headers=cal.headers).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(change, range(16)))
    # Each request either found the occurrence (changed or cancelled it) or found it cancelled.
    assert set(statuses) <= {200, 204, 404}, statuses
    assert 204 in statuses
    with httpx.Client(base_url=server.url) as client:
        assert client.get(url, headers=cal.headers).status_code == 404
