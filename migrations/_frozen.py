"""What the migrations need of the models, frozen as it was when they were written.

A migration never imports live code (``calendar_service``, or a library's model types such as
SQLModel's): editing a model, or upgrading a library, must never change what an old migration
creates. ``tests/core/test_layering.py`` holds the migrations to the standard library, Alembic,
SQLAlchemy and this module.

``UTCDateTime`` is the DDL of ``calendar_service.platform.models.columns.UTCDateTime``:
``timestamptz`` on PostgreSQL, text on SQLite. The migrations only create and alter columns with it
(those that move data read and write the stored text through plain ``sa.String`` columns), so only
its choice of column type is kept here, not its conversion of values. SQLModel's ``AutoString``,
which the models' string columns use, is written ``sa.String`` in the migrations: it is the
same type on SQLite and PostgreSQL (it differs only on MySQL, where a length is required).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, String
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware date-time column: ``timestamptz`` on PostgreSQL, text on SQLite."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String())
        return dialect.type_descriptor(self.impl)
