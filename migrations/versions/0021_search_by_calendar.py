"""search_by_calendar: the search index keyed by each event's calendar, so that a search reads
its calendars' part of the index only

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-12 10:00:00

What is searched of an event is 0020's text, unchanged. How it is indexed changes, on both
databases, so that a search of one calendar's events no longer reads the index entries of every
calendar (issue 28, item 5: at 100,000 events a search read about 11,000 entries for each of
its common words, of which a twentieth were its calendar's).

SQLite: ``events_search`` (contentless FTS5, 0017's options) is made again with a rowid of its
own, the event's *search key*: ``(calendar_bucket(calendar_id) << KEY_SHIFT) + events.rowid``.
``calendar_bucket`` is a number below ``2 ** BUCKET_BITS`` made from the calendar id's last
four characters (``_bucket``: each one's code point, weighted; every calendar id has them, or
the whole id when shorter). An event's entries then sit among its calendar's in every word's
list of rows (FTS5 keeps them in rowid order), and a search gives FTS5 the range of its
calendar's keys: FTS5 seeks into each word's list there instead of reading it whole. The
event row is the key's low ``KEY_SHIFT`` bits (``key & KEY_MASK``); two calendars with one
bucket share a range (the search still keeps to its calendars by ``calendar_id``). The
triggers of 0020 are made again with the key: the update trigger also fires when the calendar
changes (the key with it). Every row is indexed anew.

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

from collections.abc import Callable, Sequence

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


def _row(row: str) -> str:
    """0020's rowid in the index: the event's."""
    return f"{row}.rowid"


def _sqlite(key: Callable[[str], str], *, keyed: bool) -> list[str]:
    """``events_search`` made again with rowids ``key(row)``, its triggers, every row indexed."""
    watched = ("calendar_id, " if keyed else "") + "title, description, location, attendees"
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched.split(", "))
    return [
        *(f"DROP TRIGGER IF EXISTS events_search_{t}" for t in ("insert", "delete", "update")),
        "DROP TABLE IF EXISTS events_search",
        "CREATE VIRTUAL TABLE events_search USING fts5("
        "words, content='', columnsize=0, tokenize='unicode61 remove_diacritics 2')",
        "CREATE TRIGGER events_search_insert AFTER INSERT ON events BEGIN "  # noqa: S608
        f"INSERT INTO events_search(rowid, words) VALUES ({key('new')}, {_words('new')}); END",
        "CREATE TRIGGER events_search_delete AFTER DELETE ON events BEGIN "  # noqa: S608
        "INSERT INTO events_search(events_search, rowid, words) "
        f"VALUES ('delete', {key('old')}, {_words('old')}); END",
        f"CREATE TRIGGER events_search_update AFTER UPDATE OF {watched} "  # noqa: S608
        f"ON events WHEN {changed} BEGIN "
        "INSERT INTO events_search(events_search, rowid, words) "
        f"VALUES ('delete', {key('old')}, {_words('old')}); "
        f"INSERT INTO events_search(rowid, words) VALUES ({key('new')}, {_words('new')}); END",
        f"INSERT INTO events_search(rowid, words) SELECT {key('events')}, {_words('events')} "  # noqa: S608
        "FROM events",
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
    if op.get_bind().dialect.name == "sqlite":
        statements = _sqlite(_key, keyed=True)
    else:
        statements = _postgresql_upgrade()
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        statements = _sqlite(_row, keyed=False)
    else:
        statements = _postgresql_downgrade()
    for statement in statements:
        op.execute(statement)
