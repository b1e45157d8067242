"""The owner's rules for agents over MCP, with the official client: ``getSchedulingRules``, a
write refused as ``rule_violation`` naming the rule with suggestions, a dry run reporting it,
and ``ask`` answering that the change awaits the owner, naming the rules (docs/rules.md)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from calendar_service.calendar.rules import set_rules
from calendar_service.platform.timeutil import utcnow, zone
from tests.mcp_tools.clients import MODES, connect, text_of
from tests.support import Factory, RunningServer

HOURS = {"workingHours": {"mon": [{"start": "09:00", "end": "17:00"}]}}


def monday() -> date:
    day = utcnow().astimezone(zone("Europe/Berlin")).date() + timedelta(days=14)
    return day + timedelta(days=-day.weekday() % 7)


@pytest.mark.parametrize("mode", MODES)
async def test_a_model_reads_the_rules_and_is_refused_with_suggestions_when_it_breaks_one(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    factory.db.call(set_rules, user_id=owner.id, value=HOURS, now=utcnow())
    m = monday().isoformat()
    early = {"title": "Early", "startsAt": f"{m}T08:00", "endsAt": f"{m}T09:00"}
    async with connect(server.url, secret, mode=mode) as client:
        rules = await client.call_tool("getSchedulingRules", {})
        refused = await client.call_tool("createCalendarEvent", early)
        dry = await client.call_tool("createCalendarEvent", {**early, "dryRun": True})
        factory.db.call(
            set_rules, user_id=owner.id, value={**HOURS, "onViolation": "ask"}, now=utcnow()
        )
        asked = await client.call_tool("createCalendarEvent", early)
    assert rules.structured_content == {
        "rules": {**HOURS, "onViolation": "refuse"},
        "bindsThisKey": True,
    }
    assert refused.is_error
    text = text_of(refused)
    assert text.startswith("rule_violation: ")
    assert "- workingHours: " in text
    assert f"- try {m}T09:00:00+0" in text
    assert dry.structured_content is not None
    assert [e["rule"] for e in dry.structured_content["ruleViolations"]] == ["workingHours"]
    assert asked.structured_content is not None and asked.structured_content["awaitsApproval"]
    assert "working hours" in asked.structured_content["message"]
