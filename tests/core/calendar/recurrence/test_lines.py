"""The lines a form builds (``recurrence.rules``: ``typed_lines``, ``every``,
``recurrence_change``) and what it reads back of a stored rule (``every_of``, ``Rule``'s
parts), so that no page keeps an RRULE parser of its own."""

from __future__ import annotations

from calendar_service.calendar.recurrence.rules import (
    FREQUENCIES,
    every,
    every_of,
    recurrence_change,
    stored_rule,
    typed_lines,
    typed_text,
)


def test_typed_lines_are_split_on_white_space_and_a_line_without_a_name_is_the_rrule() -> None:
    typed = "  FREQ=WEEKLY;BYDAY=TU\n exdate:20260310T090000Z RDATE;VALUE=DATE:20260312 "
    assert typed_lines(typed) == [
        "RRULE:FREQ=WEEKLY;BYDAY=TU",
        "exdate:20260310T090000Z",
        "RDATE;VALUE=DATE:20260312",
    ]
    assert typed_lines("rrule:FREQ=DAILY") == ["rrule:FREQ=DAILY"]
    assert typed_lines(" \t") == []


def test_stored_lines_typed_back_read_as_the_same_lines() -> None:
    lines = ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE", "EXDATE:20260309T090000Z"]
    assert typed_lines(typed_text(lines)) == lines


def test_every_day_week_month_or_year_is_a_rule_that_says_nothing_else() -> None:
    for freq in FREQUENCIES:
        assert every(freq) == [f"RRULE:FREQ={freq}"]
        assert every_of(every(freq)) == freq
    assert every_of(["RRULE:FREQ=WEEKLY;BYDAY=MO"]) is None
    assert every_of(["RRULE:FREQ=DAILY", "EXDATE:20260309T090000Z"]) is None
    assert every_of(None) is None


def test_a_rule_sent_again_unchanged_is_no_change_and_any_other_is() -> None:
    own = ["RRULE:FREQ=WEEKLY;BYDAY=MO"]
    assert recurrence_change(list(own), own) == {}
    assert recurrence_change(None, None) == {}
    assert recurrence_change(["RRULE:FREQ=DAILY"], own) == {"recurrence": ["RRULE:FREQ=DAILY"]}
    assert recurrence_change(None, own) == {"recurrence": None}  # no longer repeats
    assert recurrence_change(own, None) == {"recurrence": own}


def test_a_stored_rule_tells_its_frequency_parts_weekdays_and_month_days() -> None:
    rule = stored_rule(("RRULE:FREQ=MONTHLY;BYDAY=1MO,-1FR,WE;WKST=SU;COUNT=3",), False)
    assert rule.rrule == "FREQ=MONTHLY;BYDAY=1MO,-1FR,WE;WKST=SU;COUNT=3"
    assert rule.frequency == "MONTHLY"
    assert rule.parts == {"BYDAY", "WKST"}
    assert rule.weekdays == ((1, "MO"), (-1, "FR"), (None, "WE"))
    assert rule.month_days == ()
    assert rule.count == 3

    days = stored_rule(("RRULE:FREQ=MONTHLY;BYMONTHDAY=15,-1;BYMONTH=2",), True)
    assert days.frequency == "MONTHLY"
    assert days.parts == {"BYMONTHDAY", "BYMONTH"}
    assert days.month_days == (15, -1)
    assert days.weekdays == ()
