"""The two servers under test, as subprocesses on 127.0.0.1: our ``calendar-service serve`` and
the reference minimum (``bench/reference/minimal_app.py`` under uvicorn, uvloop, httptools)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"


REFERENCE = ROOT / "bench" / "reference"
"""The hand-written minimum (``minimal_app.py``) and its seeder (``seed_db.py``): a copy kept in
the repository (its README says where it came from)."""


@contextlib.contextmanager
def postgres_database(admin_url: str, prefix: str) -> Iterator[str]:
    """The URL of a new, empty database ``<prefix>_<8 hex>`` on the PostgreSQL server of
    ``admin_url``, dropped afterwards."""
    from sqlalchemy import create_engine, text

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{admin_url.rsplit('/', 1)[0]}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


def _bin(name: str) -> str:
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else (shutil.which(name) or name)


def _wait_ready(server: Server, probe: str, headers: dict[str, str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited with {server.proc.returncode}; see {server.log_path}"
            )
        try:
            req = urllib.request.Request(server.url + probe, headers=headers)
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status < 500:
                    return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"{server.name} did not start within {timeout}s ({last}); {server.log_path}")


@contextlib.contextmanager
def ours(
    database_url: str,
    *,
    log_dir: Path,
    workers: int = 1,
    name: str = "ours",
    env: dict[str, str] | None = None,
    factory: str | None = None,
    tree: Path | None = None,
    webhooks: bool = False,
) -> Iterator[Server]:
    """``calendar-service serve`` on a free port, with a budget the load cannot exhaust (the
    rate limiter still runs on every request); ``webhooks``: with its delivery and time
    triggers' jobs (else ``--no-webhooks``)."""
    port = free_port()
    log_path = log_dir / f"{name}-{port}.log"
    full_env = {
        **os.environ,
        "CALENDAR_DATABASE_URL": database_url,
        "CALENDAR_RATE_LIMIT": "1000000000/minute",
        "CALENDAR_BASE_URL": f"http://{HOST}:{port}",
        **(env or {}),
    }
    cmd = [
        _bin("calendar-service"),
        "serve",
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-webhooks",
        "--log-level",
        "warning",
    ]
    if webhooks:
        cmd.remove("--no-webhooks")
    if factory is not None:  # a variant of our app (bench/variants.py), same server options
        cmd = [*_uvicorn(port), factory, "--factory"]
    cwd = ROOT
    if tree is not None:  # our code from another checkout (before/after comparisons)
        cwd = tree.resolve()
        full_env["PYTHONPATH"] = str(cwd)
        cmd = [sys.executable, "-m", "calendar_service.cli", *cmd[1:]]
    with _running(name, port, cmd, full_env, log_path, cwd=cwd) as server:
        _wait_ready(server, "/healthz", {}, timeout=60)
        if workers > 1:  # every worker process must be up before the load starts
            time.sleep(1.0 + 0.5 * workers)
        yield server


@contextlib.contextmanager
def reference(db_path: Path, *, log_dir: Path, mode: str = "inline") -> Iterator[Server]:
    """The hand-written minimum, one uvicorn worker with uvloop and httptools, as measured."""
    port = free_port()
    log_path = log_dir / f"minimum-{port}.log"
    env = {
        **os.environ,
        "BENCH_DB": str(db_path),
        "BENCH_SYNC": "NORMAL",
        "BENCH_MODE": mode,
    }
    cmd = [*_uvicorn(port), "minimal_app:app", "--app-dir", str(REFERENCE)]
    from bench.seed import REFERENCE_TOKEN

    with _running("minimum", port, cmd, env, log_path) as server:
        probe = "/v1/calendars/1/events?start=2024-01-01T00:00:00Z&end=2024-01-02T00:00:00Z"
        _wait_ready(server, probe, {"Authorization": f"Bearer {REFERENCE_TOKEN}"}, timeout=60)
        yield server


def _uvicorn(port: int) -> list[str]:
    """uvicorn as the reference measured it (and as ``serve`` runs): one worker, uvloop,
    httptools, no access log; the same for the minimum and for variants of our app."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        "1",
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]


@contextlib.contextmanager
def _running(
    name: str, port: int, cmd: list[str], env: dict[str, str], log_path: Path, cwd: Path = ROOT
) -> Iterator[Server]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True
        )
        server = Server(name, port, proc, log_path)
        try:
            yield server
        finally:
            stop(proc)


def cpu_seconds(server: Server) -> float:
    """CPU time (user + system) used so far by the server's processes (its process group):
    per request, a figure that other load on the machine disturbs far less than req/s."""
    user, system = cpu_split(server)
    return user + system


def cpu_split(server: Server) -> tuple[float, float]:
    """``cpu_seconds`` as (user, system): what callgrind counts (user space) apart from the
    kernel's work for it (reads and writes of the database and its WAL, fsyncs)."""
    tick = os.sysconf("SC_CLK_TCK")
    user = system = 0
    for pid in _group(server):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user, system = user + int(fields[11]), system + int(fields[12])
    return user / tick, system / tick


def io_calls(server: Server) -> tuple[int, int]:
    """(read, write) system calls made so far by the server's processes (``/proc/PID/io``):
    per request, the pages read and written that no instruction count sees."""
    reads = writes = 0
    for pid in _group(server):
        try:
            text = Path(f"/proc/{pid}/io").read_text()
        except OSError:
            continue
        found = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        reads, writes = reads + int(found.get("syscr", 0)), writes + int(found.get("syscw", 0))
    return reads, writes


def _group(server: Server) -> list[str]:
    """The ids of the server's processes (its process group)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == server.proc.pid:  # fields[2] is the process group id
            found.append(stat.parent.name)
    return found


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT the server's process group (uvicorn's graceful stop), then insist."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
