"""The MCP front's one translation of errors into tool errors.

A tool error's text is put in front of the model, so it must say what to fix and never leak
internals. ``CalendarError`` messages are written to be safe for a stranger; they are given with
their stable ``code``, the permission a refused key lacks (``calendar:write``) and every bad
field. Anything else is a bug: it is logged with a request id and answered with that id only.

The code is the first thing the model reads: the tools return the error as an ``isError`` result
(``error_result``) rather than letting a ``ToolError`` escape, which the SDK would answer with
``Error executing tool NAME: `` in front of the code.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from calendar_service.platform.errors import (
    CalendarError,
    Conflict,
    InsufficientScope,
    RuleViolation,
    ValidationFailed,
)

log = logging.getLogger("mcp_tools")


def describe(exc: CalendarError) -> str:
    """The text a model reads for a refused call: code, message, then what is missing."""
    lines = [f"{exc.code}: {exc.message}"]
    if isinstance(exc, InsufficientScope) and exc.required_scope:
        lines.append(f"Missing permission: {exc.required_scope}.")
    if isinstance(exc, ValidationFailed):
        lines.extend(f"- {item['field']}: {item['message']}" for item in exc.errors)
    if isinstance(exc, RuleViolation):
        lines.extend(f"- {item['rule']}: {item['message']}" for item in exc.errors)
        lines.extend(f"- try {item['startsAt']} to {item['endsAt']}" for item in exc.suggestions)
    if isinstance(exc, Conflict):
        lines.extend(
            f"- busy {item['startsAt']} to {item['endsAt']}"
            + (f": {item['title']} ({item['id']})" if "title" in item else "")
            for item in exc.conflicts
        )
    return "\n".join(lines)


def error_result(exc: ToolError) -> CallToolResult:
    """The ``isError`` result for ``exc``, its text exactly as ``tool_errors`` wrote it."""
    return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)


@contextlib.contextmanager
def tool_errors(operation: str, request_id: str | None) -> Iterator[None]:
    """Turn what a tool raises into a ``ToolError`` (an ``isError`` result)."""
    try:
        yield
    except CalendarError as exc:
        raise ToolError(describe(exc)) from None
    except ToolError:
        raise
    except Exception:
        # Logged with the request id only: never the arguments or a secret.
        log.exception("unhandled error in MCP tool %s (request %s)", operation, request_id)
        raise ToolError(
            f"internal_error: internal error, request id {request_id}. Something went wrong on "
            "the service's side; quote the request id if you report it."
        ) from None
