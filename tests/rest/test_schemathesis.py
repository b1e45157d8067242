"""Schemathesis, an outside fuzzer, against the served OpenAPI document and a real server.

The ``st`` command line runs in its own process, as in a developer's shell or a CI job, with
every check on (response schemas, status codes, content types and headers as documented, valid
data accepted, invalid data refused, authentication not ignored, deleted events gone, created
ones readable...) over all its phases: the document's examples; coverage (boundary values and
each way a field can be wrong); fuzzing, positive and negative; and stateful sequences that
follow the document's links (create, then read, change and delete by the returned id; list,
then the next page). Generation is deterministic (derandomized) and bounded by examples per
operation; strings are drawn from a dictionary of hostile values too.

``schemathesis_hooks.py`` makes requests generated as valid valid against the stored data as
well (calendars that exist, times in order...): what a JSON Schema cannot express.

It must find nothing. A failure shows Schemathesis's report, with a ``curl`` command for each
case found. See docs/api.md, "The OpenAPI document".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.support import Factory, RunningServer

# The fuzzed calendars are in a zone with daylight saving time, so that local times in gaps
# and overlaps are part of what is sent.
TIME_ZONE = "Europe/Berlin"
MAX_EXAMPLES = 20  # per operation in the fuzzing phase
STATEFUL_SCENARIOS = 30
STATEFUL_STEPS = 6
RUN_TIMEOUT = 900  # seconds: a hang guard; a run takes a minute or two

# Drawn most often from the front (generation is derandomized), so the worst come first.
HOSTILE_STRINGS = [
    "\x00",
    "a\x00b",
    "' OR '1'='1",
    "<script>alert(1)</script>",
    "\u202egnp.exe",
    "Z\u0364\u0351\u0313a\u0308\u0347\u032dl\u036e\u0312\u036bg\u0317o",
    "👩\u200d👩\u200d👧\u200d👦🎉",
    "\r\nSet-Cookie: a=b",
    "../../../../etc/passwd",
    "'; DROP TABLE events; --",
    "%00",
    "%s%s%s%n",
    "{{7*7}}${7*7}",
    "${jndi:ldap://127.0.0.1/a}",
    "\ufeffBOM",
    "\u200d\u200c\u2060",
    "𝕿𝖊𝖘𝖙",
    "مرحبا بالعالم",
    "\u2028\u2029",
    "\x7f\x1b[31m",
    "\\",
    '"',
    "",
    " ",
    "\t\n",
    "Личное",
    "  Личное  ",
    "null",
    "true",
    "-1",
    "1e309",
    "NaN",
    "2026-02-30T10:00:00Z",
    "2026-03-29T02:30",
    "2026-10-25T02:30",
    "1900-01-01T00:30:00+01:00",
    "2201-01-01T00:00:01Z",
    "2026-03-02T09:30:00+18:01",
    "0001-01-01T00:00",
    "9999-12-31T23:59:59.999999999-23:59",
    "A" * 301,
]


WARNINGS = (  # Schemathesis's warnings (its config schema's WarningName)
    "missing_auth",
    "missing_test_data",
    "base_url_mismatch",
    "validation_mismatch",
    "missing_deserializer",
    "unused_openapi_auth",
    "unsupported_regex",
    "method_not_allowed",
    "constants_extraction",
    "unmatched_filter",
    "unresolvable_reference",
    "low_valid_rate",
    "rate_limited",
    "dictionary_mismatch",
    "timeout_units",
)


def _config(max_examples: int, cache: Path) -> dict[str, object]:
    return {
        "seed": 20260302,
        # Failures are stored for `st replay` here, not in the working tree; a fresh directory
        # each run, so that earlier failures are not replayed first.
        "cache": {"directory": str(cache)},
        "max-failures": 50,
        "hooks": "tests.rest.schemathesis_hooks",
        "headers": {"User-Agent": "schemathesis (calendar-service test suite)"},
        "auth": {"openapi": {"bearerAuth": {"bearer": "${CALENDAR_FUZZ_KEY}"}}},
        "request-timeout": 30,
        "continue-on-failure": True,
        # Every warning fails the run but missing test data, which getProposal alone may give
        # (checked after the run): a proposal exists only for a key whose writes wait for the
        # owner, and the fuzzing key's never do, so every id it finds answers 404
        # (tests/rest/test_proposals.py covers that operation's answers).
        "warnings": {"fail-on": [w for w in WARNINGS if w != "missing_test_data"]},
        "generation": {
            "mode": "all",
            "max-examples": max_examples,
            "deterministic": True,
            "database": "none",
        },
        # Free-text fields and opaque strings also draw from the hostile dictionary.
        "parameters": {
            name: {"dictionary": "hostile", "probability": 0.5}
            for name in (
                "body.title",
                "body.description",
                "body.location",
                "body.calendar",
                "body.calendarId",
                "path.eventId",
                "query.pageToken",
            )
        },
        "dictionaries": {"hostile": {"values": HOSTILE_STRINGS}},
        "checks": {"enabled": True},
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {
                "enabled": True,
                "max-steps": STATEFUL_STEPS,
                "generation": {"max-examples": STATEFUL_SCENARIOS},
            },
        },
        "operations": [
            {
                # Generated Idempotency-Keys repeat across bodies, and a key reused with
                # another body is a 422 by design (docs/api.md, "Idempotency"); the fuzzing
                # key may not send invitations, so sendUpdates=all is a 403 (may_not_invite).
                # The rest is Schemathesis's default less 3xx, which this API never answers.
                "include-operation-id": "createCalendarEvent",
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": [
                            "2xx",
                            "401",
                            "403",
                            "404",
                            "409",
                            "422",
                            "429",
                            "5xx",
                        ]
                    }
                },
            },
            {
                # The fuzzing link takes 100 bookings: past them, 410 link_gone by design.
                "include-operation-id": "bookSchedulingLink",
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": ["2xx", "404", "409", "410", "429", "5xx"]
                    }
                },
            },
            {
                # The import takes an .ics body (the hooks make generated ones real files) and
                # links to nothing: it is fuzzed in the other phases, not in the stateful one.
                "include-operation-id": "importCalendarEvents",
                "phases": {"stateful": {"enabled": False}},
            },
        ],
    }


def _toml_string(text: str) -> str:
    escaped = (
        f"\\u{ord(c):04x}" if c in '"\\' or ord(c) < 0x20 or ord(c) == 0x7F else c for c in text
    )
    return '"' + "".join(escaped) + '"'


def _toml(config: dict[str, object]) -> str:
    """The config as TOML (JSON strings and arrays are TOML; tables are written inline)."""

    def value(item: object) -> str:
        if isinstance(item, dict):
            return (
                "{ " + ", ".join(f"{_toml_string(k)} = {value(v)}" for k, v in item.items()) + " }"
            )
        if isinstance(item, list):
            return "[" + ", ".join(value(v) for v in item) + "]"
        if isinstance(item, str):
            return _toml_string(item)
        return json.dumps(item)

    lines = []
    for key, item in config.items():
        if key == "operations":
            assert isinstance(item, list)
            for operation in item:
                lines.append("[[operations]]")
                lines.extend(f"{_toml_string(k)} = {value(v)}" for k, v in operation.items())
        else:
            lines.insert(0, f"{_toml_string(key)} = {value(item)}")
    return "\n".join(lines) + "\n"


@pytest.mark.long
def test_schemathesis_finds_nothing_wrong_with_the_api_or_its_document(
    server: RunningServer, factory: Factory, tmp_path: Path
) -> None:
    owner = factory.owner(time_zone=TIME_ZONE)
    second = factory.calendar(owner, name="Работа", time_zone=TIME_ZONE)
    _, secret = factory.key(owner, permission="write")
    day = datetime.now(UTC).date() + timedelta(days=1)
    link = httpx.post(
        f"{server.url}/api/v1/calendar/schedulingLinks",
        json={
            "title": "Fuzzed",
            "durationMinutes": 30,
            "timeMin": day.isoformat(),
            "timeMax": (day + timedelta(days=7)).isoformat(),
            "uses": 100,
        },
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )
    assert link.status_code == 201, link.text
    config_file = tmp_path / "schemathesis.toml"
    config_file.write_text(_toml(_config(MAX_EXAMPLES, tmp_path / "cache")), encoding="utf-8")
    env = {
        **os.environ,
        "CALENDAR_FUZZ_KEY": secret,
        "CALENDAR_FUZZ_CALENDARS": json.dumps(
            [[owner.default_calendar_id, "Личное"], [second, "Работа"]]
        ),
        "CALENDAR_FUZZ_TIME_ZONE": TIME_ZONE,
        "CALENDAR_FUZZ_BASE": f"{server.url}/api/v1",
        "CALENDAR_FUZZ_LINK": link.json()["url"].rsplit("/", 1)[1],
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    command = [
        str(Path(sys.executable).with_name("st")),
        "--no-color",
        "--config-file",
        str(config_file),
        "run",
        f"{server.url}/api/openapi.json",
        "--checks",
        "all",
    ]
    result = subprocess.run(
        command,
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    selected = re.search(r"Selected: (\d+)/\1\b", output)  # every operation of the document
    assert selected and f"Tested: {selected[1]}" in output, output
    assert "API Links" in output, output  # every phase ran
    if "Missing test data" in output:  # getProposal's 404s only (see _config)
        listed = output.split("Missing test data", 1)[1].split("💡", 1)[0]
        named = [line.strip() for line in listed.splitlines() if line.strip().startswith("- ")]
        assert named == ["- GET /calendar/proposals/{proposalId}"], output
