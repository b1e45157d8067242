"""``Statement``: a Core statement compiled once per dialect and run straight on the driver.

For the few statements every request runs (the key's row, the history's insert, the list's
window, the outbox's rows); everything else goes through SQLAlchemy as usual.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import ClauseElement


class Statement:
    """A Core statement compiled once per dialect and run by the driver, inside the
    connection's transaction: for the few statements every request runs.

    Profiles of the list and create endpoints showed SQLAlchemy's per-execution work (building
    the statement, its cache key, the execution context, ``Row`` objects and result type
    processing) costing several times what SQLite spends on the query. The SQL still comes
    from a Core statement; only the execution is direct. Rows are plain tuples of driver
    values: date-times are ``UTCDateTime`` text on SQLite (see ``timeutil.format_utc``) and
    aware datetimes on PostgreSQL; bind date-times with ``models.to_db``. When event listeners
    or echo watch the engine, execution goes through ``exec_driver_sql`` so that they see it.
    """

    __slots__ = ("_compiled", "statement")

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: dict[str, tuple[str, dict[str, Any]]] = {}

    def sql(self, dialect: Dialect) -> tuple[str, dict[str, Any]]:
        """The SQL text for ``dialect`` (named parameters) and the parameters' defaults."""
        found = self._compiled.get(dialect.name)
        if found is None:
            target = sqlite.dialect(paramstyle="named") if dialect.name == "sqlite" else dialect
            compiled = self.statement.compile(dialect=target)
            defaults = {k: v for k, v in compiled.params.items() if v is not None}
            found = self._compiled[dialect.name] = (str(compiled), defaults)
        return found

    def _execute(self, conn: Connection, params: dict[str, Any]) -> Any:
        found = self._compiled.get(conn.dialect.name)
        sql, defaults = self.sql(conn.dialect) if found is None else found
        if defaults:
            params = {**defaults, **params}
        # SQLAlchemy's own test before it tells listeners or the log of a statement (its
        # ``Connection._execute_context``): a listener of any connection event on the engine
        # or the connection, or echo. Ours set none (``engine.make_engine``), so this is two
        # attribute reads where asking for ``before_cursor_execute``'s listeners took several
        # Python calls: about a third of what a statement cost here before the driver.
        if conn._has_events or conn.engine._has_events or conn._echo:
            return conn.exec_driver_sql(sql, params)
        raw: Any = conn.connection.dbapi_connection
        if not getattr(raw, "in_transaction", False) and not conn.in_transaction():
            conn.begin()  # autobegin, as Connection.execute does
        return raw.execute(sql, params)

    def all(self, conn: Connection, **params: Any) -> list[Any]:
        return list(self._execute(conn, params).fetchall())

    def first(self, conn: Connection, **params: Any) -> Any:
        return self._execute(conn, params).fetchone()

    def run(self, conn: Connection, **params: Any) -> int:
        """Execute a write; returns the row count."""
        return int(self._execute(conn, params).rowcount)
