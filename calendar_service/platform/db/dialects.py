"""SQL functions spelled once per dialect: ``dialect_function`` makes one (a SQLAlchemy
``FunctionElement``) from its SQLite and its PostgreSQL text, ``{args}`` standing for its
arguments; ``joined_texts`` (the list's series) and ``position_in`` (the outbox's reach) are
made here, in one place. The statements that use them are compiled once per dialect
(``Statement``), so the choice costs nothing per request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Integer, String, TypeEngine


def dialect_function(
    name: str, type_: TypeEngine[Any], *, sqlite: str, postgresql: str, doc: str
) -> type[FunctionElement[Any]]:
    """A SQL function ``name`` of type ``type_``: ``sqlite``'s text on SQLite (the default),
    ``postgresql``'s on PostgreSQL, each with ``{args}`` replaced by the arguments."""
    made: type[FunctionElement[Any]] = type(
        name,
        (FunctionElement,),
        {"type": type_, "inherit_cache": True, "name": name, "__doc__": doc},
    )
    compiles(made)(_written(sqlite))
    compiles(made, "postgresql")(_written(postgresql))
    return made


def _written(template: str) -> Callable[..., str]:
    def compiled(element: FunctionElement[Any], compiler: Any, **kw: Any) -> str:
        return template.replace("{args}", str(compiler.process(element.clauses, **kw)))

    return compiled


# The functions the core's statements share (lower case: used like SQL functions);
# ``models.columns.utc_text_of`` is the columns' own.
joined_texts = dialect_function(
    "joined_texts",
    String(),
    sqlite="group_concat({args}, ',')",
    postgresql="string_agg({args}, ',')",
    doc="An aggregate: the texts of a group joined with commas (NULL for none).",
)
position_in = dialect_function(
    "position_in",
    Integer(),
    sqlite="instr({args})",
    postgresql="strpos({args})",
    doc="Where a text occurs in another (1-based; 0: not in it).",
)

__all__ = ["dialect_function", "joined_texts", "position_in"]
