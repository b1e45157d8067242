"""Search: the words of ``q`` (the list's) or ``query`` (``searchCalendarEvents``'), and the
condition that matches them, one for each database.

What a search is, whatever the engine: ``q`` is cut into words (runs of letters, digits and
the marks that go with them, in any script; everything else separates words and is never
engine syntax: quotes, ``*``, ``-``, ``:``, parentheses, ``OR``/``NEAR`` are words or
nothing). An event matches when every word is in its text (title, description, location;
each attendee's name and email), case and accents aside, the last word as
the start of a word (``denti`` finds "Dentist"). A ``q`` with no word in it matches nothing;
more than ``WORDS_MOST`` different words: the first ones count. Longer than ``QUERY_MAX``
characters, or with a NUL, it is refused (400 on ``q``).

How, per database (the index itself is migrations 0017's and 0020's, kept in step with every
write of an event row by the database):

- SQLite: ``events_search``, a contentless FTS5 table whose rowid is the event row's, with
  the ``unicode61 remove_diacritics 2`` tokenizer; each word is given to ``MATCH`` as a quoted
  string (FTS5 reads nothing in quotes as syntax), the last with ``*``.
- PostgreSQL: a GIN index over ``calendar_search_vector(title, description, location,
  attendees)`` (the attendees' JSON text read by ``calendar_search_people``);
  ``calendar_search_query`` makes the ``tsquery`` from the words with the same folding
  (lower case, ``unaccent``, punctuation as spaces), the last word with ``:*``.

Both fold the text of the event and the words the same way, so that one word is one token on
each (an email's ``@`` and dots separate words: ``ana@example.com`` is ``ana``, ``example``,
``com``): ``tests/core/test_search.py`` runs one table of queries on both and expects the same
events. What is searched is the migrations' (the triggers' and ``calendar_search_vector``'s
text, and a rebuild); here only the PostgreSQL condition names the vector's columns.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from calendar_service.errors import FieldError, ValidationFailed

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


def parse_search(q: Any, *, field: str = "q") -> Search | None:
    """The search ``q`` names; ``None`` for none (omitted or empty, as the list's other
    parameters). A 400 on ``field`` for what cannot be a search: not text, longer than
    ``QUERY_MAX`` characters, or with a NUL in it."""
    if q is None or q == "":
        return None
    if not isinstance(q, str):
        raise ValidationFailed([FieldError(field, "must be a string")])
    if len(q) > QUERY_MAX:
        raise ValidationFailed(
            [FieldError(field, f"must be at most {QUERY_MAX} characters (got {len(q)})")]
        )
    if "\x00" in q:
        raise ValidationFailed([FieldError(field, "must not contain NUL characters")])
    return Search(tuple(_words(q)))


def _words(q: str) -> list[str]:
    """The different words of ``q`` in order (at most ``WORDS_MOST``), lower case."""
    found: dict[str, None] = {}
    word: list[str] = []
    for char in unicodedata.normalize("NFC", q) + " ":
        if unicodedata.category(char)[0] in _WORD_CATEGORIES:
            word.append(char)
            continue
        if word:
            if any(unicodedata.category(c)[0] in _WORD_MAKERS for c in word):
                found.setdefault("".join(word).lower())
                if len(found) == WORDS_MOST:
                    break
            word = []
    return list(found)


class matches_search(FunctionElement[bool]):  # lower case: used like a SQL function
    """The condition that an ``events`` row (the statement's table, not an alias) matches the
    search given as its one argument (a bind parameter: ``Search.engine_text``)."""

    # No Boolean type: on SQLite, SQLAlchemy would compare a Boolean expression with 1 in a
    # WHERE, and SQLite would then not use the IN as a way to the rows.
    inherit_cache = True
    name = "matches_search"


@compiles(matches_search)
def _matches_sqlite(element: matches_search, compiler: Any, **kw: Any) -> str:
    text = compiler.process(element.clauses, **kw)
    # ``text`` is the bind parameter's placeholder: nothing of the search is in the SQL.
    return f"events.rowid IN (SELECT rowid FROM events_search WHERE events_search MATCH {text})"  # noqa: S608


@compiles(matches_search, "postgresql")
def _matches_postgresql(element: matches_search, compiler: Any, **kw: Any) -> str:
    # The ids the GIN index finds, once (an InitPlan), then the rows among them: left to
    # itself, once a prepared statement has a generic plan (which cannot see the words), the
    # planner walks the window through ix_events_calendar_start and folds every row's text.
    text = compiler.process(element.clauses, **kw)
    return (  # ``text``: the bind parameter's placeholder, as on SQLite
        "events.id = ANY(ARRAY(SELECT matched.id FROM events AS matched WHERE "  # noqa: S608
        "calendar_search_vector(matched.title, matched.description, matched.location, "
        "matched.attendees) "
        f"@@ calendar_search_query({text})))"
    )


def search_condition() -> matches_search:
    """``matches_search`` of the parameter ``search``."""
    return matches_search(bindparam("search"))
