"""Tools per key: ``tools/list`` lists only the tools the calling key may call.

A model reads the whole list on every turn, and a tool it can never call costs tokens and
invites a refused call. Each tool's permission is declared once, by its operation
(``ToolSpec.op.needs``, ``calendar_service.operations.catalog``: ``read``, ``write`` or
``freebusy``); ``keys.permits`` says whether a key's permission covers it, the same rule
``gateway.perform`` enforces when the tool is called anyway (the call is still refused there,
with ``insufficient_scope``: hiding a tool is for the model's context, never the check).

The filter is an SDK ``ServerMiddleware`` around ``tools/list``: the handler lists every tool
and the middleware keeps those the caller's permission covers. Who the caller is depends on
the transport (``PermissionOf``): the key the HTTP request was verified with, or the key a stdio
server was started with. An unknown caller (no permission) is shown no tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types import ListToolsResult

from calendar_service.access.keys import permits

PermissionOf = Callable[[ServerRequestContext[Any, Any]], str | None]
"""The permission of the key making a request (``read``, ``write``, ``freebusy``), or None."""


class ToolsPerKey:
    """``tools/list`` answered with only the tools whose ``needs`` the caller's key permits."""

    def __init__(self, needs: Mapping[str, str], permission_of: PermissionOf) -> None:
        self.needs = dict(needs)  # tool name -> the permission it needs
        self.permission_of = permission_of

    def visible(self, permission: str | None) -> frozenset[str]:
        """The tools a key with ``permission`` is shown."""
        if permission is None:
            return frozenset()
        return frozenset(name for name, need in self.needs.items() if permits(permission, need))

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "tools/list":
            return result
        shown = self.visible(self.permission_of(ctx))
        # The chain answers the wire form (a dict); a model where a handler's result is kept.
        if isinstance(result, ListToolsResult):
            return result.model_copy(update={"tools": [t for t in result.tools if t.name in shown]})
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            tools = [t for t in result["tools"] if isinstance(t, dict) and t.get("name") in shown]
            return {**result, "tools": tools}
        return result


__all__ = ["PermissionOf", "ToolsPerKey"]
