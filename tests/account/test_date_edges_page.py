"""The event form with dates at the edges: a 400 naming the input, never a 500."""

from __future__ import annotations

import pytest

from tests.account.conftest import Settings, event_form
from tests.support import Factory


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"all_day": "on", "end_date": "9999-12-31"}, "end-error"),
        ({"all_day": "on", "start_date": "9999-12-31", "end_date": "9999-12-31"}, "start-error"),
        ({"start_date": "0001-01-01"}, "start-error"),
        ({"end_date": "9999-12-31", "end_time": "23:59"}, "end-error"),
    ],
)
def test_an_edge_date_in_the_event_form_is_a_400_naming_the_input(
    settings: Settings, factory: Factory, fields: dict[str, str], error: str
) -> None:
    berlin = factory.calendar(settings.owner, time_zone="Europe/Berlin")
    answer = settings.post("/events", event_form(berlin, **fields))
    assert answer.status_code == 400, answer.text
    assert f'id="{error}">is outside the dates this service accepts' in answer.text
