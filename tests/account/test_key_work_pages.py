"""Undoing a key's work from its page (``account.key_work_pages``): the POST answers at once
with the job's page, which shows its progress and then its result; ``/healthz`` answers while
the job runs; a job cut by a kill is finished by the next server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from calendar_service.governance import undo_jobs
from calendar_service.platform.db import Database
from tests.account.conftest import Settings, csrf_from, sign_in, text_of
from tests.support import SERVER_START, Factory, changes_of_key, free_port, serve_env, wait_for


def _begin(settings: Settings, key_id: str) -> str:
    """Post *Revoke and undo* on the key's page; the job's page it sends to."""
    confirm = settings.get(f"/keys/{key_id}/undo?since=all")
    since = re.search(r'name="since" value="([^"]+)"', confirm.text)
    assert since is not None
    answer = settings.post(f"/keys/{key_id}/undo", {"since": since.group(1), "revoke": "yes"})
    assert answer.status_code == 303, answer.text
    return answer.headers["location"]


def _job(db: Database, location: str) -> dict[str, object]:
    return db.call(undo_jobs.undo_job, user_id=None, job_id=location.rsplit("/", 1)[1])


def test_healthz_answers_throughout_a_job_of_thousands_of_changes_undone_in_batches(
    settings: Settings, factory: Factory
) -> None:
    key_id, _ = factory.key(settings.owner, name="Busy agent")
    changes_of_key(factory.db, settings.owner, key_id, 2000)
    location = _begin(settings, key_id)
    running = settings.client.get(location)
    assert running.status_code == 200
    seen: list[int] = []  # the job's progress read after each answer of /healthz
    while True:
        health = settings.client.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        job = _job(factory.db, location)
        seen.append(int(job["done"]))  # type: ignore[call-overload]
        if job["state"] == "done":
            break
    # Done in many short transactions, /healthz answered between them (its latency is
    # measured in bench/undo.py, not asserted here).
    between = {n for n in seen if 0 < n < 2000}
    assert len(between) >= 2, seen
    page = settings.client.get(location)
    assert "2000 changes undone" in text_of(page.text) and "The key is revoked" in page.text
    assert 'http-equiv="refresh"' not in page.text
    assert "The first 200 of 2000" in text_of(page.text)


def test_the_jobs_page_reloads_itself_while_it_runs_and_is_not_another_owners(
    settings: Settings, factory: Factory
) -> None:
    key_id, _ = factory.key(settings.owner, name="Slow agent")
    changes_of_key(factory.db, settings.owner, key_id, 400)
    location = _begin(settings, key_id)
    page = settings.client.get(location)
    if _job(factory.db, location)["state"] == "running":
        assert 'http-equiv="refresh"' in page.text and "<progress" in page.text
    stranger = factory.owner()
    other_key, _ = factory.key(stranger)
    job_id = location.rsplit("/", 1)[1]
    assert settings.get(f"/keys/{other_key}/undo/{job_id}").status_code == 404
    assert settings.get(f"/keys/{key_id}/undo/undo_nope").status_code == 404
    wait_for(lambda: _job(factory.db, location)["state"] == "done", timeout=300, interval=0.2)


@contextmanager
def _serve(database_url: str, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``calendar-service serve`` on ``port``; killed (SIGKILL) at the end if still alive."""
    env = {**serve_env(database_url), "CALENDAR_BASE_URL": f"http://127.0.0.1:{port}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "calendar_service.cli", "serve", "--port", str(port),
         "--no-webhooks", "--log-level", "warning"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def up() -> bool:
        assert proc.poll() is None, "serve ended"
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=SERVER_START, interval=0.1, what="serve to listen")
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_a_job_cut_by_a_kill_is_finished_by_the_next_server_on_the_same_database(
    database_url: str, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner, name="Killed midway")
    changes_of_key(factory.db, owner, key_id, 3000)
    port = free_port()
    with _serve(database_url, port) as first:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        assert sign_in(client, owner.email, owner.password).status_code == 303
        session = Settings(client, owner, csrf_from(client.get("/settings/keys").text))
        location = _begin(session, key_id)
        wait_for(lambda: int(_job(factory.db, location)["done"]) > 0, timeout=300,  # type: ignore[call-overload]
                 interval=0.05)  # fmt: skip
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        client.close()
    cut = _job(factory.db, location)
    assert cut["state"] == "running" and 0 < int(cut["done"]) < 3000  # type: ignore[call-overload]
    with _serve(database_url, free_port()):
        wait_for(lambda: _job(factory.db, location)["state"] == "done", timeout=300,
                 interval=0.2, what="the next server to finish the job")  # fmt: skip
    done = _job(factory.db, location)
    assert (done["undone"], done["refused"]) == (3000, 0)
