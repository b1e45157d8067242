"""A hosted assistant connects by itself: the MCP SDK's own OAuth client (``mcp.client.auth``)
against the real server, the owner's consent given in Chromium, tool calls, a refresh, and the
owner's revocation in settings ending access at the very next call.

The SDK's client is async and Playwright's sync driver marks this thread's event loop as
running, so the client runs on a thread of its own with its own loop; the two sides meet
through queues: the client hands over the authorization URL, the browser hands back the
redirect it was sent to.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.sync_api import expect
from pydantic import AnyUrl

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import screenshot
from tests.mcp_tools.clients import structured
from tests.rest.conftest import event_body
from tests.support import Owner, RunningServer, bearer, free_port

WAIT = 30  # seconds, for each hand-over between the two sides


@dataclass
class MemoryStorage:
    """The SDK's ``TokenStorage``: what a hosted assistant keeps between calls."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@dataclass
class Assistant:
    """The SDK's client on its own thread; ``to_browser``/``from_browser`` join the sides."""

    server_url: str
    redirect_uri: str
    storage: MemoryStorage = field(default_factory=MemoryStorage)
    to_browser: queue.Queue[str] = field(default_factory=queue.Queue)
    from_browser: queue.Queue[AuthorizationCodeResult] = field(default_factory=queue.Queue)
    revoked: threading.Event = field(default_factory=threading.Event)
    results: dict[str, Any] = field(default_factory=dict)
    authorizations: int = 0

    async def redirect(self, url: str) -> None:
        self.authorizations += 1
        if self.authorizations > 1:
            raise RuntimeError("asked to authorize again")  # after revocation: no consent
        self.to_browser.put(url)

    async def callback(self) -> AuthorizationCodeResult:
        return await asyncio.to_thread(self.from_browser.get, True, WAIT)

    async def run(self) -> None:
        provider = OAuthClientProvider(
            server_url=f"{self.server_url}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="Hosted assistant",
                redirect_uris=[AnyUrl(self.redirect_uri)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=self.storage,
            redirect_handler=self.redirect,
            callback_handler=self.callback,
        )
        async with (
            httpx2.AsyncClient(auth=provider, timeout=WAIT) as http,
            Client(streamable_http_client(f"{self.server_url}/mcp", http_client=http)) as client,
        ):
            tools = await client.list_tools()
            self.results["tools"] = [tool.name for tool in tools.tools]
            created = structured(await client.call_tool("createCalendarEvent", event_body()))
            self.results["created"] = created["id"]
            assert self.storage.tokens is not None
            self.results["first_access"] = self.storage.tokens.access_token
            # The access token is due: the SDK refreshes it (rotation) before the next call.
            provider.context.token_expiry_time = 1.0
            listed = await client.call_tool("listCalendarEvents", {"timeMin": "2026-03-01"})
            self.results["listed"] = structured(listed)
            self.results["second_access"] = self.storage.tokens.access_token
            self.to_browser.put("revoke now")
            assert await asyncio.to_thread(self.revoked.wait, WAIT)
            try:
                after = await client.call_tool("listCalendarEvents", {"timeMin": "2026-03-01"})
            except Exception as exc:
                self.results["after_revocation"] = exc
            else:
                self.results["after_revocation"] = after

    def thread(self) -> threading.Thread:
        def main() -> None:
            try:
                asyncio.run(self.run())
            except BaseException as exc:
                if self.revoked.is_set():
                    # The call after revocation was refused (401): the SDK went to authorize
                    # again, which this assistant refuses; the error leaves the client's task
                    # group rather than the call.
                    self.results["after_revocation"] = exc
                    return
                self.results["failed"] = exc
                self.to_browser.put("failed")

        return threading.Thread(target=main, name="sdk-oauth-client", daemon=True)


def test_a_hosted_assistant_connects_with_the_owners_consent_and_revocation_ends_it_at_once(
    page: Any, owner: Owner, server: RunningServer, db: Database
) -> None:
    redirect_uri = f"http://127.0.0.1:{free_port()}/oauth/callback"
    assistant = Assistant(server.url, redirect_uri)
    redirects: list[str] = []

    def back_at_the_assistant(route: Any) -> None:
        redirects.append(route.request.url)
        query = {k: v[0] for k, v in parse_qs(urlsplit(route.request.url).query).items()}
        assistant.from_browser.put(
            AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query["iss"])
        )
        route.fulfill(status=200, content_type="text/plain", body="You can close this tab.")

    page.route(f"{redirect_uri}*", back_at_the_assistant)
    worker = assistant.thread()
    worker.start()

    # Discovery and registration happened: the assistant sends the owner to authorize.
    url = assistant.to_browser.get(timeout=WAIT)
    assert url.startswith(f"{server.url}/authorize?"), assistant.results
    page.goto(url)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Email").fill(owner.email)
    page.get_by_label("Password").fill(owner.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/settings/connect/oar_*")
    expect(page.get_by_role("heading", name="Connect “Hosted assistant”?")).to_be_visible()
    expect(page.get_by_text("127.0.0.1", exact=False).first).to_be_visible()
    page.get_by_label("Read & write").check()
    page.get_by_label("Expires after").select_option("7d")
    screenshot(page, "oauth-01-consent")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(f"{redirect_uri}*")
    assert len(redirects) == 1

    # Token exchange, tool calls and a refresh, then the owner revokes it in settings.
    signal = assistant.to_browser.get(timeout=WAIT)
    assert signal == "revoke now", assistant.results.get("failed")
    results = assistant.results
    assert "listCalendarEvents" in results["tools"]
    assert [e["id"] for e in results["listed"]["events"]] == [results["created"]]
    assert results["second_access"] != results["first_access"]  # refreshed, rotated
    page.goto("/settings/keys")
    row = page.get_by_role("row", name="Hosted assistant")
    expect(row).to_contain_text("Connected app")
    expect(row).to_contain_text("Read & write")
    expect(row).to_contain_text("Active")
    screenshot(page, "oauth-02-keys")
    row.get_by_role("link", name="History").click()
    calls = page.get_by_role("table").last
    expect(calls).to_contain_text("createCalendarEvent (MCP)")
    expect(calls).to_contain_text("listCalendarEvents (MCP)")
    page.goto("/settings/keys")
    page.get_by_role("row", name="Hosted assistant").get_by_role("link", name="Revoke").click()
    page.get_by_role("button", name="Revoke key").click()
    expect(page.get_by_role("row", name="Hosted assistant")).to_contain_text("Revoked")
    assistant.revoked.set()
    worker.join(WAIT)
    assert not worker.is_alive()

    refusal = results.get("after_revocation")
    assert isinstance(refusal, BaseException), refusal  # the very next call failed
    assert "asked to authorize again" in repr(refusal)
    assert assistant.authorizations == 2  # refused, the SDK's only way on is a new consent
    with httpx.Client(base_url=server.url) as http:
        refused = http.post("/mcp", json={}, headers=bearer(results["second_access"]))
    assert refused.status_code == 401
    assert refused.json()["code"] == "revoked_api_key"
    [app] = [
        k for k in db.call(keys.list_keys, user_id=owner.id, now=utcnow()) if k["kind"] == "app"
    ]
    calls = db.call(history.list_calls, key_id=app["id"])
    assert [(c["transport"], c["operation"], c["status"]) for c in reversed(calls)] == [
        ("mcp", "createCalendarEvent", 201),
        ("mcp", "listCalendarEvents", 200),
        ("mcp", "listCalendarEvents", 401),  # the call after revocation, refused
        ("mcp", "mcp", 401),  # the raw request above (no JSON-RPC method)
    ]
