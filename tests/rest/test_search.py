"""``q`` on ``GET /api/v1/calendar/events`` over a real server: what it finds, with the window,
calendars, pages and series; who may search; hostile queries, fuzzed over HTTP (never a 5xx, a
400 on ``q`` only for what cannot be a query); attendees' names and emails; the index kept in
step with a PATCH of the attendees, an undo and an approval."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import insert, text

from calendar_service.access import keys
from calendar_service.calendar import events
from calendar_service.calendar.events import events_t
from calendar_service.governance.approving import approve
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.db.engine import POSTGRES_POOL_SIZE
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import utcnow
from tests.core.calendar.events.test_search import HOSTILE
from tests.rest.conftest import EVENTS, create_event, with_work
from tests.support import Factory, bearer, own_server, wait_for

WINDOW = {"timeMin": "2026-03-01", "timeMax": "2026-04-01"}


def search(api: httpx.Client, secret: str, q: str, **params: Any) -> httpx.Response:
    return api.get(EVENTS, params={**WINDOW, "q": q, **params}, headers=bearer(secret))


def titles(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [e["title"] for e in response.json()["events"]]


def test_q_finds_events_by_a_prefix_of_their_words_in_any_script_and_accents_aside(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    create_event(api, secret, title="Dentist", location="Main Street")
    create_event(
        api, secret, title="Личное", startsAt="2026-03-03T09:00Z", endsAt="2026-03-03T10:00Z"
    )
    create_event(
        api, secret, title="Café", startsAt="2026-03-04T09:00Z", endsAt="2026-03-04T10:00Z"
    )
    assert titles(search(api, secret, "denti")) == ["Dentist"]
    assert titles(search(api, secret, "main DENTIST")) == ["Dentist"]
    assert titles(search(api, secret, "dentist cafe")) == []
    assert titles(search(api, secret, "личн")) == ["Личное"]
    assert titles(search(api, secret, "cafe")) == ["Café"]


def test_an_empty_or_blank_q_is_a_400_naming_q_and_an_omitted_one_lists_everything(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    create_event(api, secret, title="Dentist")
    for q in ("", "   ", "\t"):
        response = search(api, secret, q)
        assert response.status_code == 400, (q, response.text)
        assert response.json()["code"] == "validation_error"
        assert [e["field"] for e in response.json()["errors"]] == ["q"]
        assert "words to find" in response.json()["errors"][0]["message"]
    listed = api.get(EVENTS, params=WINDOW, headers=bearer(secret))
    assert [e["title"] for e in listed.json()["events"]] == ["Dentist"]


def test_strasse_finds_strasse_with_a_sharp_s_and_fish_its_ligature(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    create_event(api, secret, title="Straße fest", description="ﬁsh market")
    for q in ("strasse", "STRASSE", "straße", "stra", "fish", "ﬁsh"):
        assert titles(search(api, secret, q)) == ["Straße fest"], q


def test_a_search_pages_on_with_its_words_and_refuses_its_token_for_another_q(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    series = create_event(
        api, secret, title="Physio", recurrence=["RRULE:FREQ=WEEKLY;COUNT=3"], location="Clinic"
    )
    patched = api.patch(
        f"{EVENTS}/{series['id']}_20260309T090000Z",
        json={"title": "Massage"},
        headers=bearer(secret),
    )
    assert patched.status_code == 200, patched.text
    first = search(api, secret, "physio", limit=1)
    assert titles(first) == ["Physio"]
    token = first.json()["nextPageToken"]
    second = search(api, secret, "physio", limit=1, pageToken=token)
    assert [e["startsAt"][:10] for e in second.json()["events"]] == ["2026-03-16"]
    assert "nextPageToken" not in second.json() and "nextSyncToken" not in second.json()
    other = search(api, secret, "massage", limit=1, pageToken=token)
    assert other.status_code == 400
    assert [e["field"] for e in other.json()["errors"]] == ["pageToken"]
    assert titles(search(api, secret, "massage")) == ["Massage"]
    assert titles(search(api, secret, "clinic", singleEvents="false")) == ["Physio", "Massage"]


def test_q_with_calendar_ids_and_a_one_calendar_key_finds_only_those_calendars(
    api: httpx.Client, factory: Factory
) -> None:
    owner, work, everything = with_work(factory)
    create_event(api, everything, title="Offsite planning", calendarId=work)
    create_event(api, everything, title="Offsite packing")
    _, work_only = factory.key(owner, permission="read", calendar_id=work)
    assert titles(search(api, work_only, "offsite")) == ["Offsite planning"]
    assert titles(search(api, everything, "offsite", calendarIds="Work")) == ["Offsite planning"]
    assert len(titles(search(api, everything, "offsite"))) == 2
    _, stranger = factory.key(factory.owner(), permission="read")
    assert titles(search(api, stranger, "offsite")) == []


def test_a_free_busy_key_cannot_search(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner(), permission="freebusy")
    refused = search(api, secret, "dentist")
    assert refused.status_code == 401
    assert refused.json()["code"] == "insufficient_scope"


def test_q_too_long_or_with_a_nul_is_a_400_on_q_and_with_sync_token_too(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    for q in ("a" * 501, "dentist\x00"):
        refused = search(api, secret, q)
        assert refused.status_code == 400, q
        assert refused.json()["code"] == "validation_error"
        assert [e["field"] for e in refused.json()["errors"]] == ["q"]
    assert search(api, secret, "a" * 500).status_code == 200
    sync = api.get(EVENTS, headers=bearer(secret)).json()["nextSyncToken"]
    both = api.get(EVENTS, params={"q": "x", "syncToken": sync}, headers=bearer(secret))
    assert both.status_code == 400
    assert [e["field"] for e in both.json()["errors"]] == ["q"]


def test_an_undone_delete_is_found_again(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    event = create_event(api, secret, title="Vet appointment")
    deleted = api.delete(f"{EVENTS}/{event['id']}", headers=bearer(secret))
    assert deleted.status_code == 204
    assert titles(search(api, secret, "vet")) == []
    change = deleted.headers["calendar-change-id"]
    undone = api.post(f"/api/v1/calendar/changes/{change}/undo", headers=bearer(secret))
    assert undone.status_code == 200, undone.text
    assert titles(search(api, secret, "vet")) == ["Vet appointment"]


def test_q_finds_attendees_names_and_emails_and_follows_a_patch_of_them_and_its_undo(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    ana = {"email": "ana@example.com", "name": "Ana Lima"}
    event = create_event(api, secret, title="Kickoff", attendees=[ana])
    assert titles(search(api, secret, "lima")) == ["Kickoff"]
    assert titles(search(api, secret, "ana example")) == ["Kickoff"]
    assert titles(search(api, secret, "kickoff ana@example.com")) == ["Kickoff"]
    patched = api.patch(
        f"{EVENTS}/{event['id']}",
        json={"attendees": [{"email": "bo@example.org", "name": "Bo Lindqvist"}]},
        headers=bearer(secret),
    )
    assert patched.status_code == 200, patched.text
    assert titles(search(api, secret, "lima")) == [] and titles(search(api, secret, "ana")) == []
    assert titles(search(api, secret, "lindqvist bo")) == ["Kickoff"]
    change = patched.headers["calendar-change-id"]
    undone = api.post(f"/api/v1/calendar/changes/{change}/undo", headers=bearer(secret))
    assert undone.status_code == 200, undone.text
    assert titles(search(api, secret, "lima")) == ["Kickoff"]
    assert titles(search(api, secret, "lindqvist")) == []


def test_a_rename_that_waits_is_found_by_its_new_words_once_approved(
    api: httpx.Client, db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    _, writer = factory.key(owner)
    _, careful = factory.key(owner, approval="destructive")
    event = create_event(api, writer, title="Checkup")
    waiting = api.patch(
        f"{EVENTS}/{event['id']}", json={"title": "Vaccine"}, headers=bearer(careful)
    )
    assert waiting.status_code == 202, waiting.text
    assert titles(search(api, writer, "vaccine")) == []
    assert titles(search(api, writer, "checkup")) == ["Checkup"]
    decided = db.call(
        approve, user_id=owner.id, proposal_id=waiting.json()["id"], now=utcnow(), transport="cli"
    )
    assert decided["status"] == "approved", decided
    assert titles(search(api, writer, "vaccine")) == ["Vaccine"]
    assert titles(search(api, writer, "checkup")) == []


def test_the_document_describes_q(api: httpx.Client) -> None:
    document = api.get("/api/openapi.json").json()
    q = document["components"]["parameters"]["q"]
    assert q["in"] == "query" and q["schema"]["maxLength"] == 500
    assert q["example"] == "dentist" and "denti" in q["description"]
    listing = document["paths"]["/calendar/events"]["get"]["parameters"]
    assert {"$ref": "#/components/parameters/q"} in listing


@pytest.fixture(scope="module")
def fuzz_key(db: Database, factory: Factory) -> str:
    """A read key of an owner with a few events to search."""
    owner = factory.owner()
    writer = keys.owner_principal(owner.id)
    for day, title in enumerate(("Dentist", "Личное", "Café", "NEAR OR AND"), start=2):
        data = EventCreate(
            title=title,
            starts_at=f"2026-03-0{day}T09:00:00Z",
            ends_at=f"2026-03-0{day}T10:00:00Z",
        )
        db.call(events.create_event, principal=writer, data=data, now=utcnow())
    return factory.key(owner, permission="read")[1]


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(q=HOSTILE)
def test_any_q_over_http_is_an_answer_or_a_400_on_q_never_a_5xx(
    api: httpx.Client, fuzz_key: str, q: str
) -> None:
    response = search(api, fuzz_key, q)
    if len(q) > 500 or "\x00" in q or not q.strip():
        assert response.status_code == 400, (q, response.text)
        assert [e["field"] for e in response.json()["errors"]] == ["q"]
    else:
        assert response.status_code == 200, (q, response.text)


# ---------------------------------------------------------------------------------------------
# /healthz beside searches that hold every database thread (PostgreSQL: requests run on a pool
# of threads and connections; SQLite runs them on the event loop, and pings inline)

IN_FLIGHT = 16


@pytest.mark.postgresql  # PostgreSQL's pool of threads (SQLite pings inline)
def test_healthz_answers_while_sixteen_one_letter_searches_hold_every_database_thread(
    config: Config, db: Database, factory: Factory
) -> None:
    """Thousands of events, sixteen ``q=s`` at once, each held in PostgreSQL by a lock on
    ``events`` until /healthz has answered: it must answer while they are all in flight (its
    ping has a connection and a thread of its own), and they all answer once let go."""
    owner = factory.owner()
    calendar_id = owner.default_calendar_id
    _, secret = factory.key(owner, permission="read", calendar_id=calendar_id)
    now = utcnow()
    starts = datetime(2026, 3, 1, tzinfo=UTC)
    rows = [
        {
            "id": new_id("ev"),
            "calendar_id": calendar_id,
            "title": f"Standup {n}",
            "description": f"sprint sync s{n} summary",
            "starts_at": starts + timedelta(minutes=10 * n),
            "ends_at": starts + timedelta(minutes=10 * n + 5),
            "all_day": False,
            "created_at": now,
            "updated_at": now,
        }
        for n in range(3000)
    ]
    with db.engine.begin() as conn:
        conn.execute(insert(events_t), rows)
    with (
        own_server(config) as server,
        ThreadPoolExecutor(IN_FLIGHT) as pool,
        db.engine.connect() as locker,
        httpx.Client(base_url=server.url, timeout=60) as api,
    ):
        locker.execute(text("LOCK TABLE events IN ACCESS EXCLUSIVE MODE"))
        held = [pool.submit(search, api, secret, "s", limit="5") for _ in range(IN_FLIGHT)]

        def waiting() -> bool:
            # Every database thread of the server holds a search waiting for the lock
            # (its statement still being planned: pg_stat_activity may not show its text;
            # read afresh, not the transaction's first snapshot of it).
            locker.execute(text("SELECT pg_stat_clear_snapshot()"))
            count = locker.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                )
            ).scalar()
            return bool(count and count >= POSTGRES_POOL_SIZE)

        wait_for(waiting, what="the searches to hold every database thread")
        assert api.get("/healthz", timeout=30).json() == {"status": "ok"}
        assert not any(f.done() for f in held)  # answered while all were in flight
        locker.rollback()  # the lock goes
        answers = [f.result() for f in held]
    assert {a.status_code for a in answers} == {200}
    assert {tuple(titles(a)) for a in answers} == {tuple(f"Standup {n}" for n in range(5))}
