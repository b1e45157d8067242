"""The bridge from async fronts to the synchronous core."""

from __future__ import annotations

from calendar_service.db import Database


async def test_database_run_passes_positional_arguments_after_the_connection(
    db: Database,
) -> None:
    def echo(conn: object, first: int, second: int, *, third: int) -> tuple[int, int, int]:
        assert conn is not None
        return first, second, third

    assert await db.run(echo, 1, 2, third=3) == (1, 2, 3)
    assert await db.run_connected(echo, 4, 5, third=6) == (4, 5, 6)
