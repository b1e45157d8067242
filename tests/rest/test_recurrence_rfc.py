"""The RFC 5545 section 3.8.5.3 examples within DAILY, WEEKLY, MONTHLY and YEARLY, created
over REST in an America/New_York calendar (as the RFC's DTSTARTs are) and listed back: each
occurrence is compared with the dates the RFC prints, all at 09:00 local time. Then DST: a
series keeps its wall-clock time when the offset changes."""

from __future__ import annotations

import httpx
import pytest

from tests.rest.conftest import EVENTS
from tests.rest.recurrence_support import calendar_in, create, listed
from tests.support import Factory

NY = "America/New_York"

# (DTSTART local, rule lines, window end, the RFC's dates, in order)
RFC_EXAMPLES: dict[str, tuple[str, list[str], str, list[str]]] = {
    "daily for 10 occurrences": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=DAILY;COUNT=10"],
        "1998-01-01",
        [f"1997-09-{d:02d}" for d in range(2, 12)],
    ),
    "every 10 days, 5 occurrences": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=DAILY;INTERVAL=10;COUNT=5"],
        "1998-01-01",
        ["1997-09-02", "1997-09-12", "1997-09-22", "1997-10-02", "1997-10-12"],
    ),
    "every other day, forever (the first of them)": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=DAILY;INTERVAL=2"],
        "1997-09-13",
        ["1997-09-02", "1997-09-04", "1997-09-06", "1997-09-08", "1997-09-10", "1997-09-12"],
    ),
    "weekly for 10 occurrences": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=WEEKLY;COUNT=10"],
        "1998-01-01",
        [
            "1997-09-02",
            "1997-09-09",
            "1997-09-16",
            "1997-09-23",
            "1997-09-30",
            "1997-10-07",
            "1997-10-14",
            "1997-10-21",
            "1997-10-28",
            "1997-11-04",
        ],
    ),
    "weekly on Tuesday and Thursday for five weeks": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=WEEKLY;UNTIL=19971007T000000Z;WKST=SU;BYDAY=TU,TH"],
        "1998-01-01",
        [
            "1997-09-02",
            "1997-09-04",
            "1997-09-09",
            "1997-09-11",
            "1997-09-16",
            "1997-09-18",
            "1997-09-23",
            "1997-09-25",
            "1997-09-30",
            "1997-10-02",
        ],
    ),
    "every other week on Monday, Wednesday and Friday until 24 December 1997": (
        "1997-09-01T09:00",
        ["RRULE:FREQ=WEEKLY;INTERVAL=2;UNTIL=19971224T000000Z;WKST=SU;BYDAY=MO,WE,FR"],
        "1998-01-01",
        [
            "1997-09-01",
            "1997-09-03",
            "1997-09-05",
            "1997-09-15",
            "1997-09-17",
            "1997-09-19",
            "1997-09-29",
            "1997-10-01",
            "1997-10-03",
            "1997-10-13",
            "1997-10-15",
            "1997-10-17",
            "1997-10-27",
            "1997-10-29",
            "1997-10-31",
            "1997-11-10",
            "1997-11-12",
            "1997-11-14",
            "1997-11-24",
            "1997-11-26",
            "1997-11-28",
            "1997-12-08",
            "1997-12-10",
            "1997-12-12",
            "1997-12-22",
        ],
    ),
    "every other week on Tuesday and Thursday, for 8 occurrences": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=WEEKLY;INTERVAL=2;COUNT=8;WKST=SU;BYDAY=TU,TH"],
        "1998-01-01",
        [
            "1997-09-02",
            "1997-09-04",
            "1997-09-16",
            "1997-09-18",
            "1997-09-30",
            "1997-10-02",
            "1997-10-14",
            "1997-10-16",
        ],
    ),
    "WKST=MO changes the week": (
        "1997-08-05T09:00",
        ["RRULE:FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO"],
        "1998-01-01",
        ["1997-08-05", "1997-08-10", "1997-08-19", "1997-08-24"],
    ),
    "WKST=SU changes the week": (
        "1997-08-05T09:00",
        ["RRULE:FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU"],
        "1998-01-01",
        ["1997-08-05", "1997-08-17", "1997-08-19", "1997-08-31"],
    ),
    "monthly on the first Friday for 10 occurrences": (
        "1997-09-05T09:00",
        ["RRULE:FREQ=MONTHLY;COUNT=10;BYDAY=1FR"],
        "1999-01-01",
        [
            "1997-09-05",
            "1997-10-03",
            "1997-11-07",
            "1997-12-05",
            "1998-01-02",
            "1998-02-06",
            "1998-03-06",
            "1998-04-03",
            "1998-05-01",
            "1998-06-05",
        ],
    ),
    "monthly on the first Friday until 24 December 1997": (
        "1997-09-05T09:00",
        ["RRULE:FREQ=MONTHLY;UNTIL=19971224T000000Z;BYDAY=1FR"],
        "1999-01-01",
        ["1997-09-05", "1997-10-03", "1997-11-07", "1997-12-05"],
    ),
    "every other month on the first and last Sunday, for 10 occurrences": (
        "1997-09-07T09:00",
        ["RRULE:FREQ=MONTHLY;INTERVAL=2;COUNT=10;BYDAY=1SU,-1SU"],
        "1999-01-01",
        [
            "1997-09-07",
            "1997-09-28",
            "1997-11-02",
            "1997-11-30",
            "1998-01-04",
            "1998-01-25",
            "1998-03-01",
            "1998-03-29",
            "1998-05-03",
            "1998-05-31",
        ],
    ),
    "monthly on the second-to-last Monday for 6 months": (
        "1997-09-22T09:00",
        ["RRULE:FREQ=MONTHLY;COUNT=6;BYDAY=-2MO"],
        "1999-01-01",
        ["1997-09-22", "1997-10-20", "1997-11-17", "1997-12-22", "1998-01-19", "1998-02-16"],
    ),
    "monthly on the third-to-the-last day, forever (the first of them)": (
        "1997-09-28T09:00",
        ["RRULE:FREQ=MONTHLY;BYMONTHDAY=-3"],
        "1998-03-01",
        ["1997-09-28", "1997-10-29", "1997-11-28", "1997-12-29", "1998-01-29", "1998-02-26"],
    ),
    "monthly on the 2nd and 15th for 10 occurrences": (
        "1997-09-02T09:00",
        ["RRULE:FREQ=MONTHLY;COUNT=10;BYMONTHDAY=2,15"],
        "1999-01-01",
        [
            "1997-09-02",
            "1997-09-15",
            "1997-10-02",
            "1997-10-15",
            "1997-11-02",
            "1997-11-15",
            "1997-12-02",
            "1997-12-15",
            "1998-01-02",
            "1998-01-15",
        ],
    ),
    "every Friday the 13th, forever (DTSTART excluded)": (
        "1997-09-02T09:00",
        [
            "EXDATE;TZID=America/New_York:19970902T090000",
            "RRULE:FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
        ],
        "2001-01-01",
        ["1998-02-13", "1998-03-13", "1998-11-13", "1999-08-13", "2000-10-13"],
    ),
    "the third Tuesday, Wednesday or Thursday, for the next 3 months": (
        "1997-09-04T09:00",
        ["RRULE:FREQ=MONTHLY;COUNT=3;BYDAY=TU,WE,TH;BYSETPOS=3"],
        "1999-01-01",
        ["1997-09-04", "1997-10-07", "1997-11-06"],
    ),
    "the second-to-last weekday of the month (the first of them)": (
        "1997-09-29T09:00",
        ["RRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2"],
        "1998-03-31",
        [
            "1997-09-29",
            "1997-10-30",
            "1997-11-27",
            "1997-12-30",
            "1998-01-29",
            "1998-02-26",
            "1998-03-30",
        ],
    ),
    "invalid dates (30 February) are skipped": (
        "2007-01-15T09:00",
        ["RRULE:FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5"],
        "2008-01-01",
        ["2007-01-15", "2007-01-30", "2007-02-15", "2007-03-15", "2007-03-30"],
    ),
    "yearly in June and July for 10 occurrences": (
        "1997-06-10T09:00",
        ["RRULE:FREQ=YEARLY;COUNT=10;BYMONTH=6,7"],
        "2003-01-01",
        [f"{y}-{m}-10" for y in range(1997, 2002) for m in ("06", "07")],
    ),
    "every third year on the 1st, 100th and 200th day for 10 occurrences": (
        "1997-01-01T09:00",
        ["RRULE:FREQ=YEARLY;INTERVAL=3;COUNT=10;BYYEARDAY=1,100,200"],
        "2007-01-01",
        [
            "1997-01-01",
            "1997-04-10",
            "1997-07-19",
            "2000-01-01",
            "2000-04-09",
            "2000-07-18",
            "2003-01-01",
            "2003-04-10",
            "2003-07-19",
            "2006-01-01",
        ],
    ),
    "Monday of week number 20 (the first of them)": (
        "1997-05-12T09:00",
        ["RRULE:FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO"],
        "2000-01-01",
        ["1997-05-12", "1998-05-11", "1999-05-17"],
    ),
    "every Thursday in March (the first of them)": (
        "1997-03-13T09:00",
        ["RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=TH"],
        "2000-01-01",
        [
            "1997-03-13",
            "1997-03-20",
            "1997-03-27",
            "1998-03-05",
            "1998-03-12",
            "1998-03-19",
            "1998-03-26",
            "1999-03-04",
            "1999-03-11",
            "1999-03-18",
            "1999-03-25",
        ],
    ),
    "every day in January, for 3 years": (
        "1998-01-01T09:00",
        ["RRULE:FREQ=YEARLY;UNTIL=20000131T140000Z;BYMONTH=1;BYDAY=SU,MO,TU,WE,TH,FR,SA"],
        "2001-01-01",
        [f"{y}-01-{d:02d}" for y in (1998, 1999, 2000) for d in range(1, 32)],
    ),
    "US presidential election day (the first of them)": (
        "1996-11-05T09:00",
        ["RRULE:FREQ=YEARLY;INTERVAL=4;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8"],
        "2005-01-01",
        ["1996-11-05", "2000-11-07", "2004-11-02"],
    ),
}


@pytest.mark.parametrize("name", list(RFC_EXAMPLES))
def test_an_rfc_5545_example_lists_exactly_the_dates_the_rfc_prints(
    api: httpx.Client, factory: Factory, name: str
) -> None:
    start, lines, window_end, dates = RFC_EXAMPLES[name]
    cal = calendar_in(factory, NY)
    series = create(
        api, cal, startsAt=start, endsAt=start[:11] + "10:00", recurrence=lines, title=name
    )
    occurrences = listed(api, cal, timeMin=start[:10], timeMax=window_end, limit=7)
    assert [o["startsAt"][:10] for o in occurrences] == dates
    for occurrence in occurrences:
        assert occurrence["startsAt"][10:19] == "T09:00:00"  # local time, whatever the offset
        assert occurrence["endsAt"][10:19] == "T10:00:00"
        assert occurrence["recurringEventId"] == series["id"]
        assert occurrence["originalStartsAt"] == occurrence["startsAt"]
        assert occurrence["title"] == name
        assert "recurrence" not in occurrence


def test_a_weekly_0930_berlin_series_stays_at_0930_across_both_dst_changes(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    create(
        api,
        cal,
        startsAt="2026-03-16T09:30",
        endsAt="2026-03-16T10:30",
        recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO"],
    )
    starts = [e["startsAt"] for e in listed(api, cal, timeMin="2026-03-16", timeMax="2026-11-10")]
    assert starts[:3] == [
        "2026-03-16T09:30:00+01:00",
        "2026-03-23T09:30:00+01:00",
        "2026-03-30T09:30:00+02:00",  # summer time since 29 March: 07:30 UTC, not 08:30
    ]
    assert starts[-3:] == [
        "2026-10-26T09:30:00+01:00",  # winter time again since 25 October
        "2026-11-02T09:30:00+01:00",
        "2026-11-09T09:30:00+01:00",
    ]
    assert len(starts) == 35 and all(
        s[10:] in ("T09:30:00+01:00", "T09:30:00+02:00") for s in starts
    )


def test_a_daily_new_york_series_keeps_its_local_time_across_dst(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, NY)
    create(
        api,
        cal,
        startsAt="2026-03-06T08:00:00-05:00",
        endsAt="2026-03-06T08:45:00-05:00",
        recurrence=["RRULE:FREQ=DAILY"],
    )
    events = listed(api, cal, timeMin="2026-03-06", timeMax="2026-03-11")
    assert [(e["startsAt"], e["endsAt"]) for e in events] == [
        ("2026-03-06T08:00:00-05:00", "2026-03-06T08:45:00-05:00"),
        ("2026-03-07T08:00:00-05:00", "2026-03-07T08:45:00-05:00"),
        ("2026-03-08T08:00:00-04:00", "2026-03-08T08:45:00-04:00"),  # DST began at 02:00
        ("2026-03-09T08:00:00-04:00", "2026-03-09T08:45:00-04:00"),
        ("2026-03-10T08:00:00-04:00", "2026-03-10T08:45:00-04:00"),
    ]
    autumn = listed(api, cal, timeMin="2026-10-31", timeMax="2026-11-03")
    assert [e["startsAt"] for e in autumn] == [
        "2026-10-31T08:00:00-04:00",
        "2026-11-01T08:00:00-05:00",
        "2026-11-02T08:00:00-05:00",
    ]


def test_a_time_in_the_spring_gap_takes_the_offset_before_the_gap(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, NY)
    create(
        api,
        cal,
        startsAt="2026-03-07T02:30",
        endsAt="2026-03-07T03:00",
        recurrence=["RRULE:FREQ=DAILY;COUNT=3"],
    )
    starts = [e["startsAt"] for e in listed(api, cal, timeMin="2026-03-07", timeMax="2026-03-10")]
    # 02:30 does not exist on 8 March: RFC 5545 reads it with the offset before the gap.
    assert starts == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:30:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]


def test_an_all_day_yearly_series_on_29_february_occurs_in_leap_years_only(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    series = create(
        api,
        cal,
        startsAt="2024-02-29",
        endsAt="2024-02-29",
        allDay=True,
        recurrence=["RRULE:FREQ=YEARLY"],
    )
    events = listed(api, cal, timeMin="2024-01-01", timeMax="2037-01-01")
    assert [(e["id"], e["startsAt"], e["endsAt"], e["allDay"]) for e in events] == [
        (f"{series['id']}_{y}0229", f"{y}-02-29T00:00:00+01:00", f"{y}-03-01T00:00:00+01:00", True)
        for y in (2024, 2028, 2032, 2036)
    ]
    # 2100 is not a leap year: the next after 2096 is 2104.
    late = listed(api, cal, timeMin="2095-01-01", timeMax="2106-01-01")
    assert [e["startsAt"][:10] for e in late] == ["2096-02-29", "2104-02-29"]


def test_a_series_with_its_own_time_zone_repeats_at_that_zones_wall_clock(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    series = create(
        api,
        cal,
        startsAt="2026-03-05T10:00",  # read in the series' zone: 10:00 New York, 16:00 Berlin
        endsAt="2026-03-05T10:30",
        timeZone=NY,
        recurrence=["RRULE:FREQ=WEEKLY;BYDAY=TH;COUNT=4", "EXDATE:20260319T100000"],
    )
    assert series["timeZone"] == NY
    assert series["startsAt"] == "2026-03-05T16:00:00+01:00"  # shown in the calendar's zone
    events = listed(api, cal, timeMin="2026-03-01", timeMax="2026-05-01")
    assert [e["startsAt"] for e in events] == [
        "2026-03-05T16:00:00+01:00",
        "2026-03-12T15:00:00+01:00",  # US summer time from 8 March, EU from 29 March
        "2026-03-26T15:00:00+01:00",  # 19 March excluded: the EXDATE is New York time
    ]
    assert api.get(f"{EVENTS}/{series['id']}", headers=cal.headers).json()["timeZone"] == NY
    # An occurrence's new time without an offset is read in the series' zone too.
    moved = api.patch(
        f"{EVENTS}/{events[1]['id']}", json={"startsAt": "2026-03-12T11:00",
                                               "endsAt": "2026-03-12T11:30"},
        headers=cal.headers,
    )  # fmt: skip
    assert moved.status_code == 200, moved.text
    assert moved.json()["startsAt"] == "2026-03-12T16:00:00+01:00"
    # null: back to the calendar's zone (its start stays the same instant: 16:00 Berlin).
    back = api.patch(f"{EVENTS}/{series['id']}", json={"timeZone": None}, headers=cal.headers)
    assert back.status_code == 200, back.text
    assert back.json()["timeZone"] == "Europe/Berlin"
    later = listed(api, cal, timeMin="2026-03-01", timeMax="2026-05-01")
    assert [e["startsAt"] for e in later] == [
        "2026-03-05T16:00:00+01:00",
        "2026-03-12T16:00:00+01:00",  # Berlin's wall clock now; the moved one was dropped
        # The EXDATE is an instant (14:00Z): the 19th, now at 15:00Z, is not excluded.
        "2026-03-19T16:00:00+01:00",
        "2026-03-26T16:00:00+01:00",
    ]


def test_a_time_zone_that_is_no_zone_or_on_an_all_day_event_is_a_400_naming_it(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    for extra in ({"timeZone": "Mars/Olympus"}, {"timeZone": NY, "allDay": True}):
        body = {"title": "x", "calendarId": cal.id, "startsAt": "2026-03-05",
                "endsAt": "2026-03-05", **extra}  # fmt: skip
        if "allDay" not in extra:
            body.update(startsAt="2026-03-05T10:00", endsAt="2026-03-05T11:00")
        answer = api.post(EVENTS, json=body, headers=cal.headers)
        assert answer.status_code == 400, answer.text
        assert [e["field"] for e in answer.json()["errors"]] == ["timeZone"]
