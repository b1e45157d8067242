"""search_case_folding: ``ß`` and ``ẞ`` are indexed as ``ss``, a Latin or Armenian ligature as
its letters, on both databases

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-15 09:00:00

Unicode's case folding writes these characters as other letters (``str.casefold``: ``Straße``
is ``strasse``, ``ﬁsh`` is ``fish``), but SQLite's ``unicode61`` tokenizer folds case with older
tables and keeps them as they are, and PostgreSQL's ``calendar_search_fold`` does so only where
``unaccent`` has them (not the Armenian ligatures; its ``translate`` fallback none): ``strasse``
did not find "Straße" on SQLite. ``FOLDED`` (the service's ``events.search.FOLDED``, which
folds the words of a search the same way) is applied to an event's text as it is indexed:

- SQLite: the triggers on ``events`` (0022's, which write the words pending for the index)
  write the text with every character of ``FOLDED`` replaced; what was pending is written
  into the index first (with the words it was indexed with), then each part of the index is
  emptied and every event indexed anew, folded.
- PostgreSQL: ``calendar_search_fold`` replaces them after lowering (``replace()`` calls:
  ``translate`` cannot write two characters for one), made as 0017 made it (ICU's lower case
  where the server has it, ``unaccent`` where it is allowed); ``ix_events_search`` is built
  again.

Cost: a create on SQLite runs fourteen ``replace()`` over its text in the trigger, about 1 %
more instructions (``bench.floor``: 1,365,000-1,374,000 before, 1,384,000-1,387,000 after, the
runs' own spread about 10,000; a ``GLOB`` for the characters first, in a subquery, cost as
much).

Downgrade: the same, without ``FOLDED`` (0022's triggers; 0017's ``calendar_search_fold``).

Frozen: this file imports nothing of the service; ``FOLDED`` is copied here, and the text,
key and part expressions are 0021's and 0022's, copied.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import Connection, text

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


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

TEXT_MOST = 100_000
KEY_SHIFT = 40
BUCKET_BITS = 22
PARTS = 4
_WEIGHTS = (1, 61, 3721, 226981)
_WATCHED = "calendar_id, title, description, location, attendees"


def _fold(expression: str, *, folded: bool) -> str:
    """``expression`` with every character of ``FOLDED`` replaced (``folded``), or as it is.
    Constants of this file only (no quote in any of them)."""
    if not folded:
        return expression
    for char, letters in FOLDED.items():
        expression = f"replace({expression}, '{char}', '{letters}')"
    return expression


# ---------------------------------------------------------------------------------------------
# SQLite (0021's and 0022's expressions)


def _base(row: str) -> str:
    return (
        f"substr(coalesce({row}.title, '') || ' ' || coalesce({row}.description, '') || ' ' || "
        f"coalesce({row}.location, ''), 1, {TEXT_MOST})"
    )


def _words(row: str, *, folded: bool) -> str:
    people = (
        "(SELECT group_concat(coalesce(a.value ->> 'name', '') || ' ' || (a.value ->> 'email'), "  # noqa: S608
        f"' ') FROM json_each({row}.attendees, '$.attendees') AS a)"
    )
    words = (
        f"{_base(row)} || CASE WHEN {row}.attendees IS NULL THEN '' "
        f"ELSE ' ' || coalesce({people}, '') END"
    )
    return _fold(words, folded=folded)


def _bucket(row: str) -> str:
    weighted = " + ".join(
        f"{w} * unicode(substr({row}.calendar_id, -{k}))" for k, w in enumerate(_WEIGHTS, start=1)
    )
    return f"(coalesce({weighted}, 0) % {1 << BUCKET_BITS})"


def _key(row: str) -> str:
    return f"(({_bucket(row)} << {KEY_SHIFT}) + {row}.rowid)"


def _part(row: str) -> str:
    return f"(unicode(substr({row}.calendar_id, -1)) % {PARTS})"


def _pending(command: str, row: str, *, folded: bool) -> str:
    return (
        "INSERT INTO events_search_pending (part, command, key, words) "  # noqa: S608
        f"VALUES ({_part(row)}, {command}, {_key(row)}, {_words(row, folded=folded)})"
    )


def _changed() -> str:
    return " OR ".join(f"old.{c} IS NOT new.{c}" for c in _WATCHED.split(", "))


def _reindexed(n: int, *, folded: bool) -> list[str]:
    """Part ``n`` of the index emptied, and its events indexed anew."""
    table = f"events_search_{n}"
    words = _words("events", folded=folded)
    return [
        f"INSERT INTO {table}({table}) VALUES ('delete-all')",  # noqa: S608
        f"INSERT INTO {table}(rowid, words) SELECT {_key('events')}, {words} FROM events "  # noqa: S608
        f"WHERE {_part('events')} = {n}",
    ]


def _sqlite(*, folded: bool) -> list[str]:
    """What is pending written (as it was indexed), the triggers made with or without
    ``FOLDED``, and every part of the index emptied and every event indexed anew alike."""
    delete = "'delete'"
    return [
        *(
            f"INSERT INTO events_search_{n}(events_search_{n}, rowid, words) "  # noqa: S608
            f"SELECT command, key, words FROM events_search_pending WHERE part = {n} ORDER BY seq"
            for n in range(PARTS)
        ),
        "DELETE FROM events_search_pending",
        *(f"DROP TRIGGER IF EXISTS events_search_{t}" for t in ("insert", "delete", "update")),
        f"CREATE TRIGGER events_search_insert AFTER INSERT ON events BEGIN "
        f"{_pending('NULL', 'new', folded=folded)}; END",
        f"CREATE TRIGGER events_search_delete AFTER DELETE ON events BEGIN "
        f"{_pending(delete, 'old', folded=folded)}; END",
        # The old words out before the new ones in (one trigger: in this order).
        f"CREATE TRIGGER events_search_update AFTER UPDATE OF {_WATCHED} ON events "
        f"WHEN {_changed()} BEGIN {_pending(delete, 'old', folded=folded)}; "
        f"{_pending('NULL', 'new', folded=folded)}; END",
        *(statement for n in range(PARTS) for statement in _reindexed(n, folded=folded)),
    ]


# ---------------------------------------------------------------------------------------------
# PostgreSQL (0017's calendar_search_fold)

# Punctuation and symbols that are no part of a word (0017's).
_PUNCTUATION = (
    r"[!-/:-@\[-`{-~\u00a0-\u00a9\u00ab-\u00b1\u00b4\u00b6-\u00b8\u00bb\u00bf\u00d7\u00f7"
    r"\u2000-\u206f\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+"
)
# Without unaccent: the Latin letters with accents, lower case (0017's).
_ACCENTED = (
    "àáâãäåāăąçćĉċčďđèéêëēĕėęěĝğġģĥħìíîïĩīĭįıĵķĺļľŀłñńņňòóôõöøōŏőŕŗřśŝşšţťŧùúûüũūŭůűųŵýÿŷźżž"
)
_PLAIN = "aaaaaaaaacccccddeeeeeeeeegggghhiiiiiiiiijklllllnnnnooooooooorrrsssstttuuuuuuuuuuwyyyzzz"


def _postgresql_fold(bind: Connection, *, folded: bool) -> str:
    """The body of ``calendar_search_fold(t)`` as 0017 made it, with ``FOLDED`` applied
    after lowering (``folded``). Unaccent was created by 0017 where the server allows it."""
    lowered = "lower(t)"
    if bind.execute(text("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'")).first():
        lowered = 'lower(t COLLATE "und-x-icu")'
    lowered = _fold(lowered, folded=folded)
    unaccented = f"translate({lowered}, '{_ACCENTED}', '{_PLAIN}')"
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


def _postgresql(*, folded: bool) -> list[str]:
    fold = _postgresql_fold(op.get_bind(), folded=folded)
    return [
        "CREATE OR REPLACE FUNCTION calendar_search_fold(t text) RETURNS text "
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fold$ {fold} $fold$",
        "REINDEX INDEX ix_events_search",
    ]


def _run(*, folded: bool) -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _sqlite(folded=folded) if sqlite else _postgresql(folded=folded):
        op.execute(statement)


def upgrade() -> None:
    _run(folded=True)


def downgrade() -> None:
    _run(folded=False)
