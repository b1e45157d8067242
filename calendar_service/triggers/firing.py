"""Firing the time triggers that fell due: claimed once across every process and host, each
fanned out to the endpoints that asked for it as deliveries in the outbox."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, delete

from calendar_service.triggers.tables import FIRED, SKIPPED, plan_t

KEPT = timedelta(days=2)
"""How long fired and skipped rows are kept after they fell due (a re-plan within it keeps
them fired; none plans that far back)."""


def purge_fired(conn: Connection, *, now: datetime) -> int:
    """Forget the plan's rows fired or skipped more than ``KEPT`` ago."""
    done = conn.execute(
        delete(plan_t).where(plan_t.c.status.in_((FIRED, SKIPPED)), plan_t.c.due_at < now - KEPT)
    )
    return int(done.rowcount or 0)
