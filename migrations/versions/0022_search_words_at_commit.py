"""search_words_at_commit: on SQLite, an event's words reach the search index once a commit

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-13 10:00:00

FTS5 writes the words it holds as a new segment of its index whenever a savepoint is released,
and every statement that writes ``events`` inside a transaction runs under a statement journal,
whose end is one: each create, update or delete wrote a segment of its own (a leaf, an index
row, the structure record: about 113,000 instructions), and the requests of a group commit did
not share one. 0021's four parts cost every write about 13,000 instructions more each, the
triggers of every part being in every statement's program.

Here the triggers on ``events`` write what the index must learn into the plain table
``events_search_pending`` (``part``: 0021's part of the index; ``command``: NULL to add the
words, ``'delete'`` to take them out; ``key``: 0021's search key; ``words``: 0020's text), in
the same statement as the change. The service's commit on SQLite (``db.engine.
write_search_words``, called by every commit the service makes: the dialect's ``do_commit``
and the driver's own in ``db.transactions.commit``) moves them into each part in one
statement, in the order they were written, and empties the table, inside the transaction it
commits: the index still changes in the same transaction as the events, and a search, which
reads committed data, sees a write at once. One segment a commit and a part, however many
requests a group commit holds. A write made outside the service (the ``sqlite3`` shell) leaves
its words pending until the service's next commit.

PostgreSQL: nothing changes (its GIN index is kept by PostgreSQL itself).

Downgrade: the pending words written, 0021's triggers again.

Frozen: this file imports nothing of the service; the text, key and part expressions are
0021's, copied.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


TEXT_MOST = 100_000
KEY_SHIFT = 40
BUCKET_BITS = 22
PARTS = 4
_WEIGHTS = (1, 61, 3721, 226981)
_WATCHED = "calendar_id, title, description, location, attendees"


def _base(row: str) -> str:
    return (
        f"substr(coalesce({row}.title, '') || ' ' || coalesce({row}.description, '') || ' ' || "
        f"coalesce({row}.location, ''), 1, {TEXT_MOST})"
    )


def _words(row: str) -> str:
    people = (
        "(SELECT group_concat(coalesce(a.value ->> 'name', '') || ' ' || (a.value ->> 'email'), "  # noqa: S608
        f"' ') FROM json_each({row}.attendees, '$.attendees') AS a)"
    )
    return (
        f"{_base(row)} || CASE WHEN {row}.attendees IS NULL THEN '' "
        f"ELSE ' ' || coalesce({people}, '') END"
    )


def _bucket(row: str) -> str:
    weighted = " + ".join(
        f"{w} * unicode(substr({row}.calendar_id, -{k}))" for k, w in enumerate(_WEIGHTS, start=1)
    )
    return f"(coalesce({weighted}, 0) % {1 << BUCKET_BITS})"


def _key(row: str) -> str:
    return f"(({_bucket(row)} << {KEY_SHIFT}) + {row}.rowid)"


def _part(row: str) -> str:
    return f"(unicode(substr({row}.calendar_id, -1)) % {PARTS})"


def _pending(command: str, row: str) -> str:
    return (
        "INSERT INTO events_search_pending (part, command, key, words) "  # noqa: S608
        f"VALUES ({_part(row)}, {command}, {_key(row)}, {_words(row)})"
    )


def _changed() -> str:
    return " OR ".join(f"old.{c} IS NOT new.{c}" for c in _WATCHED.split(", "))


def _part_triggers() -> list[str]:
    """0021's triggers, one set a part."""
    statements = []
    for n in range(PARTS):
        table = f"events_search_{n}"
        delete_old = (
            f"INSERT INTO {table}({table}, rowid, words) "
            f"SELECT 'delete', {_key('old')}, {_words('old')} WHERE {_part('old')} = {n}"
        )
        insert_new = (
            f"INSERT INTO {table}(rowid, words) "
            f"SELECT {_key('new')}, {_words('new')} WHERE {_part('new')} = {n}"
        )
        statements += [
            f"CREATE TRIGGER {table}_insert AFTER INSERT ON events "  # noqa: S608
            f"WHEN {_part('new')} = {n} BEGIN "
            f"INSERT INTO {table}(rowid, words) VALUES ({_key('new')}, {_words('new')}); END",
            f"CREATE TRIGGER {table}_delete AFTER DELETE ON events "  # noqa: S608
            f"WHEN {_part('old')} = {n} BEGIN INSERT INTO {table}({table}, rowid, words) "
            f"VALUES ('delete', {_key('old')}, {_words('old')}); END",
            f"CREATE TRIGGER {table}_update AFTER UPDATE OF {_WATCHED} ON events "
            f"WHEN ({_changed()}) AND ({_part('old')} = {n} OR {_part('new')} = {n}) BEGIN "
            f"{delete_old}; {insert_new}; END",
        ]
    return statements


def _write_pending() -> list[str]:
    """The pending words into their parts, in order, and the table emptied."""
    return [
        *(
            f"INSERT INTO events_search_{n}(events_search_{n}, rowid, words) "  # noqa: S608
            f"SELECT command, key, words FROM events_search_pending WHERE part = {n} ORDER BY seq"
            for n in range(PARTS)
        ),
        "DELETE FROM events_search_pending",
    ]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    statements = [
        *(
            f"DROP TRIGGER IF EXISTS events_search_{n}_{t}"
            for n in range(PARTS)
            for t in ("insert", "delete", "update")
        ),
        "CREATE TABLE events_search_pending (seq INTEGER PRIMARY KEY, part INTEGER NOT NULL, "
        "command TEXT, key INTEGER NOT NULL, words TEXT NOT NULL)",
        f"CREATE TRIGGER events_search_insert AFTER INSERT ON events BEGIN "
        f"{_pending('NULL', 'new')}; END",
        f"CREATE TRIGGER events_search_delete AFTER DELETE ON events BEGIN "
        f"{_pending(chr(39) + 'delete' + chr(39), 'old')}; END",
        # The old words out before the new ones in (one trigger: in this order).
        f"CREATE TRIGGER events_search_update AFTER UPDATE OF {_WATCHED} ON events "
        f"WHEN {_changed()} BEGIN {_pending(chr(39) + 'delete' + chr(39), 'old')}; "
        f"{_pending('NULL', 'new')}; END",
    ]
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    statements = [
        *_write_pending(),
        *(f"DROP TRIGGER IF EXISTS events_search_{t}" for t in ("insert", "delete", "update")),
        "DROP TABLE events_search_pending",
        *_part_triggers(),
    ]
    for statement in statements:
        op.execute(statement)
