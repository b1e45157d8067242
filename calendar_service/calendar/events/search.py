"""Search: the words of ``q`` (the list's) or ``query`` (``searchCalendarEvents``'), and the
events that match them, found the way of each database.

What a search is, whatever the engine: ``q`` is cut into words (runs of letters, digits and
the marks that go with them, in any script; everything else separates words and is never
engine syntax: quotes, ``*``, ``-``, ``:``, parentheses, ``OR``/``NEAR`` are words or
nothing). An event matches when every word is in its text (title, description, location;
each attendee's name and email), case and accents aside, the last word as
the start of a word (``denti`` finds "Dentist"); ``ß`` and ``ẞ`` are ``ss`` and a ligature
its letters (``FOLDED``: ``strasse`` finds "Straße"). An empty ``q``, or one of white space
only, is refused (400 on ``q``); a ``q`` with no word in it matches nothing;
more than ``WORDS_MOST`` different words: the first ones count. Longer than ``QUERY_MAX``
characters, or with a NUL, it is refused (400 on ``q``).

How, per database (the index itself is migrations 0017's, 0020's, 0021's, 0022's and 0025's,
kept in step with every write of an event row, in its transaction: on SQLite the triggers leave the
words in ``events_search_pending``, and a search first moves whatever is pending into the
FTS5 tables, ``write_pending_words``; a commit moves them once ``db.engine.SEARCH_WORDS_AT``
are waiting: one FTS5 segment for many writes, not one a statement), the matches found once
a request (a
``WITH`` both parts of ``queries.search_statement`` read) and only among the calendars'
entries of the index:

- SQLite: ``events_search_<n>``, ``PARTS`` contentless FTS5 tables (the calendars cut among
  them: ``index_part``) with the ``unicode61 remove_diacritics 2`` tokenizer, whose rowids are
  the events' search keys (the calendar's bucket, then the event's rowid: ``KEY_SHIFT``), so
  that a search asks FTS5 for its calendars' range of keys (``key_range``); each word is given
  to ``MATCH`` as a quoted string (FTS5 reads nothing in quotes as syntax), the last with
  ``*``.
- PostgreSQL: a GIN index over ``calendar_search_keyed(calendar_id, title, description,
  location, attendees)``: the words of ``calendar_search_vector`` (the attendees' JSON text
  read by ``calendar_search_people``), each prefixed by its calendar's key;
  ``calendar_search_keyed_query`` makes the ``tsquery`` from the words with the same folding
  (lower case, ``FOLDED``, ``unaccent``, punctuation as spaces), the last word with ``:*``,
  for each of the calendars. On SQLite the triggers write the text with ``FOLDED`` applied
  (the tokenizer folds case and accents, not these).

Both fold the text of the event and the words the same way, so that one word is one token on
each (an email's ``@`` and dots separate words: ``ana@example.com`` is ``ana``, ``example``,
``com``): ``tests/core/calendar/events/test_search.py`` runs one table of queries on both and
expects the same events. What is searched is the migrations' (the triggers' and
``calendar_search_vector``'s text, and a rebuild); here only the PostgreSQL condition names the
vector's columns, and SQLite's keys and parts are made as 0021's triggers make them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    CTE,
    ColumnElement,
    Connection,
    Integer,
    String,
    column,
    literal_column,
    select,
    text,
)

from calendar_service.platform.db.engine import write_search_words
from calendar_service.platform.errors import FieldError, ValidationFailed

QUERY_MAX = 500
"""Characters of a search at most: longer is a 400 on ``q``."""
WORDS_MOST = 64
"""Different words of a search that count (the first ones): bounded work for each engine."""

SEARCHED = ("title", "description", "location", "attendees")
"""The event's columns whose text is searched (migration 0020's triggers and functions; of
``attendees``, each attendee's name and email)."""

_WORD_CATEGORIES = frozenset("LNM")  # letters, numbers, marks (the first letter of a category)
_WORD_MAKERS = frozenset("LN")  # a run of marks alone is no word


@dataclass(frozen=True, slots=True)
class Search:
    """A search's words, as ``parse_search`` cut them (none: it matches nothing)."""

    words: tuple[str, ...]

    def engine_text(self, dialect: str) -> str:
        """The one parameter of ``matches_search`` for ``dialect``: FTS5 query text on SQLite
        (each word quoted, the last a prefix), the words joined by spaces on PostgreSQL
        (``calendar_search_query`` quotes them after folding)."""
        if dialect != "sqlite":
            return " ".join(self.words)
        quoted = ['"' + word.replace('"', '""') + '"' for word in self.words]
        return " ".join(quoted) + "*"

    def token_part(self) -> str:
        """What page tokens are bound to: the words (another ``q`` of the same words is the
        same search)."""
        return "q:" + " ".join(self.words)


EMPTY_MESSAGE = "must not be empty: give the words to find"


def parse_search(q: Any, *, field: str = "q") -> Search | None:
    """The search ``q`` names; ``None`` for none (omitted). A 400 on ``field`` for what cannot
    be a search: not text, empty or only white space, longer than ``QUERY_MAX`` characters, or
    with a NUL in it."""
    if q is None:
        return None
    if not isinstance(q, str):
        raise ValidationFailed([FieldError(field, "must be a string")])
    if not q.strip():
        raise ValidationFailed([FieldError(field, EMPTY_MESSAGE)])
    if len(q) > QUERY_MAX:
        raise ValidationFailed(
            [FieldError(field, f"must be at most {QUERY_MAX} characters (got {len(q)})")]
        )
    if "\x00" in q:
        raise ValidationFailed([FieldError(field, "must not contain NUL characters")])
    return Search(tuple(_words(q)))


FOLDED = {
    "ß": "ss",
    "ẞ": "ss",
    "ﬀ": "ff",
    "ﬁ": "fi",
    "ﬂ": "fl",
    "ﬃ": "ffi",
    "ﬄ": "ffl",
    "ﬅ": "st",
    "ﬆ": "st",
    "ﬓ": "մն",
    "ﬔ": "մե",
    "ﬕ": "մի",
    "ﬖ": "վն",
    "ﬗ": "մխ",
}
"""What Unicode's case folding writes as other letters where neither engine's folding does
(SQLite's tokenizer folds case with tables older than ``str.casefold``; PostgreSQL's
``unaccent`` has some of them, its ``translate`` fallback none): the sharp s, and the Latin
and Armenian ligatures. Applied alike to the words of a search, to an event's text on SQLite
(the triggers) and on PostgreSQL (``calendar_search_fold``): migration 0025, which copies
this table."""
_FOLDING = str.maketrans(FOLDED)


def _words(q: str) -> list[str]:
    """The different words of ``q`` in order (at most ``WORDS_MOST``), lower case, folded
    (``FOLDED``)."""
    found: dict[str, None] = {}
    word: list[str] = []
    for char in unicodedata.normalize("NFC", q) + " ":
        if unicodedata.category(char)[0] in _WORD_CATEGORIES:
            word.append(char)
            continue
        if word:
            if any(unicodedata.category(c)[0] in _WORD_MAKERS for c in word):
                found.setdefault("".join(word).lower().translate(_FOLDING))
                if len(found) == WORDS_MOST:
                    break
            word = []
    return list(found)


KEY_SHIFT = 40
"""SQLite: bits of an event's rowid in its search key (migration 0021)."""
KEY_MASK = (1 << KEY_SHIFT) - 1
_BUCKETS = 1 << 22  # calendar buckets (0021's BUCKET_BITS)
_WEIGHTS = (1, 61, 3721, 226981)  # 0021's


def calendar_bucket(calendar_id: str) -> int:
    """SQLite: the bucket of a calendar id, as migration 0021's triggers make it: the code
    points of its last four characters, weighted (``substr(id, -k)``'s first character: the
    id's ``k``-th last, or its first when it is shorter)."""
    weighted = sum(w * ord(calendar_id[-k:][0]) for k, w in enumerate(_WEIGHTS, start=1))
    return weighted % _BUCKETS


def key_range(calendar_ids: Sequence[str]) -> tuple[int, int]:
    """SQLite: the search keys of events in ``calendar_ids`` are in ``[low, high)`` (with those
    of any other calendar that shares a bucket between them)."""
    buckets = [calendar_bucket(c) for c in calendar_ids]
    return min(buckets) << KEY_SHIFT, (max(buckets) + 1) << KEY_SHIFT


PARTS = 4
"""SQLite: the search index is cut into ``events_search_<n>`` by calendar (migration 0021)."""


def index_part(calendar_id: str) -> int:
    """SQLite: the part of the search index a calendar's events are in (0021's ``_part``)."""
    return ord(calendar_id[-1]) % PARTS


# PostgreSQL: the GIN index's expression, with the calendars' words only.
_MATCHES_POSTGRESQL = (
    "SELECT matched.id AS id FROM events AS matched WHERE calendar_search_keyed("
    "matched.calendar_id, matched.title, matched.description, matched.location, "
    "matched.attendees) @@ calendar_search_keyed_query(:search, :search_calendars)"
)


def _matches_sqlite(part: int) -> str:
    # FTS5 seeks in each word's list to the calendars' keys; the key's low bits are the rowid.
    table = f"events_search_{part}"
    return (
        f"SELECT rowid & {KEY_MASK} AS id FROM {table} WHERE {table} MATCH :search "  # noqa: S608
        "AND rowid >= :search_low AND rowid < :search_high"
    )


def search_matches(dialect: str, parts: tuple[int, ...]) -> CTE:
    """The events that match the search (``search_params``): a ``WITH`` of their ids on
    PostgreSQL, their rowids on SQLite (``matched_condition``), evaluated once however many
    times the statement reads it. ``parts``: SQLite's parts of the index to search (those of
    the calendars: ``search_params``'s)."""
    if dialect == "sqlite":
        body = text(" UNION ALL ".join(_matches_sqlite(part) for part in parts))
        return (
            body.columns(column("id", Integer())).cte("search_matches").prefix_with("MATERIALIZED")
        )
    body = text(_MATCHES_POSTGRESQL)
    return body.columns(column("id", String())).cte("search_matches").prefix_with("MATERIALIZED")


def matched_condition(dialect: str, matches: CTE) -> ColumnElement[bool]:
    """That an ``events`` row (the statement's table, not an alias) is among ``matches``."""
    ids = select(matches.c.id).scalar_subquery()
    if dialect == "sqlite":
        return literal_column("events.rowid").in_(ids)
    # A hashed subplan (``IS TRUE`` keeps it from becoming a join): the matches hashed once,
    # each row of the window looked up in them. Not ``= ANY(ARRAY(...))``, which PostgreSQL
    # reads through for each row (13,000 rows and 5,755 matches of ``s``: 2.9 s), nor a plain
    # ``IN``, which the planner, without statistics, made a nested loop over the matches.
    return literal_column("events.id").in_(ids).is_(True)


def search_params(
    params: dict[str, Any], search: Search, dialect: str, calendar_ids: Sequence[str]
) -> tuple[int, ...]:
    """Put the parameters of ``search_matches`` into ``params``: the words, and the
    calendars the search keeps to (the list's); returns the parts of the index to search
    (SQLite; none on PostgreSQL)."""
    params["search"] = search.engine_text(dialect)
    if dialect != "sqlite":
        params["search_calendars"] = " ".join(calendar_ids)
        return ()
    params["search_low"], params["search_high"] = key_range(calendar_ids)
    return tuple(sorted({index_part(c) for c in calendar_ids}))


MERGE_PAGES = 2000
"""SQLite: leaf pages the housekeeping's merge of the search index writes at most a run (an
``PARTS``-th in each part)."""


def write_pending_words(conn: Connection) -> None:
    """SQLite: move the words still pending (``events_search_pending``: the triggers' part of
    the index, written with each change of an event) into the FTS5 tables, in ``conn``'s
    transaction, before a search reads them. A commit moves them only once
    ``db.engine.SEARCH_WORDS_AT`` are waiting, so that many creates share one segment; a
    search therefore moves what is left first and never misses a committed write."""
    if conn.dialect.name == "sqlite":
        write_search_words(conn.exec_driver_sql)


def merge_search_index(conn: Connection) -> int:
    """Housekeeping (SQLite): move the pending words into the index, then merge its segments,
    up to ``MERGE_PAGES`` leaf pages of work. FTS5 writes each move's words as a segment of
    its own and merges them only by fours as they pile up (its ``automerge``), so that a
    search reads a dozen segments where one would do: a search's exact words cost about six
    times as much (docs/performance-history.md, "Made cheap"). Merged here, once an hour, off the
    writes' path; at 100,000 events one run merges the whole index (about 70 ms).
    PostgreSQL's GIN index needs nothing: 0."""
    if conn.dialect.name != "sqlite":
        return 0
    write_pending_words(conn)
    for part in range(PARTS):
        table = f"events_search_{part}"
        conn.exec_driver_sql(
            f"INSERT INTO {table}({table}, rank) VALUES ('merge', -{MERGE_PAGES // PARTS})"  # noqa: S608
        )
    return 1
