"""Bounded load: wrk where installed, else a bundled asyncio HTTP/1.1 keep-alive generator.

A load run stops by itself after ``duration`` seconds or ``max_requests`` responses, whichever
comes first. Both generators send the same requests: list with a random one-week window (about
50 events), create one one-hour event at a random time, or (ours only) find 30 free minutes in
working hours in a random one-week window (``freetime``), with a Bearer key.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.seed import EPOCH, WEEKS

WINDOW = timedelta(days=7)
STEPS = (WEEKS - 1) * 7 * 96  # quarter hours in which a one-week window can start


@dataclass(frozen=True)
class Workload:
    """What to send to one server: a list or a create, in that server's dialect."""

    kind: str  # "list" | "create" | "freetime"
    method: str
    path: str  # list: with two %s for the window; create: the collection
    body: str | None  # create: a JSON template with %d, %s, %s; freetime: with %s, %s
    token: str
    span: int = 3600  # seconds from the body's start to its end (create: an hour)
    window: int = int(WINDOW.total_seconds())  # seconds from a list's timeMin to its timeMax
    steps: int = STEPS  # quarter hours in which the window can start

    @classmethod
    def search(cls, token: str, query: str, *, days: int = 365) -> Workload:
        """Ours only: the list with ``q`` (words joined by ``+``) over a random ``days``-day
        window within the events' span."""
        path = f"{_OURS.events}?q={'+'.join(query.split())}&{_OURS.window}"
        steps = max(0, (WEEKS * 7 - days) * 96)
        return cls("search", "GET", path, None, token, window=days * 86400, steps=steps)

    @classmethod
    def ours(cls, kind: str, token: str) -> Workload:
        return cls._in(_OURS, kind, token)

    @classmethod
    def minimum(cls, kind: str, token: str) -> Workload:
        return cls._in(_MINIMUM, kind, token)

    @classmethod
    def _in(cls, dialect: _Dialect, kind: str, token: str) -> Workload:
        if kind == "freetime":  # ours only: findFreeTime over a one-week window
            return cls(kind, "POST", FREE_TIME, FREE_TIME_BODY, token, int(WINDOW.total_seconds()))
        if kind == "list":
            return cls(kind, "GET", f"{dialect.events}?{dialect.window}", None, token)
        return cls(kind, "POST", dialect.events, dialect.body, token)


@dataclass(frozen=True)
class _Dialect:
    """How one server spells the two requests."""

    events: str  # the events collection
    window: str  # the list query, with two %s for the window
    body: str  # the create body, a JSON template with %d, %s, %s


_OURS = _Dialect(
    "/api/v1/calendar/events",
    "timeMin=%s&timeMax=%s",
    '{"title":"Bench %d","startsAt":"%s","endsAt":"%s"}',
)
FREE_TIME = "/api/v1/calendar/freeTime"
FREE_TIME_BODY = (
    '{"timeMin":"%s","timeMax":"%s","durationMinutes":30,'
    '"workingHours":{"start":"09:00","end":"17:00"},"limit":10}'
)
_MINIMUM = _Dialect(
    "/v1/calendars/1/events",
    "start=%s&end=%s",
    '{"title":"Bench %d","starts_at":"%s","ends_at":"%s"}',
)


@dataclass
class LoadResult:
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: int  # non-2xx responses plus socket errors and time-outs
    tool: str


def have_wrk() -> bool:
    return shutil.which("wrk") is not None


def run(
    url: str,
    work: Workload,
    *,
    duration: float,
    max_requests: int,
    connections: int = 32,
    threads: int = 2,
    tool: str = "auto",
) -> LoadResult:
    if tool == "wrk" or (tool == "auto" and have_wrk()):
        return _run_wrk(url, work, duration, max_requests, connections, threads)
    coro = _run_python(url, work, duration, max_requests, connections)
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


# ---------------------------------------------------------------------------------------------
# wrk

_LUA = r"""
local method, path, body_tpl, token = %(method)s, %(path)s, %(body)s, %(token)s
local span, numbered = %(span)d, %(numbered)d
local epoch, steps, window = %(epoch)d, %(steps)d, %(window)d
local max_per_thread = %(max_per_thread)d
local threads = {}
local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_usec; } bench_timeval;
  int gettimeofday(bench_timeval *tv, void *tz);
]]
local tv = ffi.new("bench_timeval")
local function now_us()
  ffi.C.gettimeofday(tv, nil)
  return tonumber(tv.tv_sec) * 1000000 + tonumber(tv.tv_usec)
end

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(tid * 7919 + os.time())
  seen, n, t_start, t_stop = 0, 0, now_us(), 0
  wrk.headers["Authorization"] = "Bearer " .. token
  if body_tpl ~= "" then wrk.headers["Content-Type"] = "application/json" end
end

local function iso(t) return os.date("!%%Y-%%m-%%dT%%H:%%M:%%SZ", t) end

function request()
  local s = epoch + math.random(0, steps) * 900
  n = n + 1
  if body_tpl == "" then
    return wrk.format(method, string.format(path, iso(s), iso(s + window)))
  end
  if numbered == 0 then
    return wrk.format(method, path, nil, string.format(body_tpl, iso(s), iso(s + span)))
  end
  return wrk.format(method, path, nil, string.format(body_tpl, n, iso(s), iso(s + span)))
end

function response(status, headers, body)
  seen = seen + 1
  if seen == max_per_thread then
    t_stop = now_us()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  -- When every thread stopped at its request bound, the run lasted until the last one did.
  local first, last, duration = nil, 0, summary.duration
  for _, t in ipairs(threads) do
    local a, b = t:get("t_start"), t:get("t_stop")
    if b == 0 then last = nil break end
    if first == nil or a < first then first = a end
    if b > last then last = b end
  end
  if last ~= nil and first ~= nil then duration = last - first end
  io.write("BENCH_JSON ", string.format(
    '{"requests":%%d,"duration_us":%%d,"p50":%%d,"p90":%%d,"p99":%%d,"max":%%d,"errors":%%d}',
    summary.requests, duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.status + e.timeout), "\n")
end
"""


def _lua_str(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Lua string literal here


def _run_wrk(
    url: str, work: Workload, duration: float, max_requests: int, connections: int, threads: int
) -> LoadResult:
    script = _LUA % {
        "method": _lua_str(work.method),
        "path": _lua_str(work.path),
        "body": _lua_str(work.body or ""),
        "token": _lua_str(work.token),
        "span": work.span,
        "numbered": int(_numbered(work)),
        "epoch": int(EPOCH.timestamp()),
        "steps": work.steps,
        "window": work.window,
        "max_per_thread": max(1, math.ceil(max_requests / threads)),
    }
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script)
        script_path = fh.name
    try:
        out = subprocess.run(
            [
                "wrk",
                f"-t{threads}",
                f"-c{connections}",
                f"-d{max(1, math.ceil(duration))}s",
                "--timeout",
                "10s",
                "-s",
                script_path,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=duration + 60,
            check=True,
        ).stdout
    finally:
        Path(script_path).unlink(missing_ok=True)
    line = next(x for x in out.splitlines() if x.startswith("BENCH_JSON "))
    data = json.loads(line.split(" ", 1)[1])
    seconds = data["duration_us"] / 1e6
    return LoadResult(
        requests=data["requests"],
        seconds=round(seconds, 3),
        rps=round(data["requests"] / seconds, 1) if seconds else 0.0,
        p50_ms=data["p50"] / 1000,
        p90_ms=data["p90"] / 1000,
        p99_ms=data["p99"] / 1000,
        max_ms=data["max"] / 1000,
        errors=data["errors"],
        tool="wrk",
    )


# ---------------------------------------------------------------------------------------------
# The bundled generator: raw asyncio streams, HTTP/1.1 keep-alive, one request in flight per
# connection (what wrk does).


def _numbered(work: Workload) -> bool:
    """Whether the body template starts with a request number (``%d``): create's does."""
    return work.body is not None and "%d" in work.body


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _request_bytes(work: Workload, host: str, rnd: random.Random, n: int) -> bytes:
    start = EPOCH + timedelta(seconds=rnd.randint(0, work.steps) * 900)
    head = f"Host: {host}\r\nAuthorization: Bearer {work.token}\r\n"
    if work.body is None:
        path = work.path % (_iso(start), _iso(start + timedelta(seconds=work.window)))
        return f"{work.method} {path} HTTP/1.1\r\n{head}\r\n".encode()
    end = _iso(start + timedelta(seconds=work.span))
    values = (n, _iso(start), end) if _numbered(work) else (_iso(start), end)
    body = (work.body % values).encode()
    return (
        f"{work.method} {work.path} HTTP/1.1\r\n{head}Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _run_python(
    url: str, work: Workload, duration: float, max_requests: int, connections: int
) -> LoadResult:
    host_port = url.split("://", 1)[1].rstrip("/")
    host, port = host_port.rsplit(":", 1)
    latencies: list[float] = []
    errors = 0
    issued = 0
    deadline = time.perf_counter() + duration

    async def one_connection(seed: int) -> None:
        nonlocal errors, issued
        rnd = random.Random(seed)
        reader = writer = None
        while time.perf_counter() < deadline and issued < max_requests:
            issued += 1
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, int(port))
                assert reader is not None
                t0 = time.perf_counter()
                writer.write(_request_bytes(work, host_port, rnd, issued))
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
                status = int(head[9:12])
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                latencies.append(time.perf_counter() - t0)
                if status >= 400:
                    errors += 1
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                errors += 1
                if writer is not None:
                    writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(one_connection(i) for i in range(connections)))
    seconds = time.perf_counter() - t0
    latencies.sort()

    def pct(p: float) -> float:
        if not latencies:
            return 0.0
        return round(latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] * 1e3, 2)

    return LoadResult(
        requests=len(latencies),
        seconds=round(seconds, 3),
        rps=round(len(latencies) / seconds, 1) if seconds else 0.0,
        p50_ms=pct(50),
        p90_ms=pct(90),
        p99_ms=pct(99),
        max_ms=round(latencies[-1] * 1e3, 2) if latencies else 0.0,
        errors=errors,
        tool="python",
    )


def result_dict(result: LoadResult) -> dict[str, object]:
    return asdict(result)


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
