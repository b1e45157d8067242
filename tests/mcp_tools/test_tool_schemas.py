"""What tools/list publishes, read as a validating client reads it: the input schemas accept
what the descriptions and examples invite (and the server accepts), every argument a text names
exists, and the whole list stays small enough for a model's context."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp_types import Tool

from calendar_service.platform.errors import CalendarError
from mcp_tools.server import TOOLS
from tests.mcp_tools.clients import MODES, connect, text_of
from tests.support import Factory, RunningServer

# Each tool's example arguments (kept with the tool, ``ToolSpec.examples``; not published: the
# portable subset has no ``examples``).
EXAMPLES = {spec.op.name: spec.examples for spec in TOOLS}
README = Path(__file__).resolve().parents[2] / "README.md"

# The date-time arguments of each tool, and what a required companion needs to be valid.
TIMES = {
    "listCalendarEvents": (("timeMin", "timeMax"), {}),
    "searchCalendarEvents": (("timeMin", "timeMax"), {"query": "dentist"}),
    "createCalendarEvent": (("startsAt", "endsAt"), {"title": "Dentist"}),
    "updateCalendarEvent": (("startsAt", "endsAt"), {"eventId": "ev_1"}),
    "queryFreeBusy": (("timeMin", "timeMax"), {}),
    "findFreeTime": (("timeMin", "timeMax"), {"durationMinutes": 30}),
}
# What the server accepts, as the descriptions say: a date (all-day events, window bounds), a
# time without an offset (read in the calendar's zone), with an offset, Z, no seconds, a space.
ACCEPTED = (
    "2026-03-02",
    "2026-03-02T09:30",
    "2026-03-02T09:30:00",
    "2026-03-02T09:30:00+01:00",
    "2026-03-02T08:30:00.250Z",
    "2026-03-02 09:30+0100",
)
CREATED = {"title": "Dentist", "startsAt": "2026-03-02T09:30", "endsAt": "2026-03-02T10:00"}
REFUSED = ("next Monday", "2026-03-02T25:00", "2026-3-2", "2026-03-02T09:30+19:00", "")


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validating client's view of a tool's input schema: formats checked too."""
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


async def _tools(server: RunningServer, secret: str, mode: str = "auto") -> dict[str, Tool]:
    async with connect(server.url, secret, mode=mode) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


def test_the_format_checker_checks_date_times() -> None:
    # Without it (rfc3339-validator), format "date-time" would pass anything and the tests
    # below would prove nothing about the formats.
    assert not Draft202012Validator.FORMAT_CHECKER.conforms("2026-03-02", "date-time")


@pytest.mark.parametrize("mode", MODES)
async def test_dates_and_times_without_an_offset_pass_every_tools_schema_as_the_server_takes_them(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    # The schemas say "a string" (no format, no pattern: the portable subset); what is not a
    # date or a date-time is refused by the server, naming the argument and what it takes.
    _, secret = factory.key(factory.owner())
    tools = await _tools(server, secret, mode)
    async with connect(server.url, secret, mode=mode) as client:
        made = await client.call_tool("createCalendarEvent", CREATED)
        assert not made.is_error, text_of(made)
        real = {"eventId": json.loads(text_of(made))["id"]}
        for name, (fields, required) in TIMES.items():
            if name == "updateCalendarEvent":
                required = real  # an event that exists: its new times are what is checked
            validator = _validator(tools[name].input_schema)
            for field in fields:
                for value in ACCEPTED:
                    other = next(f for f in fields if f != field)
                    arguments = {**required, other: "2026-03-09", field: value}
                    errors = [e.message for e in validator.iter_errors(arguments)]
                    assert errors == [], (name, field, value)
                for value in REFUSED:
                    if value == "" and name in ("listCalendarEvents", "searchCalendarEvents"):
                        continue  # an empty bound is no bound, as in REST's ?timeMin=
                    other = next(f for f in fields if f != field)
                    arguments = {**required, other: "2026-03-09", field: value}
                    result = await client.call_tool(name, arguments)
                    assert result.is_error, (name, field, value)
                    assert f"- {field}: " in text_of(result), (name, field, text_of(result))


async def test_the_readmes_free_time_example_passes_find_free_times_schema(
    server: RunningServer, factory: Factory
) -> None:
    body = re.search(r"/freeTime \\\n.*?-d '(\{.*?\})'", README.read_text(), re.S)
    assert body is not None
    example = json.loads(body.group(1))
    assert example["timeMin"] == "2026-03-02"  # a date: what format "date-time" refused
    _, secret = factory.key(factory.owner(), permission="freebusy")
    tools = await _tools(server, secret)
    assert [
        e.message for e in _validator(tools["findFreeTime"].input_schema).iter_errors(example)
    ] == []


async def test_every_tools_examples_pass_its_schema_and_the_servers_checks(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    tools = await _tools(server, secret)
    async with connect(server.url, secret) as client:
        for name, tool in tools.items():
            examples = EXAMPLES[name]
            assert examples, name
            validator = _validator(tool.input_schema)
            for example in examples:
                assert [e.message for e in validator.iter_errors(example)] == [], (name, example)
                result = await client.call_tool(name, example)
                # The example's event ids name no event of this owner: not_found is the
                # answer then, never a refusal of the arguments.
                if result.is_error:
                    assert text_of(result).startswith("not_found:"), (name, text_of(result))


def _described(schema: Any) -> Iterator[str]:
    """Every description in a schema, nested ones included."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _described(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _described(item)


def _properties(schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property of a schema (nested objects' and ``$defs``' too), with its schema."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for name, prop in value.items():
                    yield name, prop
                    yield from _properties(prop)
            else:
                yield from _properties(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _properties(item)


# An argument as the texts name one: camelCase (timeZone, calendarIds), or in `backquotes`;
# not a <placeholder> (an occurrence id is <seriesId>_<start>).
_NAMED = re.compile(r"`([A-Za-z]+)`|(?<![<\w])([a-z]+(?:[A-Z][a-z0-9]*)+)\b")


def _codes(error: type[CalendarError] = CalendarError) -> Iterator[str]:
    """Every error code (a text may name one: "a `conflict` error")."""
    yield error.code
    for sub in error.__subclasses__():
        yield from _codes(sub)


async def test_every_argument_a_tools_text_names_is_one_of_its_arguments_and_each_is_described(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    tools = await _tools(server, secret)
    arguments = {name: dict(_properties(tool.input_schema)) for name, tool in tools.items()}
    codes = set(_codes())
    unknown: dict[str, set[str]] = {}
    undescribed: dict[str, list[str]] = {}
    for name, tool in tools.items():
        # What a text may name besides the tool's arguments: its result's fields, the tools,
        # error codes, and in a sentence naming another tool, that tool's arguments.
        known = {field for field, _ in _properties(tool.output_schema)} | set(tools) | codes
        unknown[name] = set()
        for text in [tool.description or "", *_described(tool.input_schema)]:
            for sentence in re.split(r"(?<=[.;!?])\s+", text):
                others = {a for other in tools if other in sentence for a in arguments[other]}
                named = {a or b for a, b in _NAMED.findall(sentence)}
                unknown[name] |= named - set(arguments[name]) - known - others
        undescribed[name] = [
            a for a, prop in arguments[name].items() if not prop.get("description")
        ]
    assert unknown == {name: set() for name in tools}
    assert undescribed == {name: [] for name in tools}
