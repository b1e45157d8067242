"""Property tests of the core's date parsing, formatting and list window over the whole accepted
range and beyond it: every input is a result or a ValueError/ValidationFailed (never an
OverflowError or any other exception), and every time the service writes is RFC 3339 that it
would itself accept for the same instant.

Deterministic (``derandomize``) and bounded: a few seconds in all."""

from __future__ import annotations

import base64
import re
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import available_timezones

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.platform.db import Database
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import (
    EARLIEST,
    LATEST,
    MAX_OFFSET,
    format_in,
    format_utc,
    midnight,
    parse_date_time,
    parse_day,
    utc_text,
    zone,
)
from tests.support import Factory

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
RFC3339 = re.compile(r"^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$")

# Zones with a history: local mean time with seconds into the 20th century, offsets of 30 and
# 45 minutes, a skipped day, DST at midnight, negative DST, the widest offsets in use.
TRICKY_ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Europe/Amsterdam",
    "Africa/Monrovia",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Pacific/Chatham",
    "Pacific/Kiritimati",
    "Pacific/Apia",
    "Pacific/Niue",
    "Australia/Lord_Howe",
    "America/Sao_Paulo",
    "Europe/Dublin",
    "Africa/Casablanca",
    "Antarctica/Troll",
    "America/Adak",
    "Asia/Manila",
]
ALL_ZONES = sorted(available_timezones())
zones = st.one_of(st.sampled_from(TRICKY_ZONES), st.sampled_from(ALL_ZONES)).map(zone)

# Years near the edges of the range and of what a datetime holds, and anywhere.
years = st.one_of(
    st.sampled_from([1, 2, 1898, 1899, 1900, 1901, 1937, 1972, 2199, 2200, 2201, 2202, 9998, 9999]),
    st.integers(min_value=1, max_value=9999),
)
instants = st.datetimes(
    min_value=EARLIEST.replace(tzinfo=None),
    max_value=LATEST.replace(tzinfo=None),
    timezones=st.just(UTC),
)


@st.composite
def offsets(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["none", "Z", "z", "colon", "bare"]))
    if kind == "none":
        return ""
    if kind in "Zz":
        return kind
    sign = draw(st.sampled_from("+-"))
    hours = draw(st.one_of(st.sampled_from([0, 14, 17, 18, 19, 23]), st.integers(0, 99)))
    minutes = draw(st.one_of(st.sampled_from([0, 1, 30, 45, 59, 60]), st.integers(0, 99)))
    return f"{sign}{hours:02d}{':' if kind == 'colon' else ''}{minutes:02d}"


@st.composite
def date_time_texts(draw: st.DrawFn) -> str:
    """Mostly the shape the parser takes (real or not-quite-real dates), sometimes anything."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=40))
    year = draw(years)
    month = draw(st.integers(0, 13))
    day = draw(st.integers(0, 32))
    hour = draw(st.integers(0, 25))
    minute = draw(st.integers(0, 60))
    text = f"{year:04d}-{month:02d}-{day:02d}{draw(st.sampled_from('Tt '))}{hour:02d}:{minute:02d}"
    if draw(st.booleans()):
        text += f":{draw(st.integers(0, 60)):02d}"
        if draw(st.booleans()):
            text += "." + "".join(
                draw(st.lists(st.sampled_from("0123456789"), min_size=1, max_size=9))
            )
    return text + draw(offsets())


@st.composite
def day_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(date_time_texts())
    return f"{draw(years):04d}-{draw(st.integers(0, 13)):02d}-{draw(st.integers(0, 32)):02d}"


def _check_written(text: str, instant: datetime) -> None:
    """``text`` is RFC 3339 with a whole-minute offset within ±18:00, names ``instant``, and
    the service parses it back to that instant in any zone."""
    match = RFC3339.match(text)
    assert match, text
    if match.group(4) is not None:
        offset = timedelta(hours=int(match.group(4)), minutes=int(match.group(5)))
        assert int(match.group(5)) < 60 and offset <= MAX_OFFSET, text
    assert datetime.fromisoformat(text.replace("Z", "+00:00")) == instant
    assert parse_date_time(text, zone("Pacific/Kiritimati")) == instant


@FUZZ
@given(text=date_time_texts(), tz=zones)
def test_parsing_a_date_time_gives_an_instant_in_range_or_a_value_error(
    text: str, tz: tzinfo
) -> None:
    try:
        value = parse_date_time(text, tz)
    except ValueError:
        return
    assert value.tzinfo is UTC
    assert EARLIEST <= value <= LATEST
    _check_written(format_in(value, tz), value)
    _check_written(format_utc(value), value)


@FUZZ
@given(
    year=years,
    rest=st.tuples(*(st.integers(0, n) for n in (13, 32, 25, 60, 61))),
    digits=st.booleans(),
    tz=zones,
)
def test_whole_seconds_in_utc_read_in_one_step_as_the_full_path_reads_them(
    year: int, rest: tuple[int, ...], digits: bool, tz: tzinfo
) -> None:
    # ``parse_date_time`` reads ``2026-03-02T09:30:00Z`` in one step; the same text with
    # ``+00:00`` takes the full path. Both give the same instant, or the same refusal.
    text = "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z".format(year, *rest)
    if digits:  # digits of another script: refused by both
        text = text.replace("1", "\u0661")
    answers = []
    for written in (text, text[:-1] + "+00:00"):
        try:
            answers.append(parse_date_time(written, tz))
        except ValueError as exc:
            answers.append(str(exc))
    assert answers[0] == answers[1]
    if isinstance(answers[0], datetime):
        assert answers[0].tzinfo is UTC


@FUZZ
@given(instant=instants, tz=zones)
def test_every_instant_in_range_is_written_as_rfc3339_that_parses_back_to_it(
    instant: datetime, tz: tzinfo
) -> None:
    written = format_in(instant, tz)
    _check_written(written, instant)
    assert format_in(utc_text(instant), tz) == written  # the list's path, from stored text
    assert parse_date_time(written, tz) == instant


@FUZZ
@given(text=day_texts(), tz=zones)
def test_a_day_and_its_midnight_are_a_date_an_instant_in_range_or_a_value_error(
    text: str, tz: tzinfo
) -> None:
    try:
        day = parse_day(text, tz)
        start = midnight(day, tz)
        end = midnight(day + timedelta(days=1), tz)
    except ValueError:
        return
    assert isinstance(day, date)
    assert EARLIEST <= start < end <= LATEST
    _check_written(format_in(start, tz), start)


@FUZZ
@given(low=instants, longest=st.integers(min_value=0, max_value=2**63 - 1))
def test_the_window_floor_is_never_above_the_bound_and_never_overflows(
    low: datetime, longest: int
) -> None:
    floor = events.window_floor(low, longest)
    assert floor <= low
    if longest <= (low - EARLIEST).total_seconds():
        assert floor == low - timedelta(seconds=longest)


bounds = st.one_of(st.none(), st.just(""), date_time_texts(), day_texts(), instants.map(format_utc))
tokens = st.one_of(
    st.none(),
    st.text(max_size=60),
    st.binary(max_size=80).map(lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("=")),
)


@pytest.fixture(scope="module")
def crowded(db: Database, factory: Factory) -> Principal:
    """An owner whose calendars hold the longest event accepted, events at both ends of the
    range, and ordinary ones, in zones with local mean time."""
    owner = factory.owner(time_zone="Europe/Amsterdam")
    factory.calendar(owner, time_zone="Africa/Monrovia", name="Monrovia")
    principal = events.owner_principal(owner.id)
    now = datetime.now(UTC)
    for calendar, starts, ends in [
        (None, "1900-01-01T00:00:00Z", "2201-01-01T00:00:00Z"),
        (None, "1900-01-01T00:00:00Z", "1900-01-01T00:00:00Z"),
        ("Monrovia", "2201-01-01T00:00:00Z", "2201-01-01T00:00:00Z"),
        ("Monrovia", "1960-06-01T12:00:00", "1960-06-01T13:00:00"),
        (None, "1920-06-01T12:00:00", "1920-06-01T13:00:00"),
        (None, "2026-03-02T09:00:00+01:00", "2026-03-02T10:00:00+01:00"),
    ]:
        data = EventCreate(title="e", starts_at=starts, ends_at=ends, calendar=calendar)
        db.call(events.create_event, principal=principal, data=data, now=now)
    return principal


@FUZZ
@given(time_min=bounds, time_max=bounds, token=tokens, limit=st.sampled_from([None, 1, 2, "3"]))
def test_a_list_with_any_window_and_token_is_a_page_or_a_validation_error(
    db: Database,
    crowded: Principal,
    time_min: str | None,
    time_max: str | None,
    token: str | None,
    limit: object,
) -> None:
    key = b"fuzz page-token key"
    try:
        page = db.call(
            events.list_events,
            principal=crowded,
            time_min=time_min,
            time_max=time_max,
            limit=limit,
            page_token=token,
            token_key=key,
        )
    except ValidationFailed:
        return
    written = {e["startsAt"] for e in page["events"]} | {e["endsAt"] for e in page["events"]}
    for text in written:
        _check_written(text, datetime.fromisoformat(text.replace("Z", "+00:00")))
    if "nextPageToken" in page:  # and the next page is a page too
        db.call(
            events.list_events,
            principal=crowded,
            time_min=time_min,
            time_max=time_max,
            limit=limit,
            page_token=page["nextPageToken"],
            token_key=key,
        )


def test_whole_minute_offsets_are_shown_as_they_are() -> None:
    """The rounding of local mean time leaves every ordinary offset alone."""
    for minutes in (-12 * 60, -9 * 60 - 30, 0, 5 * 60 + 45, 14 * 60):
        tz = timezone(timedelta(minutes=minutes))
        text = format_in(datetime(2026, 3, 2, 9, 30, tzinfo=UTC), tz)
        assert datetime.fromisoformat(text.replace("Z", "+00:00")).utcoffset() == timedelta(
            minutes=minutes
        )


@FUZZ
@given(
    st.datetimes(
        min_value=datetime(1900, 1, 2), max_value=datetime(2199, 12, 30), allow_imaginary=False
    ),
    st.sampled_from(TRICKY_ZONES),
    st.sampled_from((0, 1)),
)
def test_the_stored_text_of_an_instant_is_its_utc_isoformat_in_whatever_zone_and_fold(
    wall: datetime, name: str, fold: int
) -> None:
    given_at = wall.replace(tzinfo=zone(name), fold=fold)
    expected = given_at.astimezone(UTC).isoformat(timespec="microseconds")[:26] + "Z"
    assert utc_text(given_at) == expected
    assert utc_text(given_at) == expected  # again: the texts made lately are kept by instant


def test_the_two_instants_of_an_hour_a_clock_repeats_have_two_stored_texts() -> None:
    berlin = zone("Europe/Berlin")  # 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice
    first = datetime(2026, 10, 25, 2, 30, tzinfo=berlin, fold=0)
    second = first.replace(fold=1)
    assert first == second  # Python compares them as the same wall-clock time...
    assert utc_text(first) == "2026-10-25T00:30:00.000000Z"  # ...they are not the same instant
    assert utc_text(second) == "2026-10-25T01:30:00.000000Z"
