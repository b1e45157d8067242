"""search_by_calendar: the search index keyed by each event's calendar, so that a search reads
its calendars' part of the index only

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-12 10:00:00

What is searched of an event is 0020's text, unchanged. How it is indexed changes, on both
databases, so that a search of one calendar's events no longer reads the index entries of every
calendar (issue 28, item 5: at 100,000 events a search read about 11,000 entries for each of
its common words, of which a twentieth were its calendar's).

SQLite: ``events_search`` (contentless FTS5, 0017's options) is cut into ``PARTS`` tables
``events_search_<n>`` by calendar (``n``: the calendar id's last code point modulo ``PARTS``),
each with the same options and a rowid of its own, the event's *search key*:
``(calendar_bucket(calendar_id) << KEY_SHIFT) + events.rowid``. The parts: FTS5 reads every
entry of every word that a prefix (the search's last word) begins, in the whole table, whatever
rowids are asked for; in a part, a quarter of them (each part costs a write about 13,000
instructions: every insert into ``events`` begins a transaction on every part).
``calendar_bucket`` is a number below ``2 ** BUCKET_BITS`` made from the calendar id's last
four characters (``_bucket``: each one's code point, weighted; every calendar id has them, or
the whole id when shorter). An event's entries then sit among its calendar's in every word's
list of rows (FTS5 keeps them in rowid order), and a search gives FTS5 the range of its
calendar's keys: FTS5 seeks into each word's list there instead of reading it whole. The
event row is the key's low ``KEY_SHIFT`` bits (``key & KEY_MASK``); two calendars with one
bucket share a range (the search still keeps to its calendars by ``calendar_id``). The
triggers of 0020 are made again with the key: the update trigger also fires when the calendar
changes (the key, and perhaps the part, with it), the old words out before the new ones in;
each part's triggers fire for its rows only (their ``WHEN``). Every row is indexed anew.

PostgreSQL: the GIN index ``ix_events_search`` is made again over
``calendar_search_keyed(calendar_id, title, description, location, attendees)``: 0020's
``calendar_search_vector`` with each word prefixed by ``calendar_search_key(calendar_id)``
(the first eight hexadecimal digits of the id's MD5, and a colon: no folded word has a colon).
``calendar_search_keyed_query(words, calendar_ids)`` makes the ``tsquery`` of a search's words
(0017's folding, the last one a prefix) within those calendars (ids separated by spaces): one
group of the words for each calendar, any group. Each word's list in the index is then its
calendars' only, and a prefix's lexemes are those of its calendars. ``calendar_search_vector``
and ``calendar_search_query`` stay (0020's and 0017's), for the downgrade and for tools.

Downgrade: 0020's index and triggers again, every row indexed anew.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


TEXT_MOST = 100_000
"""Characters of an event's title, description and location indexed at most (0017's)."""
PENDING_KB = 64
"""GIN's pending list on PostgreSQL, in kB (0017's)."""
KEY_SHIFT = 40
"""Bits of an event's rowid in its search key (SQLite)."""
BUCKET_BITS = 22
"""Bits of a calendar's bucket in the search key (SQLite): the key stays under 2 ** 62."""
PARTS = 4
"""Tables the index is cut into on SQLite, by calendar (``_part``)."""
_WEIGHTS = (1, 61, 3721, 226981)  # of the code points of the id's last, 2nd last... character


def _base(row: str) -> str:
    """0017's searched text of ``row`` (``new``, ``old`` or ``events``)."""
    return (
        f"substr(coalesce({row}.title, '') || ' ' || coalesce({row}.description, '') || ' ' || "
        f"coalesce({row}.location, ''), 1, {TEXT_MOST})"
    )


def _words(row: str) -> str:
    """0020's searched text of ``row``: 0017's, then its attendees' names and emails."""
    # Constants of this file and a trigger's row name only (S608: no outside text).
    people = (
        "(SELECT group_concat(coalesce(a.value ->> 'name', '') || ' ' || (a.value ->> 'email'), "  # noqa: S608
        f"' ') FROM json_each({row}.attendees, '$.attendees') AS a)"
    )
    return (
        f"{_base(row)} || CASE WHEN {row}.attendees IS NULL THEN '' "
        f"ELSE ' ' || coalesce({people}, '') END"
    )


def _bucket(row: str) -> str:
    """The calendar bucket of ``row``'s calendar id. ``substr(id, -k)`` is the id's last ``k``
    characters (the whole id when it is shorter), ``unicode`` the code point of its first."""
    weighted = " + ".join(
        f"{w} * unicode(substr({row}.calendar_id, -{k}))" for k, w in enumerate(_WEIGHTS, start=1)
    )
    return f"(coalesce({weighted}, 0) % {1 << BUCKET_BITS})"


def _key(row: str) -> str:
    """The search key of ``row``: its calendar's bucket, then its rowid."""
    return f"(({_bucket(row)} << {KEY_SHIFT}) + {row}.rowid)"


def _part(row: str) -> str:
    """The part of the index ``row``'s words are in: its calendar id's last code point, modulo
    ``PARTS``."""
    return f"(unicode(substr({row}.calendar_id, -1)) % {PARTS})"


def _keyed() -> list[str]:
    """``PARTS`` tables ``events_search_<n>`` (0017's options) whose rowids are the events'
    search keys, the triggers that keep each (every one fires for its part's rows only: its
    ``WHEN``), and every row indexed in its part."""
    watched = "calendar_id, title, description, location, attendees"
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched.split(", "))
    statements = [
        *(f"DROP TRIGGER IF EXISTS events_search_{t}" for t in ("insert", "delete", "update")),
        "DROP TABLE IF EXISTS events_search",
    ]
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
            f"CREATE VIRTUAL TABLE {table} USING fts5("
            "words, content='', columnsize=0, tokenize='unicode61 remove_diacritics 2')",
            f"CREATE TRIGGER {table}_insert AFTER INSERT ON events "  # noqa: S608
            f"WHEN {_part('new')} = {n} BEGIN "
            f"INSERT INTO {table}(rowid, words) VALUES ({_key('new')}, {_words('new')}); END",
            f"CREATE TRIGGER {table}_delete AFTER DELETE ON events "  # noqa: S608
            f"WHEN {_part('old')} = {n} BEGIN INSERT INTO {table}({table}, rowid, words) "
            f"VALUES ('delete', {_key('old')}, {_words('old')}); END",
            # The old words out before the new ones in (one trigger: in this order).
            f"CREATE TRIGGER {table}_update AFTER UPDATE OF {watched} ON events "
            f"WHEN ({changed}) AND ({_part('old')} = {n} OR {_part('new')} = {n}) BEGIN "
            f"{delete_old}; {insert_new}; END",
            f"INSERT INTO {table}(rowid, words) SELECT {_key('events')}, {_words('events')} "  # noqa: S608
            f"FROM events WHERE {_part('events')} = {n}",
        ]
    return statements


def _unkeyed() -> list[str]:
    """0020's ``events_search`` and triggers again (rowid: the event's), every row indexed."""
    watched = "title, description, location, attendees"
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched.split(", "))
    return [
        *(
            f"DROP TRIGGER IF EXISTS events_search_{n}_{t}"
            for n in range(PARTS)
            for t in ("insert", "delete", "update")
        ),
        *(f"DROP TABLE IF EXISTS events_search_{n}" for n in range(PARTS)),
        "CREATE VIRTUAL TABLE events_search USING fts5("
        "words, content='', columnsize=0, tokenize='unicode61 remove_diacritics 2')",
        "CREATE TRIGGER events_search_insert AFTER INSERT ON events BEGIN "  # noqa: S608
        f"INSERT INTO events_search(rowid, words) VALUES (new.rowid, {_words('new')}); END",
        "CREATE TRIGGER events_search_delete AFTER DELETE ON events BEGIN "  # noqa: S608
        "INSERT INTO events_search(events_search, rowid, words) "
        f"VALUES ('delete', old.rowid, {_words('old')}); END",
        f"CREATE TRIGGER events_search_update AFTER UPDATE OF {watched} "  # noqa: S608
        f"ON events WHEN {changed} BEGIN "
        "INSERT INTO events_search(events_search, rowid, words) "
        f"VALUES ('delete', old.rowid, {_words('old')}); "
        f"INSERT INTO events_search(rowid, words) VALUES (new.rowid, {_words('new')}); END",
        f"INSERT INTO events_search(rowid, words) SELECT rowid, {_words('events')} FROM events",  # noqa: S608
    ]


def _here() -> str:
    """The current schema, quoted, with a dot: functions named in an index are qualified."""
    schema = op.get_bind().execute(text("SELECT current_schema()")).scalar()
    return '"' + str(schema).replace('"', '""') + '".'


def _postgresql_upgrade() -> list[str]:
    here = _here()
    return [
        "DROP INDEX IF EXISTS ix_events_search",
        # No folded word has a colon (punctuation is folded to spaces): a key is no word.
        "CREATE FUNCTION calendar_search_key(calendar_id text) RETURNS text "
        "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $key$ "
        "SELECT left(md5(calendar_id), 8) || ':' $key$",
        "CREATE FUNCTION calendar_search_keyed(calendar_id text, "  # noqa: S608
        "title text, description text, location text, attendees text) "
        "RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $keyed$ "
        f"SELECT array_to_tsvector(ARRAY(SELECT {here}calendar_search_key(calendar_id) || "
        f"t.lexeme FROM unnest({here}calendar_search_vector("
        "title, description, location, attendees)) AS t)) $keyed$",
        # For each calendar, every word (quoted: folding left no quote or backslash), the last
        # one a prefix; any calendar's group. No word, or no calendar: NULL, matching nothing.
        "CREATE FUNCTION calendar_search_keyed_query(words text, calendar_ids text) "  # noqa: S608
        "RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $query$ "
        "SELECT string_agg(g.part, ' | ')::tsquery FROM ("
        "SELECT '(' || string_agg('''' || k.key || w.w || '''', ' & ' ORDER BY w.n) || ':*)' "
        "AS part FROM "
        f"(SELECT DISTINCT {here}calendar_search_key(c) AS key "
        "FROM unnest(string_to_array(calendar_ids, ' ')) AS c WHERE c <> '') AS k "
        f"CROSS JOIN unnest(string_to_array({here}calendar_search_fold(words), ' ')) "
        "WITH ORDINALITY AS w(w, n) WHERE w.w <> '' GROUP BY k.key) AS g $query$",
        "CREATE INDEX ix_events_search ON events USING gin "
        "(calendar_search_keyed(calendar_id, title, description, location, attendees)) "
        f"WITH (gin_pending_list_limit = {PENDING_KB})",
    ]


def _postgresql_downgrade() -> list[str]:
    return [
        "DROP INDEX IF EXISTS ix_events_search",
        "DROP FUNCTION IF EXISTS calendar_search_keyed_query(text, text)",
        "DROP FUNCTION IF EXISTS calendar_search_keyed(text, text, text, text, text)",
        "DROP FUNCTION IF EXISTS calendar_search_key(text)",
        "CREATE INDEX ix_events_search ON events USING gin "
        "(calendar_search_vector(title, description, location, attendees)) "
        f"WITH (gin_pending_list_limit = {PENDING_KB})",
    ]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    statements = _keyed() if sqlite else _postgresql_upgrade()
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    statements = _unkeyed() if sqlite else _postgresql_downgrade()
    for statement in statements:
        op.execute(statement)
