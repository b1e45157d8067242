"""createSchedulingLink over MCP, with the official client: the link it answers takes a booking
on the public API; a read key is refused; bad arguments are named."""

from __future__ import annotations

from datetime import UTC, timedelta

import httpx

from calendar_service.platform.timeutil import utcnow
from tests.mcp_tools.clients import connect, structured, text_of
from tests.support import Factory, RunningServer


async def test_an_agent_makes_a_link_that_a_guest_books(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    day = (utcnow() + timedelta(days=3)).astimezone(UTC).date().isoformat()
    async with connect(server.url, secret) as client:
        made = structured(
            await client.call_tool(
                "createSchedulingLink",
                {
                    "title": "Intro",
                    "durationMinutes": 45,
                    "timeMin": f"{day}T09:00:00Z",
                    "timeMax": f"{day}T12:00:00Z",
                    "uses": 2,
                    "guest": {"name": "Dana", "email": "dana@example.com"},
                },
            )
        )
        assert made["id"].startswith("link_") and made["usesLeft"] == 2
        bad = await client.call_tool(
            "createSchedulingLink",
            {"title": "x", "durationMinutes": 0, "timeMin": day, "timeMax": day, "uses": 0},
        )
        assert bad.is_error
        assert "durationMinutes" in text_of(bad) and "uses" in text_of(bad)
    token = made["url"].rsplit("/", 1)[1]
    with httpx.Client(base_url=server.url, timeout=30) as api:
        slots = api.get(f"/api/v1/book/{token}/slots").json()
        assert slots["durationMinutes"] == 45 and slots["title"] == "Intro"
        assert slots["slots"][0]["startsAt"] == f"{day}T09:00:00Z"
        booked = api.post(
            f"/api/v1/book/{token}",
            json={"startsAt": slots["slots"][0]["startsAt"], "name": "Dana", "email": "d@x.org"},
        )
        assert booked.status_code == 201, booked.text


async def test_a_read_key_may_not_make_links(server: RunningServer, factory: Factory) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    async with connect(server.url, secret) as client:
        refused = await client.call_tool(
            "createSchedulingLink",
            {"title": "x", "durationMinutes": 30, "timeMin": "2030-01-01", "timeMax": "2030-01-02"},
        )
    assert refused.is_error and text_of(refused).startswith("insufficient_scope")
