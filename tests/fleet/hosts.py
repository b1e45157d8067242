"""Real hosts for the fleet test: network namespaces on a bridge, and a PostgreSQL of their own.

``Fleet`` makes a "switch" namespace holding a bridge and one namespace per host, each joined to
the bridge by a veth pair created inside the namespaces (nothing is added to the machine's own
network), with an address on ``SUBNET``. ``Fleet.spawn`` runs a command on a host in a process
group of its own (so a host can be killed whole); ``Fleet.close`` kills every process started,
deletes the namespaces (and with them their veths) and the temporary folders, whatever happened.

``start_postgres`` runs ``initdb`` and ``postgres`` from ``/usr/lib/postgresql/*/bin`` as the
``postgres`` system user (PostgreSQL refuses to run as root) in a temporary folder, listening on
the database host's address only: the machine's own PostgreSQL is never touched.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUBNET = "10.250.0"
PG_PORT = 5432


def missing_requirements() -> str | None:
    """Why this machine cannot run the fleet test, or None when it can."""
    if os.geteuid() != 0:
        return "the fleet test needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "the fleet test needs iproute2's ip"
    if shutil.which("runuser") is None:
        return "the fleet test needs runuser (util-linux)"
    if postgres_bin() is None:
        return "the fleet test needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "the fleet test needs the postgres system user"
    return None


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    name: str
    netns: str
    address: str


@dataclass
class Fleet:
    """Hosts in network namespaces (see the module docstring); use as a context manager."""

    prefix: str = field(default_factory=lambda: f"cf{os.getpid()}")
    hosts: dict[str, Host] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)

    def __enter__(self) -> Fleet:
        switch = self._netns("sw")
        _run("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", switch, "link", "set", "br0", "up")
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _netns(self, name: str) -> str:
        netns = f"{self.prefix}{name}"
        _run("ip", "netns", "add", netns)
        self.namespaces.append(netns)
        return netns

    def add_host(self, name: str, last_octet: int) -> Host:
        netns = self._netns(name)
        switch, port = self.namespaces[0], f"p{len(self.hosts)}"
        address = f"{SUBNET}.{last_octet}"
        _run(
            "ip", "-n", switch, "link", "add", port, "type", "veth", "peer", "eth0", "netns", netns
        )
        _run("ip", "-n", switch, "link", "set", port, "master", "br0", "up")
        _run("ip", "-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
        _run("ip", "-n", netns, "link", "set", "eth0", "up")
        _run("ip", "-n", netns, "link", "set", "lo", "up")
        host = self.hosts[name] = Host(name, netns, address)
        return host

    def folder(self) -> Path:
        path = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
        self.folders.append(path)
        return path

    def command(self, host: Host, argv: Sequence[str], *, user: str | None = None) -> list[str]:
        as_user = ["runuser", "-u", user, "--"] if user else []
        return ["ip", "netns", "exec", host.netns, *as_user, *argv]

    def spawn(
        self,
        host: Host,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = subprocess.DEVNULL,
        log: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """``argv`` on ``host``, in a new session (its own process group), logging to ``log``
        (standard error, and standard output unless it is a pipe)."""
        with contextlib.ExitStack() as stack:
            out: Any = None if log is None else stack.enter_context(log.open("ab"))
            proc = subprocess.Popen(
                self.command(host, argv, user=user),
                env=env,
                stdin=stdin,
                stdout=stdout if out is None or stdout == subprocess.PIPE else out,
                stderr=out,
                start_new_session=True,
            )
        self.processes.append(proc)
        return proc

    def run(
        self,
        host: Host,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> str:
        """``argv`` on ``host`` to its end; its standard output (fails on a non-zero exit)."""
        done = subprocess.run(
            self.command(host, argv, user=user), env=env, capture_output=True, timeout=60
        )
        if done.returncode != 0:
            raise AssertionError(f"{argv[:3]} failed: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode()

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the process group ``proc`` leads (a whole host's service)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)

    def close(self) -> None:
        for proc in reversed(self.processes):
            self.kill(proc)
        for netns in reversed(self.namespaces):  # their veths go with them
            with contextlib.suppress(subprocess.SubprocessError):
                _run("ip", "netns", "del", netns)
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)


def start_postgres(fleet: Fleet, host: Host) -> str:
    """A PostgreSQL instance of its own on ``host`` with a database ``calendar``; its URL."""
    binaries = postgres_bin()
    assert binaries is not None
    folder = fleet.folder()
    postgres = pwd.getpwnam("postgres")
    os.chown(folder, postgres.pw_uid, postgres.pw_gid)
    data = folder / "data"
    fleet.run(
        host,
        [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
        user="postgres",
    )
    with (data / "pg_hba.conf").open("a") as hba:
        hba.write(f"host all all {SUBNET}.0/24 trust\n")
    server = [
        str(binaries / "postgres"),
        "-D",
        str(data),
        "-c",
        f"listen_addresses={host.address}",
        "-c",
        f"port={PG_PORT}",
        "-c",
        f"unix_socket_directories={folder}",
        "-c",
        "max_connections=300",
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
    ]
    fleet.spawn(host, server, user="postgres", log=folder / "postgres.log")
    ready = [str(binaries / "pg_isready"), "-q", "-h", str(folder), "-p", str(PG_PORT)]
    from tests.support import SERVER_START, wait_for

    def up() -> bool:
        return (
            subprocess.run(fleet.command(host, ready, user="postgres"), timeout=10).returncode == 0
        )

    wait_for(up, timeout=SERVER_START, interval=0.1, what="PostgreSQL to accept connections")
    create = [str(binaries / "createdb"), "-h", str(folder), "-p", str(PG_PORT), "calendar"]
    fleet.run(host, create, user="postgres")
    return f"postgresql+psycopg://postgres@{host.address}:{PG_PORT}/calendar"
