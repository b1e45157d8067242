"""``owned_row``: one row by its id, of one owner or (for the operator's CLI) of anyone."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, Table, select

from calendar_service.platform.errors import NotFound


def owned_row(
    conn: Connection, table: Table, row_id: str, *, user_id: str | None, missing: str
) -> Row[Any]:
    """The row of ``table`` whose ``id`` is ``row_id``, if its ``user_id`` is ``user_id``
    (``None``: whoever's, the operator's CLI); ``NotFound(missing)`` otherwise."""
    query = select(table).where(table.c.id == row_id)
    if user_id is not None:
        query = query.where(table.c.user_id == user_id)
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(missing)
    return row
