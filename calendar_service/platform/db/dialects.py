"""SQL functions spelled once per dialect: ``dialect_function`` makes one (a SQLAlchemy
``FunctionElement``) from its SQLite and its PostgreSQL text, ``{args}`` standing for its
arguments. The statements that use them are compiled once per dialect (``Statement``), so
the choice costs nothing per request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeEngine


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


__all__ = ["dialect_function"]
