"""Date-times in the database: stored as UTC, timezone-aware on the way out on every backend.

``UTCDateTime`` is the column type (SQLite keeps ISO text, PostgreSQL ``timestamptz``);
``to_db`` and ``from_db`` are its conversions for hot paths that bind and read values
straight from the driver; ``utc_text_of`` reads a column as SQLite's text on every backend.
``utc_field`` declares such a column on a table, ``table_of`` is a table model's table.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, DateTime, Integer, String, Table
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from calendar_service.platform.db.dialects import dialect_function
from calendar_service.platform.timeutil import from_utc_text, utc_text


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC ``datetime`` on every backend.

    PostgreSQL: ``timestamptz``. SQLite: the fixed-width UTC text of ``timeutil.utc_text``
    (``2026-03-02T08:30:00.000000Z``, which sorts in time order); hot paths that read rows
    straight from the driver format that text without parsing it (``timeutil.format_utc``)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String())
        return dialect.type_descriptor(self.impl)

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | str | None:
        return None if value is None else to_db(value, dialect.name)

    def process_result_value(self, value: datetime | str | None, dialect: Any) -> datetime | None:
        return None if value is None else from_db(value)


def to_db(value: datetime, dialect_name: str) -> datetime | str:
    """A date-time as the driver takes it for a ``UTCDateTime`` column."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTCDateTime column")
    return utc_text(value) if dialect_name == "sqlite" else value.astimezone(UTC)


def from_db(value: datetime | str) -> datetime:
    """A ``UTCDateTime`` column's value as the driver returns it, as an aware UTC datetime."""
    if type(value) is str:
        return from_utc_text(value)
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


utc_text_of = dialect_function(  # lower case: used like a SQL function
    "utc_text_of",
    String(),
    sqlite="{args}",
    postgresql="to_char({args} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
    doc="A ``UTCDateTime`` column as the text SQLite stores (``timeutil.utc_text``), on every "
    "backend: PostgreSQL formats it in the query, so hot paths read the same text everywhere "
    "and turn it into RFC 3339 by slicing (no datetime objects per value).",
)


def utc_field(nullable: bool = False, index: bool = False) -> Any:
    """A table model's ``UTCDateTime`` column."""
    return Field(sa_column=Column(UTCDateTime(), nullable=nullable, index=index))


def serial_id() -> Any:
    """A history table's ``id``: an integer primary key the database numbers."""
    return Field(default=None, sa_column=Column(Integer, primary_key=True))


def table_of(model: type[SQLModel]) -> Table:
    """A model's table: SQLModel does not declare ``__table__`` to type checkers."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table
