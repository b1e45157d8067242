"""The base of our ASGI middleware that acts on HTTP requests only: every other scope (the
lifespan, a websocket) passes straight through to the app it wraps."""

from __future__ import annotations

from abc import ABC, abstractmethod

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware(ABC):
    """ASGI middleware for HTTP requests: a subclass writes ``http``; any other scope goes to
    the wrapped ``app`` untouched. A subclass that takes settings sets them after calling
    ``super().__init__(app)``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    @abstractmethod
    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request (``scope["type"] == "http"``)."""


__all__ = ["HttpMiddleware"]
