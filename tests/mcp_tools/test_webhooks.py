"""A change made over MCP queues the same webhook as the same change made over REST."""

from __future__ import annotations

import json

import httpx
from sqlalchemy import Connection, insert, select

from calendar_service.journal.webhook_outbox import deliveries_t, endpoints_t
from calendar_service.platform.db import Database
from calendar_service.platform.ids import new_id
from calendar_service.platform.timeutil import utcnow
from tests.mcp_tools.clients import connect, structured
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, Owner, RunningServer, bearer


def _set_webhook(db: Database, owner: Owner) -> None:
    now = utcnow()

    def work(conn: Connection) -> None:
        conn.execute(
            insert(endpoints_t).values(
                id=new_id("whe"),
                user_id=owner.id,
                # Never reached: the test reads the outbox rows, not deliveries.
                url="https://receiver.invalid/hook",
                secret="whsec_" + "A" * 43 + "=",
                status="disabled",
                created_at=now,
                updated_at=now,
            )
        )

    db.call(work)


def _queued(db: Database, owner: Owner) -> list[dict[str, object]]:
    rows = db.call(
        lambda conn: conn.execute(
            select(deliveries_t.c.event_type, deliveries_t.c.payload)
            .where(deliveries_t.c.user_id == owner.id)
            .order_by(deliveries_t.c.created_at)
        ).all()
    )
    return [json.loads(row.payload) for row in rows]


async def test_an_event_created_over_mcp_queues_the_same_webhook_as_over_rest(
    server: RunningServer, api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    _set_webhook(db, owner)
    _, secret = factory.key(owner)
    async with connect(server.url, secret) as client:
        over_mcp = structured(await client.call_tool("createCalendarEvent", event_body()))
    over_rest = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()

    queued = _queued(db, owner)
    assert [p["type"] for p in queued] == ["calendar.event.created"] * 2
    assert [p["data"]["event"] for p in queued] == [over_mcp, over_rest]
    assert queued[0].keys() == queued[1].keys() == {"id", "type", "createdAt", "data"}
