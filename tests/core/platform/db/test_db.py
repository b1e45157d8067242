"""The bridge from async fronts to the synchronous core."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import bindparam

from calendar_service.platform.db import Database
from calendar_service.platform.models import users_t


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


def test_atomic_commits_core_and_driver_statements_together_or_neither(db: Database) -> None:
    import pytest
    from sqlalchemy import insert, select

    from calendar_service.platform.db import Statement, atomic
    from calendar_service.platform.ids import new_id
    from calendar_service.platform.models import to_db
    from calendar_service.platform.timeutil import utcnow

    by_driver = Statement(
        insert(users_t).values(
            id=bindparam("id"), email=bindparam("email"), created_at=bindparam("at")
        )
    )
    kept, dropped = [new_id("usr") for _ in range(2)], [new_id("usr") for _ in range(2)]

    def write(conn: Any, ids: list[str], fail: bool) -> None:
        with atomic(conn):
            at = to_db(utcnow(), conn.dialect.name)
            by_driver.run(conn, id=ids[0], email=f"{ids[0]}@example.com", at=at)
            conn.execute(
                insert(users_t).values(
                    id=ids[1], email=f"{ids[1]}@example.com", created_at=utcnow()
                )
            )
            if fail:
                raise RuntimeError("boom")

    with db.engine.connect() as conn:
        write(conn, kept, False)
        with pytest.raises(RuntimeError):
            write(conn, dropped, True)
        assert not conn.in_transaction()
        found = set(
            conn.execute(select(users_t.c.id).where(users_t.c.id.in_(kept + dropped))).scalars()
        )
        conn.rollback()
    assert found == set(kept)


@pytest.mark.sqlite
def test_a_transaction_sqlalchemy_begins_on_sqlite_takes_the_write_lock_up_front(
    db: Database,
) -> None:
    """``engine.make_engine``: SQLAlchemy's begin is ``BEGIN IMMEDIATE`` on the driver, so a
    read that later writes never fails half-way with "database is locked"."""
    import pytest
    from sqlalchemy import select

    with db.engine.connect() as conn, conn.begin():
        conn.execute(select(users_t.c.id).limit(1)).all()
        raw: Any = conn.connection.dbapi_connection
        assert raw.in_transaction
        with db.engine.connect() as other:
            other_raw: Any = other.connection.dbapi_connection
            other_raw.execute("PRAGMA busy_timeout=0")
            with pytest.raises(Exception, match="locked"):
                other_raw.execute("BEGIN IMMEDIATE")
            other_raw.execute("PRAGMA busy_timeout=30000")


def test_a_listener_added_after_a_connection_was_kept_sees_its_compiled_statements(
    db: Database,
) -> None:
    """``db.Statement`` runs on the driver unless something watches the engine: a listener
    added later still sees every statement, on connections made before it."""
    from sqlalchemy import event, select

    from calendar_service.platform.db import Statement

    statement = Statement(select(users_t.c.id).where(users_t.c.id == bindparam("id")))
    seen: list[str] = []

    def watch(*args: Any) -> None:
        if args[0] is conn:  # not the statements of the app's workers, on their connections
            seen.append(args[2])

    with db.engine.connect() as conn:
        statement.all(conn, id="usr_nobody")
        event.listen(db.engine, "before_cursor_execute", watch)
        try:
            statement.all(conn, id="usr_nobody")
        finally:
            event.remove(db.engine, "before_cursor_execute", watch)
        statement.all(conn, id="usr_nobody")
        conn.rollback()
    assert seen == [statement.sql(db.engine.dialect)[0]]


def test_none_and_bool_are_bound_by_the_driver_as_null_and_integers(db: Database) -> None:
    """``engine.py`` registers ``sqlite3`` adapters for None and bool (a cheaper way to what
    ``sqlite3`` did without them); what is stored stays the same, on both databases."""
    from sqlalchemy import literal_column, select

    from calendar_service.platform.db import Statement

    types = Statement(
        select(
            literal_column("1").label("one"),
            bindparam("nothing", type_=None),
            bindparam("yes"),
            bindparam("no"),
        )
    )
    with db.engine.connect() as conn:
        _, nothing, yes, no = types.first(conn, nothing=None, yes=True, no=False)
        conn.rollback()
    assert nothing is None
    assert (yes, no) in ((1, 0), (True, False))  # SQLite: integers; PostgreSQL: booleans
