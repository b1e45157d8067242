"""``bench.api_seed``: the database built as the API builds it holds every row a create writes,
and the guard's kinds are named as ``bench.floor`` takes them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench import api_seed
from bench.floor import GUARDED, KINDS, parse_args
from calendar_service.access.keys import hash_secret


@pytest.mark.long
def test_a_database_built_through_the_api_holds_what_each_create_wrote(tmp_path: Path) -> None:
    meta = api_seed.seeded(5_000, directory=tmp_path, log=lambda _: None)
    db = sqlite3.connect(api_seed.pristine(5_000, tmp_path))

    def count(sql: str, *args: object) -> int:
        return int(db.execute(sql, args).fetchone()[0])

    default = db.execute("SELECT id FROM calendars WHERE is_default").fetchone()[0]
    assert meta.calendar_id == default and meta.calendars == 1
    assert count("SELECT count(*) FROM events WHERE calendar_id = ?", default) == 5_000
    assert count("SELECT count(*) FROM events WHERE description IS NULL OR location IS NULL") == 0
    writer = db.execute(
        "SELECT id, calendar_id, permission FROM api_keys WHERE secret_hash = ?",
        (hash_secret(meta.write_secret),),
    ).fetchone()
    assert writer[1:] == (None, "write")  # the all-calendars key made every event
    assert count("SELECT count(*) FROM calls WHERE key_id = ? AND status = 201", writer[0]) == 5_000
    for table in ("changes", "event_sync", "idempotency_keys", "webhook_deliveries"):
        assert count(f"SELECT count(*) FROM {table}") == 5_000, table  # noqa: S608
    assert count("SELECT count(*) FROM webhook_deliveries WHERE status = 'succeeded'") == 5_000
    one = db.execute(
        "SELECT calendar_id, permission FROM api_keys WHERE secret_hash = ?",
        (hash_secret(meta.one_calendar_write_secret),),
    ).fetchone()
    assert one == (default, "write")
    # Kept: asked again, the same database is answered without building it.
    again = api_seed.seeded(5_000, directory=tmp_path, log=lambda _: None)
    assert again == meta


def test_the_guard_counts_the_api_built_create_and_refuses_an_unknown_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert parse_args([]).kinds == GUARDED == ("list", "create", "create_api")
    assert parse_args(["--kind", "create_api,create_api_one"]).kinds == KINDS[3:]
    with pytest.raises(SystemExit):
        parse_args(["--kind", "create,creat"])
    assert "unknown creat" in capsys.readouterr().err
