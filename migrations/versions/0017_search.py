"""search: the events' words, indexed for ``q`` on the list and ``searchCalendarEvents``

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-10 10:00:00

What is searched is an event's title, description and location, as one text (``title || ' ' ||
description || ' ' || location``, NULL as empty, its first ``TEXT_MOST`` characters); attendees'
names and emails join it when events have them (a later migration replaces the triggers and
functions below with the longer text, and rebuilds the index).

SQLite: ``events_search``, a contentless FTS5 table (``tokenize='unicode61 remove_diacritics
2'``: words are runs of letters and digits in any script, folded to lower case and stripped of
accents) whose rowid is the event row's; ``columnsize=0``: no row of sizes per event, which only
ranking would read (a search is ordered by start, not rank). Three triggers on ``events`` keep
it in step in the same transaction as every write of an event row, whatever the code that writes
it (create, update, series edits, delete, import, undo, approvals, calendar deletion): an insert
indexes the new row's text, a delete removes the old row's (the FTS5 ``'delete'`` command, given
the text that was indexed), an update of the title, description or location does both. The
existing rows are indexed here. A later migration that rebuilds ``events`` (Alembic's batch mode
on SQLite copies the table: the triggers go with the old one, and rowids may change) must create
the triggers again and index every row anew, as this one does.

PostgreSQL: a GIN index over ``calendar_search_vector(title, description, location)``, a
``tsvector`` of the ``simple`` configuration (no stemming, no stop words) over the text
folded by ``calendar_search_fold``: lower case (through the ICU root collation where the
server has it, so that every script is folded whatever the database's locale), accents removed
by ``unaccent`` (created here when the server allows; otherwise ``translate`` over the Latin
letters with accents), and punctuation turned into spaces (so that ``ana@example.com`` is three
words, as on SQLite). ``calendar_search_query(words)`` makes the ``tsquery`` of a search's
words (joined by spaces) with the same folding: every word must match, the last as a prefix.
The index is kept by PostgreSQL itself; ``CREATE INDEX`` indexes the existing rows. Its list of
entries not yet merged into the index (GIN's "fast update") is kept to ``PENDING_KB`` kB: every
search reads that list whole, and at the default 4 MB, after a few thousand creates, it was most
of what a search cost (1.4 ms of 1.5).

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


TEXT_MOST = 100_000
"""Characters of an event's text indexed at most: PostgreSQL refuses a ``tsvector`` over 1 MB
(a description can be longer: an import's), and both databases index the same."""


def _words(row: str) -> str:
    """The searched text of ``row`` (``new`` or ``old``) in a trigger, as one text."""
    return (
        f"substr(coalesce({row}.title, '') || ' ' || coalesce({row}.description, '') || ' ' || "
        f"coalesce({row}.location, ''), 1, {TEXT_MOST})"
    )


# Built from constants of this file only (S608: no outside text in any of them).
_SQLITE = (
    "CREATE VIRTUAL TABLE events_search USING fts5("
    "words, content='', columnsize=0, tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER events_search_insert AFTER INSERT ON events BEGIN "  # noqa: S608
    f"INSERT INTO events_search(rowid, words) VALUES (new.rowid, {_words('new')}); END",
    "CREATE TRIGGER events_search_delete AFTER DELETE ON events BEGIN "  # noqa: S608
    "INSERT INTO events_search(events_search, rowid, words) "
    f"VALUES ('delete', old.rowid, {_words('old')}); END",
    "CREATE TRIGGER events_search_update AFTER UPDATE OF title, description, location "  # noqa: S608
    "ON events WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
    "OR old.location IS NOT new.location BEGIN "
    "INSERT INTO events_search(events_search, rowid, words) "
    f"VALUES ('delete', old.rowid, {_words('old')}); "
    f"INSERT INTO events_search(rowid, words) VALUES (new.rowid, {_words('new')}); END",
    f"INSERT INTO events_search(rowid, words) SELECT rowid, {_words('events')} FROM events",  # noqa: S608
)

PENDING_KB = 64
"""GIN's pending list on PostgreSQL, in kB: entries past it are merged into the index."""

# Punctuation and symbols that are no part of a word: ASCII's, Latin-1's (not its letters and
# digits: ª ² ³ µ ¹ º ¼ ½ ¾), General Punctuation, CJK punctuation and the full-width forms'.
_PUNCTUATION = (
    r"[!-/:-@\[-`{-~\u00a0-\u00a9\u00ab-\u00b1\u00b4\u00b6-\u00b8\u00bb\u00bf\u00d7\u00f7"
    r"\u2000-\u206f\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+"
)
# Without unaccent: the Latin letters with accents, lower case (the text is lowered first).
_ACCENTED = (
    "àáâãäåāăąçćĉċčďđèéêëēĕėęěĝğġģĥħìíîïĩīĭįıĵķĺļľŀłñńņňòóôõöøōŏőŕŗřśŝşšţťŧùúûüũūŭůűųŵýÿŷźżž"
)
_PLAIN = "aaaaaaaaacccccddeeeeeeeeegggghhiiiiiiiiijklllllnnnnooooooooorrrsssstttuuuuuuuuuuwyyyzzz"


def _postgresql_fold(bind: Connection) -> str:
    """The body of ``calendar_search_fold(t)``: what the server allows decides it."""
    lowered = "lower(t)"
    if bind.execute(text("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'")).first():
        lowered = 'lower(t COLLATE "und-x-icu")'
    unaccented = f"translate({lowered}, '{_ACCENTED}', '{_PLAIN}')"
    savepoint = bind.begin_nested()
    try:
        bind.execute(text("CREATE EXTENSION IF NOT EXISTS unaccent"))
    except DBAPIError:  # not installed, or not allowed: translate instead
        savepoint.rollback()
    else:
        savepoint.commit()
    schema = bind.execute(
        text(
            "SELECT n.nspname FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'unaccent'"
        )
    ).scalar()
    if schema is not None:
        quoted = '"' + str(schema).replace('"', '""') + '"'
        unaccented = f"{quoted}.unaccent('{quoted}.unaccent'::regdictionary, {lowered})"
    return f"SELECT regexp_replace({unaccented}, '{_PUNCTUATION}', ' ', 'g')"


def _postgresql() -> list[str]:
    bind = op.get_bind()
    schema = bind.execute(text("SELECT current_schema()")).scalar()
    here = '"' + str(schema).replace('"', '""') + '".'
    fold = _postgresql_fold(bind)
    return [
        "CREATE FUNCTION calendar_search_fold(t text) RETURNS text "
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fold$ {fold} $fold$",
        "CREATE FUNCTION calendar_search_vector(title text, description text, location text) "
        "RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $vector$ "
        f"SELECT to_tsvector('simple'::regconfig, {here}calendar_search_fold(left("
        "coalesce(title, '') || ' ' || coalesce(description, '') || ' ' || "
        f"coalesce(location, ''), {TEXT_MOST}))) $vector$",
        # Each word quoted (folding left no quote or backslash in it), all of them required,
        # the last one a prefix. No word: NULL, which matches nothing.
        "CREATE FUNCTION calendar_search_query(words text) RETURNS tsquery "  # noqa: S608
        "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $query$ "
        "SELECT to_tsquery('simple'::regconfig, "
        "string_agg('''' || w || '''', ' & ' ORDER BY n) || ':*') "
        f"FROM unnest(string_to_array({here}calendar_search_fold(words), ' ')) "
        "WITH ORDINALITY AS t(w, n) WHERE w <> '' $query$",
        "CREATE INDEX ix_events_search ON events USING gin "
        "(calendar_search_vector(title, description, location)) "
        f"WITH (gin_pending_list_limit = {PENDING_KB})",
    ]


def upgrade() -> None:
    statements = _SQLITE if op.get_bind().dialect.name == "sqlite" else _postgresql()
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS events_search_{trigger}")
        op.execute("DROP TABLE IF EXISTS events_search")
        return
    op.execute("DROP INDEX IF EXISTS ix_events_search")
    op.execute("DROP FUNCTION IF EXISTS calendar_search_query(text)")
    op.execute("DROP FUNCTION IF EXISTS calendar_search_vector(text, text, text)")
    op.execute("DROP FUNCTION IF EXISTS calendar_search_fold(text)")
