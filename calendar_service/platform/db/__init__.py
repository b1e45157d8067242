"""The database layer: the engine, transactions, and running the core's calls for the fronts.

One concept per module:

``engine``        ``make_engine``: the engine, set up for SQLite or PostgreSQL
``transactions``  ``atomic``: one transaction, opened and committed on the driver on SQLite;
                  then ``rolled_back``: a block whose writes are undone (a dry run), and
                  one that keeps or undoes them as it decides, ``tentative`` (approvals);
                  ``Group``: one shared by the calls of a group commit
``statement``     ``Statement``: the statements every request runs, compiled once, run on the driver
``rows``          ``owned_row``: one row by its id, of one owner (or of anyone, for the CLI)
``database``      ``Database``: runs core calls for the async fronts (inline on SQLite)
``thread_connections`` the connection each calling thread keeps between calls
``group``         SQLite's group commit (``Database.run_grouped``) and what a rerun asks of a call
``checkpoint``    SQLite's WAL checkpoints, on a thread of their own
``channels``      the keys of the notes left on a connection's ``info``
``dialects``      ``dialect_function``: a SQL function spelled once for SQLite, once for PostgreSQL;
                  the ones the core shares (``joined_texts``, ``position_in``)

The names below are the ones the rest of the service uses.
"""

from __future__ import annotations

from calendar_service.platform.db.database import Database
from calendar_service.platform.db.engine import make_engine, sqlite_path
from calendar_service.platform.db.rows import owned_row
from calendar_service.platform.db.statement import Statement
from calendar_service.platform.db.transactions import atomic, rolled_back, tentative

__all__ = [
    "Database",
    "Statement",
    "atomic",
    "make_engine",
    "owned_row",
    "rolled_back",
    "sqlite_path",
    "tentative",
]
