"""Fixtures for the settings pages: signed-in HTTP clients, and headless Chromium.

Browser tests use Debian's ``/usr/bin/chromium`` through Playwright (never a downloaded
browser). Every test that asks for the ``browser`` fixture is marked ``browser`` (so
``-m browser`` picks them); scripts/test runs them in both legs, SQLite and PostgreSQL. Without
Chromium they fail, unless the run opted out with
``CALENDAR_TEST_SKIP_BROWSER=1`` (scripts/test sets it, after a loud warning, when it cannot
install Chromium); under ``CI=true`` they fail either way.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

from calendar_service.access import owners as users
from tests.conftest import make_config
from tests.support import Factory, Owner, RunningServer, own_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_from(html: str) -> str:
    match = _TOKEN.search(html)
    assert match, "no CSRF token in the page"
    return match.group(1)


def text_of(html: str) -> str:
    """A page's text as a reader sees it: tags dropped, white space collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def sign_in(client: httpx.Client, email: str, password: str) -> httpx.Response:
    """Fetch the sign-in form (for its token and cookie) and post it; returns the answer."""
    form = client.get("/settings/sign-in")
    assert form.status_code == 200, form.text
    return post_sign_in(client, form, email, password)


def post_sign_in(
    client: httpx.Client, form: httpx.Response, email: str, password: str, **fields: str
) -> httpx.Response:
    """Post the sign-in ``form`` (a page that holds it, for its CSRF token) with these
    credentials and any further ``fields``; returns the answer."""
    return client.post(
        "/settings/sign-in",
        data={"email": email, "password": password, "csrf_token": csrf_from(form.text), **fields},
    )


@dataclass
class Settings:
    """An HTTP client signed in to the settings pages as ``owner``."""

    client: httpx.Client
    owner: Owner
    csrf: str

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.get("/settings" + path, **kwargs)

    def post(self, path: str, data: dict[str, str] | None = None) -> httpx.Response:
        return self.client.post("/settings" + path, data={"csrf_token": self.csrf, **(data or {})})


def signed_in(server: RunningServer, owner: Owner) -> Settings:
    client = httpx.Client(base_url=server.url, timeout=30)
    answer = sign_in(client, owner.email, owner.password)
    assert answer.status_code == 303, answer.text
    page = client.get("/settings/keys")
    assert page.status_code == 200, page.text
    return Settings(client, owner, csrf_from(page.text))


@pytest.fixture(autouse=True)
def quick_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id with small costs while these tests run: the production parameters spend about
    a third of a second per hash, and nearly every test here makes an owner and signs in. The
    code paths and the hash format are the same; only the cost parameters differ."""
    monkeypatch.setattr(
        users, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


@pytest.fixture
def owner(factory: Factory) -> Owner:
    return factory.owner()


@pytest.fixture
def settings(server: RunningServer, owner: Owner) -> Iterator[Settings]:
    session = signed_in(server, owner)
    try:
        yield session
    finally:
        session.client.close()


@pytest.fixture
def strict_server(database_url: str) -> Iterator[RunningServer]:
    """The app as deployed: local webhook targets not allowed."""
    with own_server(make_config(database_url, webhook_allow_local=False)) as running:
        yield running


# ---------------------------------------------------------------------------------------------
# Headless Chromium


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives headless Chromium")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses Chromium, so that a run can select or leave them out by marker
    (``-m browser``, ``-m "not browser"``) and no browser test can forget its mark."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module. Not for the whole session: while the sync Playwright
    driver is open it marks an event loop as running in this thread, which would break every
    asyncio test that runs after it."""
    ci = os.environ.get("CI") == "true"
    if os.environ.get("CALENDAR_TEST_SKIP_BROWSER") == "1" and not ci:
        pytest.skip("CALENDAR_TEST_SKIP_BROWSER=1: the browser tests were NOT run")
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing, so the browser tests cannot run. Install Debian's Chromium "
            "(apt-get install --no-install-recommends chromium; scripts/test does it when run as "
            "root), or opt out "
            "knowingly with CALENDAR_TEST_SKIP_BROWSER=1 (not under CI=true)."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, server: RunningServer) -> Iterator[Any]:
    """A fresh browser context (no cookies) on the running server. Fails the test if the page
    broke its Content-Security-Policy or logged a script error."""
    context = browser.new_context(
        base_url=server.url,
        viewport={"width": 1280, "height": 860},
        device_scale_factor=1,
        locale="en-GB",
        timezone_id="UTC",
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: problems.append(str(e)))
    try:
        yield tab
    finally:
        context.close()
    assert [p for p in problems if "favicon" not in p] == []


def screenshot(tab: Any, name: str, *, full_page: bool = True) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def nav(tab: Any, name: str) -> Any:
    """The header's link to a section, by its exact name: a bare ``get_by_role("link",
    name="Webhook")`` matches by substring, so an event called "Sent by webhook" (its "Edit …"
    and "Delete …" links) would make it ambiguous."""
    sections = tab.get_by_role("navigation", name="Settings sections")
    return sections.get_by_role("link", name=name, exact=True)


def browser_sign_in(tab: Any, owner: Owner, start: str = "/settings/keys") -> None:
    tab.goto(start)
    tab.get_by_label("Email").fill(owner.email)
    tab.get_by_label("Password").fill(owner.password)
    tab.get_by_role("button", name="Sign in").click()
    tab.wait_for_url(f"**{start}")


@contextmanager
def receiver(
    answer: Callable[[bytes], tuple[int, bytes]] = lambda body: (204, b""),
) -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """A webhook receiver on 127.0.0.1 that keeps what it got and answers with ``answer(body)``
    (a status and a response body; by default 204 and nothing)."""
    received: list[tuple[dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            status, content = answer(body)
            self.send_response(status)
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/hooks/calendar", received
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def event_form(calendar: str, **fields: str) -> dict[str, str]:
    """The event form's fields for a 15-minute event in ``calendar``, ``fields`` changed."""
    form = {
        "calendar": calendar,
        "title": "Standup",
        "start_date": "2031-06-02",
        "start_time": "09:00",
        "end_date": "2031-06-02",
        "end_time": "09:15",
        "location": "",
        "description": "",
    }
    form.update(fields)
    return form
