"""Connecting the official MCP client to the test server, with an API key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from tests.support import Factory, bearer

MODES = ("auto", "legacy")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"},
    },
}
JSON_RPC_HEADERS = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def connect(server_url: str, secret: str, *, mode: str = "auto") -> AsyncIterator[Client]:
    """``mcp.Client`` over streamable HTTP at ``/mcp``, sending ``Authorization: Bearer``."""
    async with (
        httpx2.AsyncClient(headers=bearer(secret), timeout=30) as http,
        Client(streamable_http_client(f"{server_url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def structured(result: CallToolResult) -> dict[str, Any]:
    """The structured result, checked to be the same JSON as the text content; a write's
    without its ``changeId`` (checked to name a change, or none), so that it compares with
    what a read or REST answers (tests/mcp_tools/test_changes.py checks the ids)."""
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert json.loads(text_of(result)) == result.structured_content
    content = dict(result.structured_content)
    change_id = content.pop("changeId", None)
    assert change_id is None or change_id.startswith("chg_"), change_id
    return content


def writer_and_reader(factory: Factory) -> tuple[str, str]:
    """The secrets of a new owner's two keys: one that writes, one that only reads."""
    owner = factory.owner()
    return factory.key(owner)[1], factory.key(owner, permission="read")[1]
