"""What both example loops share: the calendar's MCP tools over the official client.

Set CALENDAR_MCP_URL (default http://127.0.0.1:8000/mcp) and CALENDAR_API_KEY (a key from
`calendar-service keys create ...`; the tools listed are the ones that key may call).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def calendar() -> AsyncIterator[Client]:
    url = os.environ.get("CALENDAR_MCP_URL", "http://127.0.0.1:8000/mcp")
    headers = {"Authorization": f"Bearer {os.environ['CALENDAR_API_KEY']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """A tool's answer as the model reads it: its text (the JSON, or the refusal), and
    whether it is a refusal (the model reads the refusal and retries as it says)."""
    result = await client.call_tool(name, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return text, bool(result.is_error)
