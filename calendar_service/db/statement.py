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

_POSITIONAL = sqlite.dialect(paramstyle="qmark")


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

    On SQLite the parameters are bound by position (``?``), in the order the compiled
    statement names them: the driver binds a named parameter by making its name a string and
    looking it up, which cost a create's four inserts some 80,000 instructions.
    """

    __slots__ = ("_compiled", "_order", "statement")

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: dict[str, tuple[str, dict[str, Any]]] = {}
        self._order: dict[str, tuple[str, ...]] = {}  # SQLite: the parameters, by position

    def sql(self, dialect: Dialect) -> tuple[str, dict[str, Any]]:
        """The SQL text for ``dialect`` (on SQLite, parameters by position: ``_order``) and the
        parameters' defaults."""
        found = self._compiled.get(dialect.name)
        if found is None:
            if dialect.name == "sqlite":
                compiled = self.statement.compile(dialect=_POSITIONAL)
                order = getattr(compiled, "positiontup", None)  # a SQLCompiler's
                self._order[dialect.name] = tuple(order or ())
            else:
                compiled = self.statement.compile(dialect=dialect)
            defaults = {k: v for k, v in compiled.params.items() if v is not None}
            found = self._compiled[dialect.name] = (str(compiled), defaults)
        return found

    def _execute(self, conn: Connection, params: dict[str, Any]) -> Any:
        sql, defaults = self.sql(conn.dialect)
        if defaults:
            params = {**defaults, **params}
        order = self._order.get(conn.dialect.name)
        bound: Any = params if order is None else [params[name] for name in order]
        if conn.dispatch.before_cursor_execute or conn.engine.echo:
            return conn.exec_driver_sql(sql, tuple(bound) if order is not None else bound)
        raw: Any = conn.connection.dbapi_connection
        if not conn.in_transaction() and not getattr(raw, "in_transaction", False):
            conn.begin()  # autobegin, as Connection.execute does
        return raw.execute(sql, bound)

    def all(self, conn: Connection, **params: Any) -> list[Any]:
        return list(self._execute(conn, params).fetchall())

    def first(self, conn: Connection, **params: Any) -> Any:
        return self._execute(conn, params).fetchone()

    def run(self, conn: Connection, **params: Any) -> int:
        """Execute a write; returns the row count."""
        return int(self._execute(conn, params).rowcount)
