"""Search (``events.search``, ``q`` on the list) in the core, on the real database: one table
of queries and the events they find, run on SQLite and on PostgreSQL alike (each leg runs it:
the same answers); series and their changed occurrences; pages; the default start; the index
kept in step with every write; and hostile queries, fuzzed: never an error from the engine,
a 400 only for what cannot be a query."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, text

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.calendar.events.search import (
    FOLDED,
    KEY_MASK,
    KEY_SHIFT,
    PARTS,
    QUERY_MAX,
    WORDS_MOST,
    calendar_bucket,
    index_part,
    key_range,
    parse_search,
    write_pending_words,
)
from calendar_service.interop.ical.importing import import_events
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.db import Database
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.models import EventCreate, EventUpdate
from calendar_service.platform.timeutil import format_utc, utcnow
from tests.core.calendar.events.test_events import TOKEN_KEY, create, principal_for
from tests.core.calendar.events.test_query_plan import plan_of
from tests.support import Factory

_MIGRATION_0021 = importlib.import_module("migrations.versions.0021_search_by_calendar")
_MIGRATION_0025 = importlib.import_module("migrations.versions.0025_search_case_folding")

WINDOW = {"time_min": "2026-03-01T00:00:00Z", "time_max": "2026-04-01T00:00:00Z"}

# The events the table searches: (title, description, location), a day apart in March 2026,
# and the attendees of those that have some.
TABLE_EVENTS = (
    ("Dentist", None, "Main Street 5"),
    ("Личное", "встреча с врачом", None),
    ("Café with Ana", "Write to ana@example.com first", None),
    ("Team sync", "Weekly planning; notes at wiki/team-sync", "Room 4"),
    ("naïve résumé review", None, None),
    ("Zahnarzt Müller", None, "Berlin"),
    ("東京 meeting", "会議室", None),
    ("Quarterly budget", None, None),
    ("Straße fest", "ﬁsh market", None),  # ﬁ: the ligature
    ("Fish soup", "ﬂoat", "oﬃce"),
)
TABLE_ATTENDEES = {
    "Quarterly budget": [
        {"email": "lima.k@firma.pl", "name": "Zoë Kowalski"},
        {"email": "jo_banks+cal@post.de"},  # no name
        {"email": "dm@post.de", "name": "Дмитрий Šárka"},
    ],
}

# A query and the titles it finds (in start order). The same on every database.
TABLE = (
    ("denti", ["Dentist"]),
    ("DENTIST", ["Dentist"]),
    ("dentist main", ["Dentist"]),
    ("main dentist", ["Dentist"]),
    ("street dentist", ["Dentist"]),
    ("dentist ana", []),
    ("dent main", []),  # only the last word is a prefix
    ("личн", ["Личное"]),
    ("ЛИЧНОЕ", ["Личное"]),
    ("врач", ["Личное"]),
    ("cafe", ["Café with Ana"]),
    ("CAFÉ ana", ["Café with Ana"]),
    ("ana", ["Café with Ana"]),
    ("example", ["Café with Ana"]),
    ("ana@example.com", ["Café with Ana"]),
    ("naive resume", ["naïve résumé review"]),
    ("Naïve", ["naïve résumé review"]),
    ("muller", ["Zahnarzt Müller"]),
    ("MÜLLER berlin", ["Zahnarzt Müller"]),
    ("team-sync", ["Team sync"]),
    ("wiki", ["Team sync"]),
    ("planning notes", ["Team sync"]),
    ("東京", ["東京 meeting"]),
    ("meet", ["東京 meeting"]),
    ("e", ["Café with Ana"]),  # example
    ("r", ["Team sync", "naïve résumé review"]),  # room; résumé, review
    ('"dentist"', ["Dentist"]),
    ("dentist*", ["Dentist"]),
    ("-dentist", ["Dentist"]),
    ("(dentist)", ["Dentist"]),
    ("dentist:", ["Dentist"]),
    ("title:dentist", []),  # no column filters: 'title' is a word, and no event has it
    ("dentist OR team", []),  # OR is a word too
    ("NEAR(dentist team)", []),
    ("dentist AND", []),
    ("NOT dentist", []),
    ("***", []),  # no word: nothing
    ('" ( ) : - *', []),
    ("^dentist", ["Dentist"]),
    ("dentist'", ["Dentist"]),
    ("\\dentist", ["Dentist"]),
    ("{dentist}", ["Dentist"]),
    # Attendees: each one's name and email are words of the event (an email split at its
    # punctuation), nothing else of the JSON (keys, responses, the organizer: the owner).
    ("kowalski", ["Quarterly budget"]),
    ("ZOE", ["Quarterly budget"]),
    ("zoë kowal", ["Quarterly budget"]),
    ("lima", ["Quarterly budget"]),
    ("firma", ["Quarterly budget"]),
    ("lima.k@firma.pl", ["Quarterly budget"]),
    ("jo", ["Quarterly budget"]),
    ("banks cal", ["Quarterly budget"]),
    ("jo_banks+cal@post.de", ["Quarterly budget"]),
    ("sarka", ["Quarterly budget"]),
    ("дмитр", ["Quarterly budget"]),
    ("budget kowalski", ["Quarterly budget"]),
    ("kowalski dentist", []),
    ("needsaction", []),
    ("responsestatus", []),
    ("attendees", []),
    ("organizer", []),
    ("sequence", []),
    # Unicode's case folding where the engines' tokenizers differ: ß and ẞ are ss, a ligature
    # its letters, in the text and in the words alike.
    ("strasse", ["Straße fest"]),
    ("STRASSE", ["Straße fest"]),
    ("straße", ["Straße fest"]),
    ("STRAẞE fest", ["Straße fest"]),
    ("stra", ["Straße fest"]),
    ("strass", ["Straße fest"]),
    ("fish", ["Straße fest", "Fish soup"]),
    ("ﬁsh", ["Straße fest", "Fish soup"]),
    ("FISH market", ["Straße fest"]),
    ("float", ["Fish soup"]),
    ("ﬂoat", ["Fish soup"]),
    ("office fish", ["Fish soup"]),
    ("oﬃ", ["Fish soup"]),
)


@pytest.fixture(scope="module")
def table_reader(db: Database, factory: Factory) -> Principal:
    owner = factory.owner()
    writer = principal_for(db, factory, owner)
    for day, (title, description, location) in enumerate(TABLE_EVENTS, start=2):
        data = EventCreate(
            title=title,
            description=description,
            location=location,
            attendees=TABLE_ATTENDEES.get(title),
            starts_at=f"2026-03-{day:02d}T09:00:00Z",
            ends_at=f"2026-03-{day:02d}T10:00:00Z",
        )
        db.call(events.create_event, principal=writer, data=data, now=utcnow())
    return principal_for(db, factory, owner, permission="read")


def searched(db: Database, principal: Principal, q: str, **params: Any) -> dict[str, Any]:
    window = {**WINDOW, **params}
    return db.call(events.list_events, principal=principal, token_key=TOKEN_KEY, q=q, **window)


def found(db: Database, principal: Principal, q: str, **params: Any) -> list[str]:
    return [e["title"] for e in searched(db, principal, q, **params)["events"]]


@pytest.mark.parametrize(("q", "expected"), TABLE)
def test_the_table_of_queries_finds_the_same_events_on_every_database(
    db: Database, table_reader: Principal, q: str, expected: list[str]
) -> None:
    assert found(db, table_reader, q) == expected


def test_an_empty_or_blank_q_is_a_400_on_q_and_an_omitted_one_lists_every_event(
    db: Database, table_reader: Principal
) -> None:
    for q in ("", " ", "\t\n", "\u3000"):
        with pytest.raises(ValidationFailed) as refused:
            searched(db, table_reader, q)
        assert refused.value.code == "validation_error"
        assert [e["field"] for e in refused.value.errors] == ["q"], q
        assert "words to find" in refused.value.errors[0]["message"]
    every = db.call(events.list_events, principal=table_reader, token_key=TOKEN_KEY, **WINDOW)
    assert len(every["events"]) == len(TABLE_EVENTS)


def test_a_search_answer_has_no_sync_token_and_cannot_be_a_sync(
    db: Database, table_reader: Principal
) -> None:
    answer = searched(db, table_reader, "dentist")
    assert "nextSyncToken" not in answer and "nextPageToken" not in answer
    sync = db.call(events.list_events, principal=table_reader, token_key=TOKEN_KEY)
    with pytest.raises(ValidationFailed) as refused:
        db.call(
            events.list_events,
            principal=table_reader,
            token_key=TOKEN_KEY,
            sync_token=sync["nextSyncToken"],
            q="dentist",
        )
    assert [e["field"] for e in refused.value.errors] == ["q"]


# ---------------------------------------------------------------------------------------------
# What cannot be a query; the words of one


def test_a_query_longer_than_the_limit_or_with_a_nul_is_a_400_on_q() -> None:
    parse_search("a" * QUERY_MAX)
    for q in ("a" * (QUERY_MAX + 1), "dentist\x00", "\x00"):
        with pytest.raises(ValidationFailed) as refused:
            parse_search(q)
        assert [e["field"] for e in refused.value.errors] == ["q"]
        assert refused.value.code == "validation_error"


def test_words_are_runs_of_letters_digits_and_marks_lowered_and_never_syntax() -> None:
    def words(q: str) -> tuple[str, ...]:
        search = parse_search(q)
        assert search is not None
        return search.words

    assert words('"Dentist" OR (team*) -x:y') == ("dentist", "or", "team", "x", "y")
    assert words("ana@example.com 2026-03-02") == ("ana", "example", "com", "2026", "03", "02")
    assert words("Личное, 東京!") == ("личное", "東京")
    assert words("a a A") == ("a",)
    assert words("\u0301 ** ") == ()  # a mark alone is no word
    assert len(words(" ".join(f"w{i}" for i in range(100)))) == WORDS_MOST
    assert parse_search(None) is None
    assert words("Straße ẞ ﬁsh ﬀ ﬓ") == ("strasse", "ss", "fish", "ff", "մն")


def test_the_folded_characters_are_unicodes_case_folding_and_the_migrations_copy() -> None:
    assert {char: char.casefold() for char in FOLDED} == FOLDED
    assert _MIGRATION_0025.FOLDED == FOLDED  # what 0025 indexes with (frozen: a copy)
    search = parse_search("café au")
    assert search is not None
    assert search.engine_text("sqlite") == '"café" "au"*'
    assert search.engine_text("postgresql") == "café au"


SYNTAX = [*"\"*()-:^+{}[]\\'.,;!?@#$%&|~`<>=/ \t\n\x00", "NEAR", "OR", "AND", "NOT", "near/2"]
# Pieces of FTS5 and tsquery syntax, accents, marks and any character, up to about 1,200
# characters: past the limit too.
HOSTILE = st.lists(
    st.one_of(
        st.sampled_from([*SYNTAX, "col:", "ä", "й", "\u0301", "dentist", "café"]),
        st.characters(codec="utf-8"),
    ),
    max_size=600,
).map("".join)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(q=HOSTILE)
def test_any_text_is_a_search_or_a_400_on_q_for_what_cannot_be_one(
    db: Database, table_reader: Principal, q: str
) -> None:
    cannot = len(q) > QUERY_MAX or "\x00" in q or not q.strip()
    try:
        answer = searched(db, table_reader, q)
    except ValidationFailed as exc:
        assert cannot, (q, exc.errors)
        assert [e["field"] for e in exc.errors] == ["q"]
        return
    assert not cannot, q
    assert len(answer["events"]) <= len(TABLE_EVENTS)


# ---------------------------------------------------------------------------------------------
# Series, pages, the default start


@pytest.fixture
def writer(db: Database, factory: Factory) -> Principal:
    return principal_for(db, factory, factory.owner())


def update(db: Database, principal: Principal, event_id: str, **fields: Any) -> dict[str, Any]:
    scope = fields.pop("scope", None)
    return db.call(
        events.update_event,
        principal=principal,
        event_id=event_id,
        body=EventUpdate(**fields),
        now=utcnow(),
        scope=scope,
    )


def test_a_series_matches_by_its_text_and_a_renamed_occurrence_by_its_new_title(
    db: Database, writer: Principal
) -> None:
    series = create(db, writer, title="Yoga class", recurrence=["RRULE:FREQ=WEEKLY;COUNT=4"])
    create(db, writer, title="Lunch", starts_at="2026-03-03T12:00:00Z", ends_at="2026-03-03T13:00Z")
    update(db, writer, f"{series['id']}_20260309T090000Z", title="Pilates")
    yoga = searched(db, writer, "yoga")["events"]
    assert [e["startsAt"][:10] for e in yoga] == ["2026-03-02", "2026-03-16", "2026-03-23"]
    assert {e["recurringEventId"] for e in yoga} == {series["id"]}
    assert [e["id"] for e in searched(db, writer, "pilates")["events"]] == [
        f"{series['id']}_20260309T090000Z"
    ]
    assert found(db, writer, "class", single_events=False) == ["Yoga class"]
    assert found(db, writer, "yoga", time_min="2026-03-10", time_max="2026-03-20") == ["Yoga class"]


def test_a_series_renamed_for_all_and_following_is_found_by_its_new_words(
    db: Database, writer: Principal
) -> None:
    series = create(db, writer, title="Standup", recurrence=["RRULE:FREQ=WEEKLY;COUNT=4"])
    update(db, writer, f"{series['id']}_20260316T090000Z", title="Retro", scope="following")
    assert len(found(db, writer, "standup")) == 2
    assert len(found(db, writer, "retro")) == 2
    update(db, writer, series["id"], title="Daily")
    assert found(db, writer, "standup") == []
    assert len(found(db, writer, "daily")) == 2


def test_pages_of_a_search_are_bound_to_its_words(db: Database, writer: Principal) -> None:
    for day in (2, 3, 4):
        create(
            db,
            writer,
            title=f"Physio {day}",
            starts_at=f"2026-03-0{day}T09:00:00Z",
            ends_at=f"2026-03-0{day}T10:00:00Z",
        )
    create(db, writer, title="Other", starts_at="2026-03-02T11:00Z", ends_at="2026-03-02T12:00Z")
    first = searched(db, writer, "physio", limit=2)
    assert [e["title"] for e in first["events"]] == ["Physio 2", "Physio 3"]
    token = first["nextPageToken"]
    second = searched(db, writer, "PHYSIO!", limit=2, page_token=token)  # the same words
    assert [e["title"] for e in second["events"]] == ["Physio 4"]
    assert "nextPageToken" not in second and "nextSyncToken" not in second
    for other in ({"q": "other"}, {}):
        with pytest.raises(ValidationFailed) as refused:
            params = {**WINDOW, "limit": 2, "page_token": token}
            db.call(events.list_events, principal=writer, token_key=TOKEN_KEY, **params, **other)
        assert [e["field"] for e in refused.value.errors] == ["pageToken"]


def test_without_time_min_a_search_starts_now_and_pages_on(db: Database, writer: Principal) -> None:
    now = utcnow().replace(microsecond=0)
    for title, days in (("Checkup past", -1), ("Checkup soon", 1), ("Checkup later", 2)):
        start = now + timedelta(days=days)
        create(
            db,
            writer,
            title=title,
            starts_at=format_utc(start),
            ends_at=format_utc(start + timedelta(hours=1)),
        )

    def look(**params: Any) -> dict[str, Any]:
        return db.call(
            events.list_events, principal=writer, token_key=TOKEN_KEY, q="checkup", **params
        )

    assert [e["title"] for e in look()["events"]] == ["Checkup soon", "Checkup later"]
    first = look(limit=1)
    assert [e["title"] for e in first["events"]] == ["Checkup soon"]
    second = look(limit=1, page_token=first["nextPageToken"])
    assert [e["title"] for e in second["events"]] == ["Checkup later"]
    before = format_utc(now - timedelta(hours=1))
    assert [e["title"] for e in look(time_max=before)["events"]] == ["Checkup past"]


# ---------------------------------------------------------------------------------------------
# The index kept in step with every write


def test_the_index_follows_updates_deletes_and_imports(db: Database, writer: Principal) -> None:
    event = create(db, writer, title="Haircut", location="Salon")
    update(db, writer, event["id"], title="Barber", location=None)
    assert found(db, writer, "haircut") == [] and found(db, writer, "salon") == []
    assert found(db, writer, "barber") == ["Barber"]
    db.call(events.delete_event, principal=writer, event_id=event["id"], now=utcnow())
    assert found(db, writer, "barber") == []
    ics = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        "UID:imported-1@example.com\r\nDTSTAMP:20260301T000000Z\r\n"
        "DTSTART:20260305T090000Z\r\nDTEND:20260305T100000Z\r\n"
        "SUMMARY:Vaccination\r\nLOCATION:Clinic\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    db.call(import_events, principal=writer, data=ics.encode(), now=utcnow())
    assert found(db, writer, "vacc clinic") == []  # 'vacc' is not the last word
    assert found(db, writer, "clinic vacc") == ["Vaccination"]


def test_the_index_follows_a_change_of_the_attendees_alone(db: Database, writer: Principal) -> None:
    event = create(db, writer, title="Offsite", attendees=[{"email": "ana@example.com"}])
    assert found(db, writer, "ana") == ["Offsite"]
    update(db, writer, event["id"], attendees=[{"email": "bo@example.net", "name": "Bo Lindqvist"}])
    assert found(db, writer, "ana") == [] and found(db, writer, "com") == []
    assert found(db, writer, "lindq") == ["Offsite"] and found(db, writer, "bo") == ["Offsite"]
    update(db, writer, event["id"], title="Retreat")  # the attendees stay searchable
    assert found(db, writer, "retreat lindqvist") == ["Retreat"]
    update(db, writer, event["id"], attendees=[])
    assert found(db, writer, "lindqvist") == [] and found(db, writer, "retreat") == ["Retreat"]
    update(db, writer, event["id"], attendees=[{"email": "cy@example.net"}])
    db.call(events.delete_event, principal=writer, event_id=event["id"], now=utcnow())
    assert found(db, writer, "cy") == []


def test_a_key_finds_only_what_it_reaches(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    writer = principal_for(db, factory, owner)
    create(db, writer, title="Offsite planning", calendar_id=work)
    create(db, writer, title="Offsite packing")
    one = principal_for(db, factory, owner, permission="read", calendar_id=work)
    assert found(db, one, "offsite") == ["Offsite planning"]
    stranger = principal_for(db, factory, factory.owner(), permission="read")
    assert found(db, stranger, "offsite") == []
    assert found(db, writer, "offsite", calendar_ids=["Work"]) == ["Offsite planning"]


def test_every_backend_has_the_search_index_at_head(db: Database) -> None:
    """A later migration that rebuilds ``events`` on SQLite drops its triggers: this fails."""
    if db.engine.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE name LIKE 'events_search%'"
        wanted = {
            *(f"events_search_{n}" for n in range(PARTS)),
            *(f"events_search_{kind}" for kind in ("pending", "insert", "update", "delete")),
        }
    else:
        query = "SELECT indexname FROM pg_indexes WHERE tablename = 'events'"
        wanted = {"ix_events_search"}
    found = set(db.call(lambda conn: conn.execute(text(query)).scalars().all()))
    assert wanted <= found, found


def test_a_search_finds_its_rows_through_the_search_index_once(
    db: Database, writer: Principal
) -> None:
    """One statement: the matches found once, through the index (SQLite: FTS5 within the
    calendar's range of keys, then the rows by rowid; PostgreSQL, whose planner picks by the
    tables' sizes: the GIN index can answer it), read by the window's part and the series'."""
    create(db, writer, title="Dentist")
    plan = plan_of(
        db, lambda statement: "search_matches" in statement, lambda: searched(db, writer, "dentist")
    )
    if db.engine.dialect.name == "sqlite":
        assert plan.count("VIRTUAL TABLE") == 1, plan  # the calendar's part of the index
        assert "events_search_" in plan, plan
        assert "INTEGER PRIMARY KEY" in plan, plan
        return
    assert plan.count("ix_events_search") == 1, plan


def test_the_search_key_is_the_calendars_bucket_then_the_rowid(
    db: Database, factory: Factory
) -> None:
    """SQLite: migration 0021's triggers key each event's words by its calendar's bucket
    (``search.calendar_bucket``, which the search's range is made with) and its rowid."""
    if db.engine.dialect.name != "sqlite":
        return
    owner = factory.owner()
    writer = principal_for(db, factory, owner)
    create(db, writer, title="Keyed")

    def keyed(conn: Connection) -> list[Any]:
        write_pending_words(conn)  # as a search does: what the create's commit left pending
        return [
            row
            for n in range(PARTS)
            for row in conn.execute(
                text(
                    f"SELECT e.calendar_id, s.rowid, {n} FROM events AS e "  # noqa: S608
                    f"JOIN events_search_{n} AS s ON s.rowid & {KEY_MASK} = e.rowid "
                    f"WHERE s.events_search_{n} MATCH 'keyed'"
                )
            ).all()
        ]

    keys = db.call(keyed)
    assert len(keys) == 1
    assert keys[0][2] == index_part(keys[0][0])
    for calendar_id, key, _ in keys:
        assert key >> KEY_SHIFT == calendar_bucket(calendar_id)
    low, high = key_range([keys[0][0]])
    assert low <= keys[0][1] < high
    ids = ("a", "ab", "abc", "abcd", "cal_3prFh6OYZsWhMXwbnTjzpa", "Личное", "東京x")
    bucket = f"SELECT {_MIGRATION_0021._bucket('t')} FROM (SELECT :c AS calendar_id) AS t"  # noqa: S608
    made = db.call(lambda conn: [conn.execute(text(bucket), {"c": c}).scalar() for c in ids])
    expected = [calendar_bucket(c) for c in ids]
    assert made == expected


def test_the_housekeeping_merges_the_search_index_and_every_search_stays(
    db: Database, writer: Principal
) -> None:
    """SQLite: the segments each write left are merged into fewer (the structure record, which
    lists them, shrinks); what a search finds is the same. PostgreSQL: nothing to do."""
    for n in range(12):
        create(db, writer, title=f"Segment {n} housekeeping")
    before = found(db, writer, "housekeep")
    sqlite = db.engine.dialect.name == "sqlite"
    if sqlite:
        part = index_part(
            db.call(lambda conn: conn.execute(text("SELECT calendar_id FROM events")).scalar())
        )
        structure = f"SELECT length(block) FROM events_search_{part}_data WHERE id = 10"  # noqa: S608
        size = db.call(lambda conn: conn.execute(text(structure)).scalar())
    purged = db.call(purge_expired, now=utcnow(), call_history_days=90)
    assert purged["searchIndexMerged"] == (1 if sqlite else 0)
    assert found(db, writer, "housekeep") == before and len(before) == 12
    if sqlite:
        assert db.call(lambda conn: conn.execute(text(structure)).scalar()) < size


def test_a_search_of_calendars_in_several_parts_of_the_index_finds_each_ones(
    db: Database, factory: Factory
) -> None:
    """SQLite's index is in parts by calendar: a key over calendars in different parts (an
    all-calendars key; some of them by ``calendarIds``) searches each part once."""
    owner = factory.owner()
    writer = principal_for(db, factory, owner)
    made: dict[int, str] = {}
    for n in range(40):  # ids are random: calendars until two parts have one
        calendar_id = factory.calendar(owner, name=f"Part {n}")
        made.setdefault(index_part(calendar_id), calendar_id)
        if len(made) == 3:
            break
    assert len(made) == 3
    for part, calendar_id in made.items():
        create(db, writer, title=f"Probe {part}", calendar_id=calendar_id)
    assert sorted(found(db, writer, "probe")) == sorted(f"Probe {p}" for p in made)
    (part, first), (other, second), _ = made.items()
    chosen = found(db, writer, "prob", calendar_ids=[first, second])
    assert sorted(chosen) == sorted([f"Probe {part}", f"Probe {other}"])
