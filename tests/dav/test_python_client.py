"""The ``caldav`` Python client (3.x) against the real server: discover from the base
address, list the calendars, search a date range (with and without expansion), create,
update, delete, and sync."""

from __future__ import annotations

from datetime import UTC, datetime

import caldav
import httpx

from tests.dav.support import app_account, ics
from tests.rest.conftest import EVENTS
from tests.support import Factory, RunningServer, bearer


def test_the_caldav_client_discovers_reads_writes_and_syncs(
    server: RunningServer, api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    rest = factory.key(app.owner)[1]
    factory.calendar(app.owner, name="Work")
    made = api.post(
        EVENTS,
        json={
            "title": "Standup",
            "startsAt": "2026-03-02T08:00:00Z",
            "endsAt": "2026-03-02T08:15:00Z",
            "recurrence": ["RRULE:FREQ=DAILY;COUNT=5"],
        },
        headers=bearer(rest),
    ).json()
    with caldav.DAVClient(url=server.url, username=app.owner.email, password=app.secret) as client:
        principal = client.principal()
        calendars = {c.get_display_name(): c for c in principal.get_calendars()}
        assert set(calendars) == {"Личное", "Work"}
        calendar = calendars["Личное"]

        found = calendar.search(
            start=datetime(2026, 3, 3, tzinfo=UTC), end=datetime(2026, 3, 4, tzinfo=UTC), event=True
        )
        assert [str(e.icalendar_component["UID"]) for e in found] == [made["id"]]
        expanded = calendar.search(
            start=datetime(2026, 3, 3, tzinfo=UTC),
            end=datetime(2026, 3, 5, tzinfo=UTC),
            event=True,
            expand=True,
        )
        assert len(expanded) == 2

        synced = calendar.objects_by_sync_token(load_objects=True)
        assert len(list(synced)) == 1

        created = calendar.save_event(ics("client-1", summary="Dentist"))
        listed = api.get(
            EVENTS,
            params={"timeMin": "2026-03-02T00:00:00Z", "timeMax": "2026-03-03T00:00:00Z"},
            headers=bearer(rest),
        ).json()["events"]
        assert "Dentist" in {e["title"] for e in listed}

        created.load()
        created.icalendar_component["SUMMARY"] = "Dentist (moved)"
        created.save()
        again = calendar.event_by_uid("client-1")
        assert str(again.icalendar_component["SUMMARY"]) == "Dentist (moved)"

        updates = synced.sync()
        assert len(list(updates[0])) >= 1  # the new event arrived

        again.delete()
        gone = api.get(
            EVENTS,
            params={"timeMin": "2026-03-02T00:00:00Z", "timeMax": "2026-03-03T00:00:00Z"},
            headers=bearer(rest),
        ).json()["events"]
        assert "Dentist (moved)" not in {e["title"] for e in gone}
