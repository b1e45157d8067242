"""The owner's rules for agents over REST, against a real server: ``getSchedulingRules``, the
409 ``rule_violation`` problem with its suggestions, dry runs, ``ask`` as a 202 proposal, and
``findFreeTime`` offering only times that keep the rules (docs/rules.md)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import httpx

from calendar_service.calendar.rules import set_rules
from calendar_service.platform.timeutil import utcnow, zone
from tests.rest.conftest import EVENTS
from tests.support import Factory, bearer

RULES = "/api/v1/calendar/rules"
FREE_TIME = "/api/v1/calendar/freeTime"
BERLIN = zone("Europe/Berlin")
HOURS = {"workingHours": {"mon": [{"start": "09:00", "end": "17:00"}]}, "bufferMinutes": 15}


def monday() -> date:
    day = utcnow().astimezone(BERLIN).date() + timedelta(days=14)
    return day + timedelta(days=-day.weekday() % 7)


def at(day: date, clock: str) -> str:
    return f"{day.isoformat()}T{clock}:00"


def owner_with_rules(factory: Factory, value: dict[str, object], **key: object) -> str:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner, **key)
    factory.db.call(set_rules, user_id=owner.id, value=value, now=utcnow())
    return secret


def test_a_key_reads_the_rules_and_whether_they_bind_it(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, bound = factory.key(owner, permission="freebusy")
    _, exempt = factory.key(owner, rules="exempt")
    answer = api.get(RULES, headers=bearer(bound))
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"rules": {"onViolation": "refuse"}, "bindsThisKey": True}
    factory.db.call(set_rules, user_id=owner.id, value=HOURS, now=utcnow())
    shown = api.get(RULES, headers=bearer(exempt)).json()
    assert shown == {"rules": {**HOURS, "onViolation": "refuse"}, "bindsThisKey": False}
    assert api.get(RULES + "?x=1", headers=bearer(bound)).json()["code"] == "unknown_parameter"


def test_a_write_that_breaks_a_rule_is_a_409_naming_it_with_suggestions_that_pass(
    api: httpx.Client, factory: Factory
) -> None:
    secret = owner_with_rules(factory, HOURS)
    m = monday()
    body = {"title": "Early", "startsAt": at(m, "08:00"), "endsAt": at(m, "09:00")}
    refused = api.post(EVENTS, json=body, headers=bearer(secret))
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    problem = refused.json()
    assert problem["code"] == "rule_violation"
    assert [e["rule"] for e in problem["errors"]] == ["workingHours"]
    assert "09:00-17:00" in problem["errors"][0]["message"]
    assert [s["startsAt"][11:16] for s in problem["suggestions"]] == ["09:00", "09:15", "09:30"]
    assert api.get(EVENTS, headers=bearer(secret)).json()["events"] == []
    first = problem["suggestions"][0]
    made = api.post(EVENTS, json={"title": "Early", **first}, headers=bearer(secret))
    assert made.status_code == 201, made.text
    moved = api.patch(
        f"{EVENTS}/{made.json()['id']}",
        json={"startsAt": at(m, "16:30"), "endsAt": at(m, "17:30")},
        headers=bearer(secret),
    )
    assert moved.status_code == 409 and moved.json()["code"] == "rule_violation"


def test_a_dry_run_reports_the_rules_broken_and_writes_nothing(
    api: httpx.Client, factory: Factory
) -> None:
    secret = owner_with_rules(factory, HOURS)
    m = monday()
    body = {"title": "Early", "startsAt": at(m, "07:00"), "endsAt": at(m, "08:00")}
    answer = api.post(EVENTS + "?dryRun=true", json=body, headers=bearer(secret))
    assert answer.status_code == 200, answer.text
    assert [e["rule"] for e in answer.json()["ruleViolations"]] == ["workingHours"]
    assert len(answer.json()["suggestions"]) == 3
    assert api.get(EVENTS, headers=bearer(secret)).json()["events"] == []


def test_ask_makes_the_write_wait_for_the_owner_naming_the_rules(
    api: httpx.Client, factory: Factory
) -> None:
    secret = owner_with_rules(factory, {**HOURS, "onViolation": "ask"})
    m = monday()
    body = {"title": "Early", "startsAt": at(m, "08:00"), "endsAt": at(m, "09:00")}
    answer = api.post(EVENTS, json=body, headers=bearer(secret))
    assert answer.status_code == 202, answer.text
    proposal = answer.json()
    assert proposal["status"] == "pending"
    assert [e["rule"] for e in proposal["ruleViolations"]] == ["workingHours"]
    polled = api.get(f"/api/v1/calendar/proposals/{proposal['id']}", headers=bearer(secret))
    assert polled.json()["ruleViolations"] == proposal["ruleViolations"]


def test_find_free_time_offers_only_times_that_keep_the_rules_and_free_busy_ignores_them(
    api: httpx.Client, factory: Factory
) -> None:
    secret = owner_with_rules(factory, HOURS)
    m = monday()
    call = {"title": "Call", "startsAt": at(m, "10:00"), "endsAt": at(m, "11:00")}
    assert api.post(EVENTS, json=call, headers=bearer(secret)).status_code == 201
    asked = {"timeMin": at(m, "07:00"), "timeMax": at(m, "13:00"), "durationMinutes": 60}
    slots = api.post(FREE_TIME, json=asked, headers=bearer(secret)).json()["slots"]
    assert [s["startsAt"][11:16] for s in slots] == ["11:15", "11:30", "11:45", "12:00"]
    for slot in slots:  # each one may be booked
        body = {"title": "Offered", **slot}
        dry = api.post(EVENTS + "?dryRun=true", json=body, headers=bearer(secret)).json()
        assert "ruleViolations" not in dry
    busy = api.post(
        "/api/v1/calendar/freeBusy",
        json={"timeMin": at(m, "07:00"), "timeMax": at(m, "13:00")},
        headers=bearer(secret),
    ).json()
    assert [b["startsAt"][11:16] for c in busy["calendars"] for b in c["busy"]] == ["10:00"]


def test_an_exempt_key_writes_where_the_rules_would_refuse(
    api: httpx.Client, factory: Factory
) -> None:
    secret = owner_with_rules(factory, HOURS, rules="exempt")
    m = monday()
    body = {"title": "Early", "startsAt": at(m, "08:00"), "endsAt": at(m, "09:00")}
    assert api.post(EVENTS, json=body, headers=bearer(secret)).status_code == 201
    asked = {"timeMin": at(m, "07:00"), "timeMax": at(m, "08:00"), "durationMinutes": 60}
    slots = api.post(FREE_TIME, json=asked, headers=bearer(secret)).json()["slots"]
    assert [datetime.fromisoformat(s["startsAt"]).hour for s in slots] == [7]
