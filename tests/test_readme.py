"""The README's first command gives a newcomer a running service and a key, and the curl
example in examples/ returns their events."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

from tests.support import Factory, RunningServer, bind_free_port, wait_for

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_opens_with_the_run_and_test_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make run", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_make_run_serves_a_demo_key_that_the_curl_example_uses(tmp_path: Path) -> None:
    sock = bind_free_port()
    port = sock.getsockname()[1]
    sock.close()
    base = f"http://127.0.0.1:{port}"
    env = {  # no CALENDAR_BASE_URL: the printout and links follow PORT
        **{k: v for k, v in os.environ.items() if k != "CALENDAR_BASE_URL"},
        "CALENDAR_DATABASE_URL": f"sqlite:///{tmp_path / 'calendar.db'}",
    }
    log = (tmp_path / "run.log").open("w+")
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def ready() -> bool:
            try:
                return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                assert proc.poll() is None, Path(log.name).read_text()
                return False

        wait_for(ready, timeout=120, interval=0.2, what="make run to serve")
        output = Path(log.name).read_text()
        match = re.search(r"demo key \(read and write, 30 days\): (calsk_\w+)", output)
        assert match, output
        assert f"settings at {base}/settings" in output
        example = subprocess.run(  # in another terminal, as the README says: PORT=… as well
            [str(ROOT / "examples" / "curl.sh")],
            env={**env, "PORT": str(port), "CALENDAR_API_KEY": match.group(1)},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert example.returncode == 0, example.stderr
        assert example.stdout.count("Planning (from examples/curl.sh)") == 2
        assert '"calendars":[{' in example.stdout
        assert '"slots":[' in example.stdout
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def _curl_example(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "examples" / "curl.sh")],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_curl_example_follows_port_or_calendar_base_url(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    env = {k: v for k, v in os.environ.items() if k not in {"CALENDAR_BASE_URL", "HOST", "PORT"}}
    env["CALENDAR_API_KEY"] = secret
    for where in ({"PORT": str(server.port)}, {"HOST": "127.0.0.1", "PORT": str(server.port)}):
        example = _curl_example({**env, **where})  # as after `make run PORT=…`
        assert example.returncode == 0, (where, example.stderr)
        assert example.stdout.count("Planning (from examples/curl.sh)") == 2
    # CALENDAR_BASE_URL, the public address, goes before PORT.
    example = _curl_example({**env, "PORT": "1", "CALENDAR_BASE_URL": server.url + "/"})
    assert example.returncode == 0, example.stderr
    assert '"slots":[' in example.stdout


def test_the_python_client_example_creates_and_lists(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python_client.py")],
        env={**os.environ, "CALENDAR_BASE_URL": server.url, "CALENDAR_API_KEY": secret},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("created ev_")
    assert "Call with Ana (Личное)" in result.stdout


def test_the_readme_weekly_meeting_creates_a_series_that_lists_as_occurrences(
    server: RunningServer, factory: Factory
) -> None:
    readme = (ROOT / "README.md").read_text()
    bodies = [json.loads(b) for b in re.findall(r"-d '(\{.*?\})'", readme) if "recurrence" in b]
    assert len(bodies) == 1
    _, secret = factory.key(factory.owner())
    auth = {"Authorization": f"Bearer {secret}"}
    created = httpx.post(f"{server.url}/api/v1/calendar/events", json=bodies[0], headers=auth)
    assert created.status_code == 201, created.text
    assert created.json()["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO"]
    listed = httpx.get(
        f"{server.url}/api/v1/calendar/events",
        params={"timeMin": "2026-03-01T00:00:00Z", "timeMax": "2026-03-29T00:00:00Z"},
        headers=auth,
    ).json()["events"]
    monday_10 = datetime(2026, 3, 2, 10, tzinfo=timezone(timedelta(hours=1)))
    assert [datetime.fromisoformat(e["startsAt"]) for e in listed] == [
        monday_10 + timedelta(weeks=n) for n in range(4)
    ]
    assert {e["recurringEventId"] for e in listed} == {created.json()["id"]}


def test_the_test_command_installs_chromium_without_recommended_packages_as_the_readme_says() -> (
    None
):
    """Debian's chromium recommends packages (avahi-daemon, a newer systemd…) that have no
    place on a developer's machine: every command that installs it, run or suggested, leaves
    them out, and the README says what the test command installs system-wide."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    installs = []
    for name in tracked:
        path = ROOT / name
        if path.suffix in {".png", ".json"} or not path.is_file() or path == Path(__file__):
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if re.search(r"apt-get install\b.*\bchromium\b", line):
                installs.append((name, line.strip()))
    assert any(name == "scripts/test" for name, _ in installs)
    assert [i for i in installs if "--no-install-recommends" not in i[1]] == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Development", 1)[1]
    assert "system-wide" in section and "apt-get install -y --no-install-recommends" in section
    assert "node_modules" in section and ".venv" in section
