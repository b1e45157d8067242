"""Migration 0004 on a database an older version wrote: events outside the accepted range are
clamped to it (they overlap the same windows), events inside are left alone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, create_engine, select

from calendar_service.calendar.calendars import calendars_t
from calendar_service.calendar.events import events_t
from calendar_service.platform.migrate import alembic_config
from calendar_service.platform.models import users_t
from calendar_service.platform.timeutil import EARLIEST, LATEST, LONGEST_SPAN
from tests.support import fresh_database_url

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with fresh_database_url(tmp_path, prefix="calendar_0004") as url:
        engine = create_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


def _upgrade(engine: Engine, revision: str) -> None:
    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def _event(event_id: str, starts: datetime, ends: datetime) -> dict[str, object]:
    return {
        "id": event_id,
        "calendar_id": "cal_1",
        "title": event_id,
        "starts_at": starts,
        "ends_at": ends,
        "all_day": False,
        "created_at": NOW,
        "updated_at": NOW,
    }


def test_0004_clamps_events_an_older_version_stored_outside_the_range(engine: Engine) -> None:
    _upgrade(engine, "0003")
    ages = (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))
    inside = (
        datetime(2026, 3, 2, 9, 30, 0, 250000, tzinfo=UTC),
        datetime(2026, 3, 2, 10, tzinfo=UTC),
    )
    with engine.begin() as conn:  # the tables' own types write each backend's stored form
        conn.execute(users_t.insert().values(id="usr_1", email="a@example.com", created_at=NOW))
        conn.execute(
            calendars_t.insert().values(
                id="cal_1",
                user_id="usr_1",
                name="Work",
                time_zone="America/New_York",
                is_default=True,
                max_event_seconds=int((ages[1] - ages[0]).total_seconds()) + 1,
                created_at=NOW,
            )
        )
        conn.execute(
            events_t.insert(),
            [
                _event("ages", *ages),
                _event("early", ages[0], datetime(1900, 1, 1, 1, tzinfo=UTC)),
                _event("late", datetime(2200, 6, 1, tzinfo=UTC), ages[1]),
                _event("before", ages[0], datetime(1899, 12, 31, tzinfo=UTC)),
                _event("inside", *inside),
                _event("edges", EARLIEST, LATEST),
            ],
        )
    _upgrade(engine, "head")
    with engine.connect() as conn:
        stored = {
            row.id: (row.starts_at, row.ends_at)
            for row in conn.execute(select(events_t.c.id, events_t.c.starts_at, events_t.c.ends_at))
        }
        longest = conn.execute(select(calendars_t.c.max_event_seconds)).scalar_one()
    assert stored == {
        "ages": (EARLIEST, LATEST),
        "early": (EARLIEST, datetime(1900, 1, 1, 1, tzinfo=UTC)),
        "late": (datetime(2200, 6, 1, tzinfo=UTC), LATEST),
        "before": (EARLIEST, EARLIEST),
        "inside": inside,
        "edges": (EARLIEST, LATEST),
    }
    assert longest == int(LONGEST_SPAN.total_seconds()) + 1
