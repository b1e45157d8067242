"""The client configurations in examples/mcp/ point at what the service serves."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from calendar_service.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mcp"


def test_the_remote_example_sends_the_key_to_the_mcp_endpoint(api: httpx.Client) -> None:
    server = json.loads((EXAMPLES / "remote.json").read_text())["mcpServers"]["calendar"]
    assert server["url"] == "http://127.0.0.1:8000/mcp"  # make run's address
    assert server["headers"]["Authorization"].startswith("Bearer calsk_")
    # The placeholder key is refused the way a real bad key is.
    response = api.post("/mcp", json={}, headers=server["headers"])
    assert response.status_code == 401


def test_the_stdio_example_runs_the_mcp_command_with_a_key() -> None:
    server = json.loads((EXAMPLES / "stdio.json").read_text())["mcpServers"]["calendar"]
    assert (server["command"], server["args"]) == ("calendar-service", ["mcp"])
    assert {"CALENDAR_API_KEY", "CALENDAR_DATABASE_URL"} <= set(server["env"])
    assert "mcp" in {
        command.name or command.callback.__name__ for command in app.registered_commands
    }
