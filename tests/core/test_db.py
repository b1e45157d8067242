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


def test_database_errors_never_carry_the_statement_parameters(db: Database) -> None:
    import pytest
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    with pytest.raises(DBAPIError) as caught:
        db.call(
            lambda conn: conn.execute(
                text("INSERT INTO users (id, email, created_at) VALUES (:id, NULL, :at)"),
                {"id": "usr_secret_value_123", "at": "2026-01-01"},
            )
        )
    message = str(caught.value)
    assert "SQL parameters hidden" in message
    if db.engine.dialect.name == "sqlite":  # PostgreSQL's own DETAIL may still quote the row
        assert "usr_secret_value_123" not in message
