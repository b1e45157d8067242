"""The sign-in throttle holds under concurrent attempts: two server processes' worth of apps on
one database, attempts released together, and exactly the limit gets a password check."""

from __future__ import annotations

import ssl
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from calendar_service.access import signin
from calendar_service.platform.config import Config
from tests.account.conftest import csrf_from
from tests.support import Factory, RunningServer, own_server

ATTEMPTS = 30


@pytest.fixture
def second_server(config: Config) -> Iterator[RunningServer]:
    """Another app on the same database, with its own connections: a second server process."""
    with own_server(config) as running:
        yield running


def _attempt_together(
    servers: list[RunningServer], forms: list[dict[str, str]], address: str
) -> list[int]:
    """Post each sign-in form at once (round robin over the servers); the answers' statuses."""
    tls = ssl.create_default_context()  # shared: httpx loads a new one per client otherwise
    prepared = []
    for n, data in enumerate(forms):
        url = servers[n % len(servers)].url
        with httpx.Client(base_url=url, verify=tls, timeout=60) as client:
            token = csrf_from(client.get("/settings/sign-in").text)
            prepared.append((url, client.cookies, {**data, "csrf_token": token}))
    start = threading.Barrier(len(prepared))

    def post(url: str, cookies: httpx.Cookies, data: dict[str, str]) -> int:
        # A connection of its own, opened once every attempt is ready (a kept-alive one from
        # the form's GET could have been closed by the server meanwhile).
        headers = {"X-Forwarded-For": address}
        with httpx.Client(
            base_url=url, cookies=cookies, headers=headers, verify=tls, timeout=60
        ) as client:
            start.wait(timeout=30)
            return client.post("/settings/sign-in", data=data).status_code

    with ThreadPoolExecutor(len(prepared)) as pool:
        return list(pool.map(lambda attempt: post(*attempt), prepared))


def _fresh_address() -> str:
    return f"2001:db8::{uuid.uuid4().hex[:4]}"


def test_concurrent_wrong_passwords_for_one_email_get_exactly_the_limit_of_checks(
    server: RunningServer, second_server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    forms = [{"email": owner.email, "password": f"guess {n}"} for n in range(ATTEMPTS)]
    statuses = _attempt_together([server, second_server], forms, _fresh_address())
    assert sorted(statuses) == [400] * signin.EMAIL_LIMIT + [429] * (ATTEMPTS - signin.EMAIL_LIMIT)


def test_concurrent_attempts_from_one_address_get_exactly_the_limit_of_checks(
    server: RunningServer, second_server: RunningServer
) -> None:
    attempts = signin.ADDRESS_LIMIT + 15
    forms = [
        {"email": f"nobody-{uuid.uuid4().hex[:8]}@example.com", "password": "guess"}
        for _ in range(attempts)
    ]
    statuses = _attempt_together([server, second_server], forms, _fresh_address())
    assert sorted(statuses) == [400] * signin.ADDRESS_LIMIT + [429] * (
        attempts - signin.ADDRESS_LIMIT
    )
