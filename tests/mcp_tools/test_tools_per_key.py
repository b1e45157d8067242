"""Tools per key: ``tools/list`` shows a key only the tools it may call (remote MCP with an API
key or an OAuth access token, and stdio), and a hidden tool called anyway is refused as
before."""

from __future__ import annotations

import httpx
import pytest
from mcp import Client

from calendar_service.platform.config import Config
from mcp_tools.server import TOOLS
from tests.mcp_tools.clients import MODES, connect, text_of
from tests.mcp_tools.oauth_flow import Flow
from tests.mcp_tools.test_stdio import _stdio
from tests.rest.conftest import event_body
from tests.support import Factory, RunningServer

AVAILABILITY = {"queryFreeBusy", "findFreeTime"}
READS = {
    "listCalendarEvents",
    "searchCalendarEvents",
    "getCalendarEvent",
    "listChanges",
    *AVAILABILITY,
}
EVERY_TOOL = {spec.op.name for spec in TOOLS}
# What each permission is shown, as each tool's ``needs`` declares it.
SHOWN = {
    "write": EVERY_TOOL,
    "read": {spec.op.name for spec in TOOLS if spec.needs != "write"},
    "freebusy": {spec.op.name for spec in TOOLS if spec.needs == "freebusy"},
}


def test_each_permission_is_shown_what_the_tools_declare_it_may_call() -> None:
    # The ten tools of this wave's start, as a person would list them (the rule above is the
    # tools' own declaration; this pins it to what the docs say).
    assert SHOWN["read"] >= READS and not SHOWN["read"] & {"createCalendarEvent", "undoChange"}
    assert SHOWN["freebusy"] == AVAILABILITY
    assert {"createCalendarEvent", "updateCalendarEvent", "deleteCalendarEvent"} <= SHOWN["write"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("permission", ["write", "read", "freebusy"])
async def test_remote_tools_list_shows_only_what_the_keys_permission_may_call(
    server: RunningServer, factory: Factory, permission: str, mode: str
) -> None:
    _, secret = factory.key(factory.owner(), permission=permission)
    async with connect(server.url, secret, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == SHOWN[permission]


async def test_a_hidden_tool_called_anyway_is_refused_naming_the_missing_permission(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    _, reader = factory.key(owner, permission="read")
    _, freebusy = factory.key(owner, permission="freebusy")
    async with connect(server.url, reader) as client:
        written = await client.call_tool("createCalendarEvent", event_body())
    async with connect(server.url, freebusy) as client:
        listed = await client.call_tool("listCalendarEvents", {})
    assert written.is_error and "Missing permission: calendar:write." in text_of(written)
    assert listed.is_error and "Missing permission: calendar:read." in text_of(listed)


@pytest.mark.parametrize("permission", ["read", "write"])
async def test_an_oauth_access_token_is_shown_the_tools_its_grant_permits(
    server: RunningServer, factory: Factory, permission: str
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        flow = Flow(server, factory.owner(), http)
        flow.register()
        flow.sign_in()
        answer = flow.exchange(flow.code(permission=permission))
        assert answer.status_code == 200, answer.text
        token = answer.json()["access_token"]
    async with connect(server.url, token) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == SHOWN[permission]


@pytest.mark.parametrize("permission", ["read", "freebusy"])
async def test_the_stdio_server_shows_only_what_its_keys_permission_may_call(
    config: Config, factory: Factory, permission: str
) -> None:
    _, secret = factory.key(factory.owner(), permission=permission)
    async with Client(_stdio(config, secret)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("deleteCalendarEvent", {"eventId": "ev_1"})
    assert names == SHOWN[permission]
    assert refused.is_error and "insufficient_scope" in text_of(refused)
