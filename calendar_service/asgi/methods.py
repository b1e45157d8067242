"""Which methods a path supports, for ``OPTIONS`` and for the ``Allow`` header of a 405.

Starlette answers a 405 from the first route whose path matched, so a path served by several
routes (``GET`` and ``POST`` of a collection) named only that route's methods. Here every
route (and mounted sub-app) matching the path counts. An ASGI app used as a route's endpoint
(the MCP transport) says what it takes in an ``allowed_methods`` attribute, which a function
endpoint may set too when its route takes every method to refuse some itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _collect(routes: Iterable[BaseRoute], scope: Scope, found: list[tuple[bool, set[str]]]) -> None:
    """(fixed path, methods) of every route matching ``scope``'s path."""
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.NONE:
            continue
        if isinstance(route, Mount):
            _collect(route.routes, {**scope, **child}, found)
        elif isinstance(route, Route):
            # An endpoint may say what it takes where its route takes more (``allowed_methods``).
            methods = getattr(route.endpoint, "allowed_methods", None) or route.methods
            found.append((not route.param_convertors, set(methods or ())))


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route serves at ``scope``'s path, plus OPTIONS; empty if none does.

    A fixed path beats a template, as in OpenAPI: ``/calendar/events/import`` is the import's
    alone, though ``/calendar/events/{eventId}`` matches it too."""
    matched: list[tuple[bool, set[str]]] = []
    _collect(routes, scope, matched)
    if any(fixed for fixed, _ in matched):
        matched = [(fixed, methods) for fixed, methods in matched if fixed]
    found: set[str] = set().union(*(methods for _, methods in matched))
    if not found:
        return []
    found.add("OPTIONS")
    known = [method for method in ORDER if method in found]
    return known + sorted(found.difference(ORDER))


def allow_header(routes: Sequence[BaseRoute], scope: Scope) -> str:
    return ", ".join(allowed_methods(routes, scope))


class AnswerOptions:
    """ASGI middleware: ``OPTIONS`` on a path the app serves is 204 with ``Allow``, before any
    key or session check (the list of methods is no secret); other paths go on to their 404.

    ``cors_paths`` answer their own CORS preflights (the OAuth endpoints, which browser-based
    MCP clients call from another origin): an ``OPTIONS`` there goes on to the route."""

    def __init__(self, app: ASGIApp, *, cors_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.cors_paths = frozenset(cors_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "OPTIONS"
            and scope["path"] not in self.cors_paths
        ):
            allow = allow_header(scope["app"].routes, scope)
            if allow:
                await Response(status_code=204, headers={"Allow": allow})(scope, receive, send)
                return
        await self.app(scope, receive, send)


__all__ = ["AnswerOptions", "allow_header", "allowed_methods"]
