"""``python -m bench.rules``: what the owner's rules for agents cost, side by side in one run.

Two owners in one database (``--events`` events each, a meeting's worth a weekday), one with a
full rule set (working hours, buffer, meetings and minutes a day, focus, no-meeting days,
notice, days ahead, longest meeting), one with none; each with a write key. Our ASGI app in
this process serves, in alternating rounds, creates that keep every rule (so that the check
does all its work and the write is made) and ``findFreeTime`` over a week, for each owner.
Prints the CPU time per request and requests per second of CPU for each, and the ratios the
issue asks of them: create with rules at least 0.9 of create without, findFreeTime with rules
at least 0.8 of without (docs/performance.md, "The owner's rules").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import uvloop

from bench.inprocess import Request, _started, drive

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri")

RULES = {
    "workingHours": {d: [{"start": "08:00", "end": "18:00"}] for d in WEEKDAYS[:5]},
    "bufferMinutes": 10,
    "maxMeetingsPerDay": 8,
    "maxMeetingMinutesPerDay": 480,
    "focus": {"minutes": 60, "start": "13:00", "end": "17:00"},
    "noMeetingDays": ["sat", "sun"],
    "minNoticeMinutes": 60,
    "maxDaysAhead": 730,
    "maxDurationMinutes": 120,
}  # fmt: skip
SLOTS = ("08:00", "09:00", "10:00", "11:00", "15:00", "16:30")  # 30 minutes each: all pass


def _weekdays(first: date, count: int) -> list[date]:
    days, day = [], first
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day)
        day += timedelta(days=1)
    return days


def _creates(days: list[date], slot: int) -> list[Request]:
    """One 30-minute create on each of ``days`` at ``SLOTS[slot]`` (Berlin time)."""
    out = []
    for day in days:
        start = f"{day.isoformat()}T{SLOTS[slot]}:00"
        hours, minutes = int(SLOTS[slot][:2]), int(SLOTS[slot][3:]) + 30
        end = f"{day.isoformat()}T{hours + minutes // 60:02d}:{minutes % 60:02d}:00"
        body = {"title": "Bench", "startsAt": start, "endsAt": end}
        out.append(("POST", "/api/v1/calendar/events", b"", json.dumps(body).encode()))
    return out


def _free_times(days: list[date], n: int) -> list[Request]:
    out = []
    for i in range(n):
        day = days[(i * 5) % len(days)]
        body = {
            "timeMin": day.isoformat(),
            "timeMax": (day + timedelta(days=7)).isoformat(),
            "durationMinutes": 30,
        }
        out.append(("POST", "/api/v1/calendar/freeTime", b"", json.dumps(body).encode()))
    return out


def owners() -> dict[str, str]:
    """The two owners (Berlin) in the database ``CALENDAR_DATABASE_URL`` names, migrated
    first: ``with`` the full rule set and ``without`` any; each one's all-calendars write key."""
    from calendar_service.access import keys
    from calendar_service.calendar.calendars import create_owner
    from calendar_service.calendar.rules import set_rules
    from calendar_service.platform.config import Config
    from calendar_service.platform.db import Database
    from calendar_service.platform.migrate import upgrade
    from calendar_service.platform.timeutil import utcnow

    db = Database(Config.from_env())
    upgrade(db.engine)
    secrets = {}
    for name, rules in (("with", RULES), ("without", {})):
        owner = db.call(
            create_owner,
            email=f"{name}-rules@example.com",
            password=None,
            now=utcnow(),
            time_zone="Europe/Berlin",
        )
        db.call(set_rules, user_id=owner["id"], value=rules, now=utcnow())
        _, secrets[name] = db.call(
            keys.create_key,
            user_id=owner["id"],
            name="bench",
            permission=keys.WRITE,
            expires_at=utcnow() + timedelta(days=1),
            calendar_id=None,
            now=utcnow(),
        )
    db.close()
    return secrets


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.rules", description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=300, help="creates per owner and round")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--free-time", type=int, default=100, help="findFreeTime calls per round")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(
            CALENDAR_DATABASE_URL=f"sqlite:///{Path(tmp) / 'rules.db'}",
            CALENDAR_RUN_WEBHOOKS="0",
            CALENDAR_RATE_LIMIT="1000000000/minute",
        )
        from calendar_service.cli.asgi_app import app_from_env

        secrets = owners()
        laps = args.rounds // len(SLOTS) + 1  # each lap of the slots on days of its own
        days = _weekdays(date.today() + timedelta(days=2), args.requests * laps)
        app = app_from_env()
        cpu: dict[tuple[str, str], list[float]] = {}
        statuses: Counter[int] = Counter()
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            lifespan = runner.run(_started(app))
            for round_ in range(args.rounds + 1):  # the first round warms up
                work = {
                    "create": _creates(
                        days[(round_ // len(SLOTS)) * args.requests :][: args.requests],
                        round_ % len(SLOTS),
                    ),
                    "findFreeTime": _free_times(days[: args.requests], args.free_time),
                }
                for kind, batch in work.items():
                    for name in ("with", "without"):
                        start = time.process_time()
                        statuses += runner.run(drive(app, batch, secrets[name]))
                        if round_:
                            spent = (time.process_time() - start) / len(batch)
                            cpu.setdefault((kind, name), []).append(spent)
            lifespan.cancel()
    bad = {s: c for s, c in statuses.items() if s >= 300}
    if bad:
        raise SystemExit(f"unexpected statuses {bad}")
    for kind, floor in (("create", 0.9), ("findFreeTime", 0.8)):
        with_rules = statistics.median(cpu[(kind, "with")])
        without = statistics.median(cpu[(kind, "without")])
        ratio = without / with_rules
        print(
            f"{kind:13s} with rules {1e6 * with_rules:7.0f} us ({1 / with_rules:6.0f} req/s of "
            f"CPU), without {1e6 * without:7.0f} us ({1 / without:6.0f} req/s): "
            f"{ratio:.2f} x (at least {floor})"
        )


if __name__ == "__main__":
    main()
