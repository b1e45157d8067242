"""Approvals over MCP: a write tool of a key whose writes wait answers that the change awaits
the owner, with the proposal's id, and changes nothing (docs/changes.md)."""

from __future__ import annotations

import json

import httpx
import pytest

from calendar_service.governance.approving import approve
from calendar_service.platform.timeutil import utcnow
from tests.mcp_tools.clients import MODES, connect, text_of
from tests.rest.conftest import EVENTS, create_event
from tests.support import Factory, RunningServer, bearer


@pytest.mark.parametrize("mode", MODES)
async def test_a_write_tool_says_the_change_awaits_the_owner_with_its_id(
    server: RunningServer, api: httpx.Client, factory: Factory, mode: str
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, name="Assistant", approval="destructive")
    event = create_event(api, secret)
    async with connect(server.url, secret, mode=mode) as client:
        result = await client.call_tool(
            "updateCalendarEvent", {"eventId": event["id"], "title": "Moved by the agent"}
        )
        dry = await client.call_tool(
            "deleteCalendarEvent", {"eventId": event["id"], "dryRun": True}
        )
    assert not result.is_error, text_of(result)
    content = result.structured_content
    assert content is not None and json.loads(text_of(result)) == content
    assert content["awaitsApproval"] is True and "changeId" not in content
    proposal = content["proposal"]
    assert proposal["id"].startswith("prop_") and proposal["id"] in content["message"]
    assert proposal["status"] == "pending" and proposal["transport"] == "mcp"
    assert proposal["after"]["title"] == "Moved by the agent"
    assert api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json() == event
    assert dry.structured_content is not None
    assert dry.structured_content["awaitsApproval"] is True
    assert dry.structured_content["dryRun"] is True

    done = factory.db.call(
        approve, user_id=owner.id, proposal_id=proposal["id"], now=utcnow(), transport="settings"
    )
    assert done["status"] == "approved"
    shown = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
    assert shown["title"] == "Moved by the agent"
