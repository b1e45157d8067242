"""The one translation of errors into tool errors: safe text, never internals, code first."""

from __future__ import annotations

import logging

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from calendar_service.access.keys import Principal
from calendar_service.platform.errors import FieldError, NotFound, RateLimited, ValidationFailed
from calendar_service.platform.timeutil import utcnow
from mcp_tools.errors import tool_errors
from tests.mcp_tools.clients import MODES, connect, text_of, writer_and_reader
from tests.rest.conftest import event_body
from tests.support import Factory, RunningServer


def test_an_unexpected_error_is_logged_and_answered_with_the_request_id_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with (
        caplog.at_level(logging.ERROR, logger="mcp_tools"),
        pytest.raises(ToolError) as raised,
        tool_errors("listCalendarEvents", "req_abc"),
    ):
        raise RuntimeError("password=hunter2 at /srv/calendar/db.py line 12")
    text = str(raised.value)
    assert text.startswith("internal_error: internal error, request id req_abc.")
    assert "hunter2" not in text and "db.py" not in text
    assert "req_abc" in caplog.text and "RuntimeError" in caplog.text


def test_a_read_only_key_is_told_which_permission_is_missing() -> None:
    reader = Principal("key_1", "usr_1", "read", None, utcnow())
    with pytest.raises(ToolError) as raised, tool_errors("deleteCalendarEvent", "req_1"):
        reader.require_write()
    assert str(raised.value).startswith("insufficient_scope: This API key is read-only")
    assert str(raised.value).endswith("Missing permission: calendar:write.")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            ValidationFailed([FieldError("title", "must not be empty")]),
            "validation_error: The request has invalid fields: title.\n- title: must not be empty",
        ),
        (NotFound("No event 'ev_1'."), "not_found: No event 'ev_1'."),
        (RateLimited(7, 600, 60), "rate_limited: This API key made more than 600 requests"),
    ],
)
def test_calendar_errors_keep_their_code_and_safe_message(error: Exception, expected: str) -> None:
    with pytest.raises(ToolError) as raised, tool_errors("createCalendarEvent", "req_2"):
        raise error
    assert str(raised.value).startswith(expected)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_errors_first_line_starts_with_its_code_over_the_real_server(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    writer, reader = writer_and_reader(factory)
    async with connect(server.url, writer, mode=mode) as client:
        invalid = await client.call_tool("createCalendarEvent", event_body(title=""))
        missing = await client.call_tool("getCalendarEvent", {"eventId": "ev_nothing"})
    async with connect(server.url, reader, mode=mode) as client:
        refused = await client.call_tool("createCalendarEvent", event_body())
    firsts = {}
    for name, result in (("invalid", invalid), ("missing", missing), ("refused", refused)):
        assert result.is_error
        firsts[name] = text_of(result).splitlines()[0]
    assert firsts["invalid"].startswith("validation_error: The request has invalid fields: title")
    assert firsts["missing"].startswith("not_found: ")
    assert firsts["refused"].startswith("insufficient_scope: This API key is read-only")
    assert text_of(refused).splitlines()[1] == "Missing permission: calendar:write."
