"""search_attendees: attendees' names and emails join the searched text of an event

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-10 10:00:00

What is searched of an event becomes its title, description and location (as in 0017: one
text, NULL as empty, its first ``TEXT_MOST`` characters), then, when ``attendees`` is not NULL,
each attendee's name and email in the list's order (``name email name email ...``, a missing
name as empty). The attendees' text is bounded by what the service stores (at most 100
attendees, names of 200 characters, emails of 320: about 52,000 characters), beside the
description's own bound, so that a long description never pushes the attendees out; together
far under PostgreSQL's 1 MB ``tsvector``. (It is not cut again here: a ``substr`` around it
cost every create on SQLite, attendees or not, about 2,700 instructions.) An email is words
like any other text: ``ana@example.com`` is ``ana``, ``example`` and ``com`` on both databases
(SQLite's tokenizer splits on punctuation; PostgreSQL's ``calendar_search_fold`` turns it into
spaces).

SQLite: the three triggers of 0017 are created again with the longer text (``json_each`` over
``attendees`` → ``$.attendees``, ``json_extract`` of each one's ``name`` and ``email``; an event
without attendees computes no JSON at all), the update trigger also fires on a change of
``attendees``, and every row is indexed anew (``events_search`` is contentless: its
``'delete-all'`` command, then every row's text).

PostgreSQL: ``calendar_search_people(attendees)`` (the attendees' text; STRICT: NULL for none)
and ``calendar_search_vector(title, description, location, attendees)`` replace the
three-argument vector; the GIN index ``ix_events_search`` is made again over the new one (it
indexes the existing rows). ``calendar_search_fold`` and ``calendar_search_query`` are 0017's,
unchanged. The search's condition (``calendar_service/events/search.py``) names the
four-argument function, as the index does.

Downgrade: 0017's triggers, vector and index again, every row indexed anew.

Frozen: this file imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from alembic import op
from sqlalchemy import text

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


TEXT_MOST = 100_000
"""Characters of an event's title, description and location indexed at most (0017's)."""
PENDING_KB = 64
"""GIN's pending list on PostgreSQL, in kB (0017's)."""


def _base(row: str) -> str:
    """0017's searched text of ``row`` (``new``, ``old`` or ``events``)."""
    return (
        f"substr(coalesce({row}.title, '') || ' ' || coalesce({row}.description, '') || ' ' || "
        f"coalesce({row}.location, ''), 1, {TEXT_MOST})"
    )


def _words(row: str) -> str:
    """The searched text of ``row`` with its attendees' names and emails. Without attendees,
    0017's text exactly; the JSON is read only when there are attendees. (Shaped for a create's
    cost: this form costs an event without attendees about 1,600 instructions more than 0017's
    trigger, a ``substr`` around the people's text about 2,700 more again.)"""
    # Constants of this file and a trigger's row name only (S608: no outside text).
    people = (
        "(SELECT group_concat(coalesce(a.value ->> 'name', '') || ' ' || (a.value ->> 'email'), "  # noqa: S608
        f"' ') FROM json_each({row}.attendees, '$.attendees') AS a)"
    )
    return (
        f"{_base(row)} || CASE WHEN {row}.attendees IS NULL THEN '' "
        f"ELSE ' ' || coalesce({people}, '') END"
    )


def _sqlite(words: Callable[[str], str], *, attendees: bool) -> list[str]:
    """The triggers over the text ``words(row)``, and every row indexed anew."""
    watched = "title, description, location" + (", attendees" if attendees else "")
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched.split(", "))
    return [
        *(f"DROP TRIGGER IF EXISTS events_search_{t}" for t in ("insert", "delete", "update")),
        "CREATE TRIGGER events_search_insert AFTER INSERT ON events BEGIN "  # noqa: S608
        f"INSERT INTO events_search(rowid, words) VALUES (new.rowid, {words('new')}); END",
        "CREATE TRIGGER events_search_delete AFTER DELETE ON events BEGIN "  # noqa: S608
        "INSERT INTO events_search(events_search, rowid, words) "
        f"VALUES ('delete', old.rowid, {words('old')}); END",
        f"CREATE TRIGGER events_search_update AFTER UPDATE OF {watched} "  # noqa: S608
        f"ON events WHEN {changed} BEGIN "
        "INSERT INTO events_search(events_search, rowid, words) "
        f"VALUES ('delete', old.rowid, {words('old')}); "
        f"INSERT INTO events_search(rowid, words) VALUES (new.rowid, {words('new')}); END",
        "INSERT INTO events_search(events_search) VALUES ('delete-all')",
        f"INSERT INTO events_search(rowid, words) SELECT rowid, {words('events')} FROM events",  # noqa: S608
    ]


def _here() -> str:
    """The current schema, quoted, with a dot: functions named in an index are qualified."""
    schema = op.get_bind().execute(text("SELECT current_schema()")).scalar()
    return '"' + str(schema).replace('"', '""') + '".'


def _postgresql_upgrade() -> list[str]:
    here = _here()
    return [
        "DROP INDEX IF EXISTS ix_events_search",
        "DROP FUNCTION IF EXISTS calendar_search_vector(text, text, text)",
        # The attendees' text in the list's order; NULL (STRICT) for an event without them.
        "CREATE FUNCTION calendar_search_people(attendees text) RETURNS text "
        "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $people$ "
        "SELECT string_agg(coalesce(a ->> 'name', '') || ' ' || (a ->> 'email'), ' ' "
        "ORDER BY n) FROM jsonb_array_elements(attendees::jsonb -> 'attendees') "
        "WITH ORDINALITY AS t(a, n) $people$",
        "CREATE FUNCTION calendar_search_vector("
        "title text, description text, location text, attendees text) "
        "RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $vector$ "
        f"SELECT to_tsvector('simple'::regconfig, {here}calendar_search_fold(left("
        "coalesce(title, '') || ' ' || coalesce(description, '') || ' ' || "
        f"coalesce(location, ''), {TEXT_MOST}) || coalesce(' ' || "
        f"{here}calendar_search_people(attendees), ''))) $vector$",
        "CREATE INDEX ix_events_search ON events USING gin "
        "(calendar_search_vector(title, description, location, attendees)) "
        f"WITH (gin_pending_list_limit = {PENDING_KB})",
    ]


def _postgresql_downgrade() -> list[str]:
    here = _here()
    return [
        "DROP INDEX IF EXISTS ix_events_search",
        "DROP FUNCTION IF EXISTS calendar_search_vector(text, text, text, text)",
        "DROP FUNCTION IF EXISTS calendar_search_people(text)",
        "CREATE FUNCTION calendar_search_vector(title text, description text, location text) "
        "RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $vector$ "
        f"SELECT to_tsvector('simple'::regconfig, {here}calendar_search_fold(left("
        "coalesce(title, '') || ' ' || coalesce(description, '') || ' ' || "
        f"coalesce(location, ''), {TEXT_MOST}))) $vector$",
        "CREATE INDEX ix_events_search ON events USING gin "
        "(calendar_search_vector(title, description, location)) "
        f"WITH (gin_pending_list_limit = {PENDING_KB})",
    ]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        statements = _sqlite(_words, attendees=True)
    else:
        statements = _postgresql_upgrade()
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        statements = _sqlite(_base, attendees=False)
    else:
        statements = _postgresql_downgrade()
    for statement in statements:
        op.execute(statement)
