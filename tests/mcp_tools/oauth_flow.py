"""Driving OAuth for remote MCP over plain HTTP: register, authorize, consent, exchange.

The consent form is posted as a browser posts it (signed in, with the session's CSRF token);
``tests/account/test_connect_browser.py`` drives the same page in Chromium with the SDK's own
client. Each step returns what the server answered, so the refusal tests can stop anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.account.conftest import csrf_from, sign_in
from tests.support import Owner, RunningServer

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never fetched: the flow reads the Location


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@dataclass
class Flow:
    server: RunningServer
    owner: Owner
    http: httpx.Client
    redirect_uri: str = REDIRECT_URI
    client_id: str = ""
    client_secret: str | None = None
    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    state: str = field(default_factory=lambda: secrets.token_urlsafe(16))

    @property
    def resource(self) -> str:
        return f"{self.server.url}/mcp"

    def register(self, **metadata: Any) -> dict[str, Any]:
        body = {
            "client_name": "Test assistant",
            "redirect_uris": [self.redirect_uri],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        answer = self.http.post("/register", json=body)
        assert answer.status_code == 201, answer.text
        info: dict[str, Any] = answer.json()
        self.client_id, self.client_secret = info["client_id"], info.get("client_secret")
        return info

    def authorize(self, **overrides: str) -> httpx.Response:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "state": self.state,
            "code_challenge": challenge_of(self.verifier),
            "code_challenge_method": "S256",
            "resource": self.resource,
            **overrides,
        }
        return self.http.get("/authorize", params={k: v for k, v in params.items() if v})

    def consent_url(self) -> str:
        answer = self.authorize()
        assert answer.status_code == 302, answer.text
        location = answer.headers["location"]
        assert location.startswith(f"{self.server.url}/settings/connect/oar_"), location
        return location

    def sign_in(self) -> None:
        assert sign_in(self.http, self.owner.email, self.owner.password).status_code == 303

    def consent(self, url: str, *, decision: str = "allow", **fields: str) -> httpx.Response:
        page = self.http.get(url)
        assert page.status_code == 200, page.text
        data = {
            "csrf_token": csrf_from(page.text),
            "permission": "write",
            "expires": "30d",
            "calendar": "",
            "decision": decision,
            **fields,
        }
        return self.http.post(url, data=data)

    def code(self, **fields: str) -> str:
        """Authorize, consent (signed in) and return the code the client is sent back with."""
        answer = self.consent(self.consent_url(), **fields)
        assert answer.status_code == 303, answer.text
        back = query_of(answer.headers["location"])
        assert back["state"] == self.state
        assert back["iss"] == self.server.url
        return back["code"]

    def token(self, **fields: str) -> httpx.Response:
        data = {"client_id": self.client_id, **fields}
        if self.client_secret:
            data["client_secret"] = self.client_secret
        return self.http.post("/token", data=data)

    def exchange(self, code: str, **overrides: str) -> httpx.Response:
        fields = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": self.verifier,
            "resource": self.resource,
            **overrides,
        }
        return self.token(**{k: v for k, v in fields.items() if v})

    def refresh(self, refresh_token: str, **overrides: str) -> httpx.Response:
        fields = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "resource": self.resource,
            **overrides,
        }
        return self.token(**fields)

    def tokens(self) -> dict[str, Any]:
        answer = self.exchange(self.code())
        assert answer.status_code == 200, answer.text
        tokens: dict[str, Any] = answer.json()
        return tokens

    def list_tools(self, access_token: str) -> httpx.Response:
        return self.http.post(
            "/mcp",
            headers={
                "Authorization": f"Bearer {access_token}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
