"""``Statement``: a Core statement compiled once per dialect and run straight on the driver.

For the few statements every request runs (the key's row, the history's insert, the list's
window, the outbox's rows); everything else goes through SQLAlchemy as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import ClauseElement

# The parameters in the order the SQL text names them, from the caller's (named) ones.
_InOrder = Callable[[Mapping[str, Any]], tuple[Any, ...]]


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

    Callers name the parameters; on SQLite the SQL text takes them by position (``?``), in
    the order the compiled statement lists them: ``sqlite3`` binds a named parameter by
    asking SQLite for its name and making a Python string of it each time, about a thousand
    instructions a parameter (the history's insert has eleven)."""

    __slots__ = ("_compiled", "statement")

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: dict[str, tuple[str, dict[str, Any], _InOrder | None]] = {}

    def sql(self, dialect: Dialect) -> tuple[str, dict[str, Any]]:
        """The SQL text for ``dialect`` and the parameters' defaults (by name)."""
        sql, defaults, _ = self._compiled.get(dialect.name) or self._compile(dialect)
        return sql, defaults

    def edited(self, sql: str, dialect: Dialect) -> str:
        """The compiled SQL text as run (a subclass may add what SQLAlchemy cannot render)."""
        return sql

    def _compile(self, dialect: Dialect) -> tuple[str, dict[str, Any], _InOrder | None]:
        in_order: _InOrder | None = None
        if dialect.name == "sqlite":
            compiled: Any = self.statement.compile(dialect=sqlite.dialect(paramstyle="qmark"))
            in_order = _in_order(tuple(compiled.positiontup or ()))
        else:
            compiled = self.statement.compile(dialect=dialect)
        defaults = {k: v for k, v in compiled.params.items() if v is not None}
        found = (self.edited(str(compiled), dialect), defaults, in_order)
        self._compiled[dialect.name] = found
        return found

    def _execute(self, conn: Connection, params: dict[str, Any]) -> Any:
        sql, defaults, in_order = self._compiled.get(conn.dialect.name) or self._compile(
            conn.dialect
        )
        if defaults:
            params = {**defaults, **params}
        values = params if in_order is None else in_order(params)
        # SQLAlchemy's own test before it tells listeners or the log of a statement (its
        # ``Connection._execute_context``): a listener of any connection event on the engine
        # or the connection, or echo. Ours set none (``engine.make_engine``), so this is two
        # attribute reads where asking for ``before_cursor_execute``'s listeners took several
        # Python calls: about a third of what a statement cost here before the driver.
        if conn._has_events or conn.engine._has_events or conn._echo:
            return conn.exec_driver_sql(sql, values)
        # The pool's connection as ``conn.connection`` gives it, without that property's
        # Python call (it only revalidates a connection that has none).
        fairy = conn._dbapi_connection
        raw: Any = (conn.connection if fairy is None else fairy).dbapi_connection
        if not getattr(raw, "in_transaction", False) and not conn.in_transaction():
            conn.begin()  # autobegin, as Connection.execute does
        return raw.execute(sql, values)

    def all(self, conn: Connection, **params: Any) -> list[Any]:
        return list(self._execute(conn, params).fetchall())

    def first(self, conn: Connection, **params: Any) -> Any:
        return self._execute(conn, params).fetchone()

    def run(self, conn: Connection, **params: Any) -> int:
        """Execute a write; returns the row count."""
        return int(self._execute(conn, params).rowcount)


def _no_values(params: Mapping[str, Any]) -> tuple[Any, ...]:
    return ()


def _in_order(names: tuple[str, ...]) -> _InOrder:
    """The values of ``names`` (repeated where the SQL text repeats one), as a tuple."""
    if not names:
        return _no_values
    if len(names) == 1:
        one = names[0]
        return lambda params: (params[one],)
    return itemgetter(*names)  # in C: no Python call per parameter
