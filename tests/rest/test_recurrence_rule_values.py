"""Rule part values the recurrence rules cannot take are a 400 on ``recurrence``, never a 5xx."""

from __future__ import annotations

import httpx
import pytest

from tests.rest.conftest import EVENTS
from tests.rest.recurrence_support import calendar_in
from tests.support import Factory

REFUSED = [
    "RRULE:FREQ=DAILY;BYSECOND=60",
    "RRULE:FREQ=DAILY;BYMINUTE=60",
    "RRULE:FREQ=DAILY;BYHOUR=24",
    "RRULE:FREQ=MONTHLY;BYMONTHDAY=0",
    "RRULE:FREQ=YEARLY;BYYEARDAY=367",
    "RRULE:FREQ=YEARLY;BYWEEKNO=54",
    "RRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=0",
    "RRULE:FREQ=WEEKLY;WKST=XX",
    "RRULE:FREQ=DAILY;INTERVAL=0",
]


@pytest.mark.parametrize("rule", REFUSED)
def test_a_rule_part_value_out_of_range_is_a_400_on_recurrence(
    rule: str, api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    answer = api.post(
        EVENTS,
        json={
            "title": "Series",
            "calendarId": cal.id,
            "startsAt": "2026-03-02T09:00:00Z",
            "endsAt": "2026-03-02T10:00:00Z",
            "recurrence": [rule],
        },
        headers=cal.headers,
    )
    assert answer.status_code == 400, answer.text
    (error,) = answer.json()["errors"]
    assert error["field"] == "recurrence"
    assert rule.rsplit(";", 1)[-1].split("=")[0] in error["message"]
