"""What a model reads: the whole tools/list of a write key within the budget, every schema in
the portable subset (our checker and MCP Inspector's ``--strict``), and the trimmed output
schemas still accepting the real answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from jsonschema import Draft202012Validator

from calendar_service.platform.config import Config
from mcp_tools.portable import violations
from tests.mcp_tools.clients import connect, structured, text_of
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, RunningServer, bearer

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / "node_modules" / ".bin" / "mcp-inspector"
BUDGET = 24_000  # characters of compact JSON, about 6,000 tokens (SPEC, "What a model reads")


async def _listed(server: RunningServer, secret: str) -> list[dict[str, object]]:
    async with connect(server.url, secret) as client:
        tools = (await client.list_tools()).tools
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]


async def test_a_write_keys_whole_tools_list_stays_within_the_budget(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    listed = await _listed(server, secret)
    size = len(json.dumps(listed, separators=(",", ":")))
    per_tool = {t["name"]: len(json.dumps(t, separators=(",", ":"))) for t in listed}
    print(f"\ntools/list of a write key: {size} characters of compact JSON ({len(listed)} tools)")
    for name, chars in per_tool.items():
        print(f"  {name}: {chars}")
    assert size <= BUDGET, per_tool


async def test_every_published_schema_is_in_the_portable_subset(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    found = {}
    for tool in await _listed(server, secret):
        for part in ("inputSchema", "outputSchema"):
            schema = tool.get(part)
            assert isinstance(schema, dict), (tool["name"], part)
            Draft202012Validator.check_schema(schema)
            found[f"{tool['name']}.{part}"] = violations(schema)
    assert found == {where: [] for where in found}


def test_the_checker_finds_what_the_subset_leaves_out() -> None:
    # A checker that finds nothing proves nothing: it names each kind of departure.
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": "string", "format": "date-time"},
            "c": {"const": 1},
        },
        "additionalProperties": True,
    }
    assert [v.split(":")[0] for v in violations(schema)] == [
        "properties.a.type",
        "properties.b.format",
        "properties.c.const",
        "additionalProperties",
    ]


def _inspect(target: list[str], env: dict[str, str] | None = None) -> None:
    """MCP Inspector's CLI lists the tools as a client would and lints every tool schema
    (``--strict``: each portability problem on stderr, exit 6 on an error): nothing."""
    node = shutil.which("node")
    assert node is not None and INSPECTOR.exists(), "run `make node` (npm ci) first"
    command = [str(INSPECTOR), "--cli", "--method", "tools/list", "--strict", *target]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["tools"]) >= 10, done.stdout[:500]
    assert done.stderr.strip() == "", done.stderr


def test_mcp_inspector_strict_reports_nothing_over_stdio(config: Config, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    variables = {"CALENDAR_DATABASE_URL": config.database_url, "CALENDAR_API_KEY": secret}
    target = [arg for name, value in variables.items() for arg in ("-e", f"{name}={value}")]
    target += [sys.executable, "-m", "calendar_service.cli", "mcp"]
    _inspect(target, env={**os.environ, **variables})


def test_mcp_inspector_strict_reports_nothing_over_http(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    header = f"Authorization: Bearer {secret}"
    _inspect([f"{server.url}/mcp", "--transport", "http", "--header", header])


@pytest.mark.parametrize("recurring", [False, True])
async def test_the_trimmed_output_schemas_accept_real_answers_with_more_fields(
    server: RunningServer, factory: Factory, recurring: bool
) -> None:
    # The official client validates every structured answer against the published output
    # schema (and raises if it does not pass); the answers carry fields the schemas omit.
    _, secret = factory.key(factory.owner())
    extra = {"recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"]} if recurring else {}
    async with connect(server.url, secret) as client:
        created = structured(await client.call_tool("createCalendarEvent", event_body(**extra)))
        dry = structured(
            await client.call_tool(
                "updateCalendarEvent", {"eventId": created["id"], "title": "x", "dryRun": True}
            )
        )
        page = structured(await client.call_tool("listCalendarEvents", {}))
        one = structured(await client.call_tool("getCalendarEvent", {"eventId": created["id"]}))
        changes = structured(await client.call_tool("listChanges", {}))
        busy = structured(
            await client.call_tool(
                "queryFreeBusy", {"timeMin": "2026-01-01", "timeMax": "2026-03-01"}
            )
        )
        gone = structured(await client.call_tool("deleteCalendarEvent", {"eventId": created["id"]}))
    assert "createdAt" in created and dry["dryRun"] is True
    assert page["events"] and one["id"] == created["id"]
    assert changes["changes"] and "calendars" in busy and gone["deleted"] is True


SUMMARY_BUDGET = 480  # characters of compact JSON: about 120 tokens


async def test_a_listed_event_is_a_summary_by_default_and_detail_full_gives_rests_event(
    server: RunningServer, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(factory.owner())
    body = event_body(
        title="Quarterly planning with the whole product team",
        description="Agenda: " + "roadmap, hiring, budget; " * 20,
        location="Room 4.12, Main building",
        attendees=[{"email": "ana@example.com", "name": "Ana"}],
        recurrence=["RRULE:FREQ=WEEKLY;COUNT=3"],
    )
    window = {"timeMin": body["startsAt"][:10], "timeMax": "2100-01-01"}
    async with connect(server.url, secret) as client:
        created = structured(await client.call_tool("createCalendarEvent", body))
        page = structured(await client.call_tool("listCalendarEvents", window))
        full = structured(
            await client.call_tool("listCalendarEvents", {**window, "detail": "full"})
        )
        found = structured(
            await client.call_tool("searchCalendarEvents", {"query": "planning", **window})
        )
        refused = await client.call_tool("listCalendarEvents", {"detail": "all"})
    rest = api.get(EVENTS, params=window, headers=bearer(secret)).json()
    first = page["events"][0]
    size = len(json.dumps(first, separators=(",", ":")))
    print(
        f"\na listed event: {size} characters (full: "
        f"{len(json.dumps(full['events'][0], separators=(',', ':')))})"
    )
    assert size <= SUMMARY_BUDGET
    assert set(first) == {
        "id",
        "calendarId",
        "title",
        "startsAt",
        "endsAt",
        "location",
        "recurringEventId",
    }
    assert first["recurringEventId"] == created["id"]
    assert full["events"] == rest["events"]  # every field, as REST answers (unchanged)
    assert "description" in rest["events"][0] and "attendees" in rest["events"][0]
    assert [e["id"] for e in found["events"]] == [e["id"] for e in page["events"]]
    assert "description" not in found["events"][0]
    assert refused.is_error and '- detail: must be "summary"' in text_of(refused)
