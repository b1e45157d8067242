"""The OpenAPI document is valid 3.1.0, complete, and says what the API really does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from openapi_spec_validator import validate

from calendar_service.calendar import calendars
from calendar_service.delivery.triggers.kinds import EVENT_TYPES
from calendar_service.platform.models import EventCreate, EventUpdate
from calendar_service.platform.timeutil import utcnow
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, RunningServer, bearer

OPERATIONS = {
    "listCalendarEvents": ("/calendar/events", "get"),
    "createCalendarEvent": ("/calendar/events", "post"),
    "getCalendarEvent": ("/calendar/events/{eventId}", "get"),
    "updateCalendarEvent": ("/calendar/events/{eventId}", "patch"),
    "deleteCalendarEvent": ("/calendar/events/{eventId}", "delete"),
    "queryFreeBusy": ("/calendar/freeBusy", "post"),
    "findFreeTime": ("/calendar/freeTime", "post"),
    "importCalendarEvents": ("/calendar/events/import", "post"),
    "createSubscription": ("/webhooks/subscriptions", "post"),
    "listSubscriptions": ("/webhooks/subscriptions", "get"),
    "deleteSubscription": ("/webhooks/subscriptions/{subscriptionId}", "delete"),
    "testSubscription": ("/webhooks/subscriptions/{subscriptionId}/test", "post"),
    "listChanges": ("/calendar/changes", "get"),
    "undoChange": ("/calendar/changes/{changeId}/undo", "post"),
    "getProposal": ("/calendar/proposals/{proposalId}", "get"),
    "getSchedulingRules": ("/calendar/rules", "get"),
    "createSchedulingLink": ("/calendar/schedulingLinks", "post"),
    "listSchedulingLinks": ("/calendar/schedulingLinks", "get"),
    "deleteSchedulingLink": ("/calendar/schedulingLinks/{linkId}", "delete"),
    "listBookingSlots": ("/book/{token}/slots", "get"),
    "bookSchedulingLink": ("/book/{token}", "post"),
}
ITEM = "/calendar/events/{eventId}"


@pytest.fixture(scope="module")
def doc(server: RunningServer) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/api/openapi.json", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def berlin_key(factory: Factory) -> str:
    """A write key of an owner whose calendars are in Europe/Berlin."""
    return factory.key(factory.owner(time_zone="Europe/Berlin"))[1]


def _resolve(doc: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = doc
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _operation(doc: dict[str, Any], operation_id: str) -> dict[str, Any]:
    path, method = OPERATIONS[operation_id]
    return doc["paths"][path][method]  # type: ignore[no-any-return]


def _valid(doc: dict[str, Any], schema: dict[str, Any], instance: Any) -> bool:
    validator = jsonschema.Draft202012Validator({**schema, "components": doc["components"]})
    return validator.is_valid(instance)


def _check(doc: dict[str, Any], response: httpx.Response, path: str, method: str) -> None:
    """Validate a real response's status, media type, body and headers against the document."""
    responses = doc["paths"][path][method]["responses"]
    assert str(response.status_code) in responses, response.status_code
    spec = _resolve(doc, responses[str(response.status_code)])
    for name, header in spec.get("headers", {}).items():
        header = _resolve(doc, header)
        if header.get("required"):
            assert name.lower() in response.headers, name
        if name.lower() in response.headers:
            value: Any = response.headers[name.lower()]
            if header["schema"].get("type") == "integer":
                value = int(value)
            assert _valid(doc, header["schema"], value), (name, value)
    if "content" not in spec:
        assert response.content == b""
        return
    media = response.headers["content-type"].split(";")[0]
    schema = spec["content"][media]["schema"]
    jsonschema.validate(
        response.json(),
        {**schema, "components": doc["components"]},
        cls=jsonschema.Draft202012Validator,
    )


def test_the_document_is_valid_openapi_3_1_with_version_1_0_0(
    api: httpx.Client, server: RunningServer, doc: dict[str, Any]
) -> None:
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["version"] == "1.0.0"
    assert doc["servers"] == [{"url": f"{server.url}/api/v1"}]
    assert api.get("/.well-known/openapi.json").json() == doc


def test_the_document_names_its_license_contact_and_tags(doc: dict[str, Any]) -> None:
    info = doc["info"]
    assert info["license"] == {"name": "MIT", "url": "https://opensource.org/license/mit"}
    assert info["contact"]["name"] and info["contact"]["url"]
    assert info["description"]
    assert [tag["name"] for tag in doc["tags"]] == [
        "Availability",
        "Changes",
        "Events",
        "Scheduling links",
        "Webhooks",
    ]
    assert all(tag["description"] for tag in doc["tags"])


def test_every_operation_has_its_id_a_tag_a_description_and_bearer_auth(
    doc: dict[str, Any],
) -> None:
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "Authorization: Bearer <API_KEY>. Never in the URL.",
    }
    assert doc["security"] == [{"bearerAuth": []}]
    found = {
        op["operationId"]
        for item in doc["paths"].values()
        for method, op in item.items()
        if method != "parameters"
    }
    assert found == set(OPERATIONS)
    for operation_id in OPERATIONS:
        op = _operation(doc, operation_id)
        path = OPERATIONS[operation_id][0]
        tag = (
            "Availability"
            if path.endswith(("Time", "Busy", "/rules"))
            else "Webhooks"
            if path.startswith("/webhooks/")
            else "Changes"
            if path.startswith(("/calendar/changes", "/calendar/proposals"))
            else "Scheduling links"
            if path.startswith(("/calendar/schedulingLinks", "/book/"))
            else "Events"
        )
        assert op["tags"] == [tag]
        assert op["summary"] and op["description"]


@pytest.mark.parametrize(
    ("operation_id", "statuses"),
    [
        ("listCalendarEvents", {"200", "400", "401", "410", "429", "500"}),
        (
            "createCalendarEvent",
            {"200", "201", "202", "400", "401", "403", "409", "413", "415", "422", "429", "500"},
        ),
        ("getCalendarEvent", {"200", "400", "401", "404", "429", "500"}),
        (
            "updateCalendarEvent",
            {"200", "202", "400", "401", "403", "404", "409", "413", "415", "429", "500"},
        ),
        (
            "deleteCalendarEvent",
            {"200", "202", "204", "400", "401", "403", "404", "409", "429", "500"},
        ),
        ("queryFreeBusy", {"200", "400", "401", "413", "415", "429", "500"}),
        ("findFreeTime", {"200", "400", "401", "413", "415", "429", "500"}),
        ("createSubscription", {"201", "400", "401", "429", "500"}),
        ("listSubscriptions", {"200", "400", "401", "429", "500"}),
        ("deleteSubscription", {"204", "400", "401", "404", "429", "500"}),
        ("testSubscription", {"202", "400", "401", "404", "409", "429", "500"}),
        ("listChanges", {"200", "400", "401", "429", "500"}),
        ("undoChange", {"200", "202", "400", "401", "404", "409", "429", "500"}),
        ("getProposal", {"200", "400", "401", "404", "429", "500"}),
        ("getSchedulingRules", {"200", "400", "401", "429", "500"}),
        ("createSchedulingLink", {"201", "400", "401", "409", "429", "500"}),
        ("listSchedulingLinks", {"200", "400", "401", "429", "500"}),
        ("deleteSchedulingLink", {"204", "400", "401", "404", "429", "500"}),
    ],
)
def test_every_operation_documents_each_status_it_answers_errors_as_problem_json(
    doc: dict[str, Any], operation_id: str, statuses: set[str]
) -> None:
    responses = _operation(doc, operation_id)["responses"]
    assert set(responses) == statuses
    for status, response in responses.items():
        response = _resolve(doc, response)
        assert response["description"]
        assert "Request-Id" in response["headers"]
        if status.startswith("2"):
            assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(
                response["headers"]
            )
        else:
            schema = response["content"]["application/problem+json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Problem"}
    created = _resolve(doc, _operation(doc, "createCalendarEvent")["responses"]["201"])
    assert _resolve(doc, created["headers"]["Location"])["required"] is True
    limited = _resolve(doc, _operation(doc, "listCalendarEvents")["responses"]["429"])
    assert {"Retry-After", "RateLimit-Policy"} <= set(limited["headers"])
    unauthorized = _resolve(doc, _operation(doc, "listCalendarEvents")["responses"]["401"])
    assert "WWW-Authenticate" in unauthorized["headers"]


def test_the_input_schemas_have_the_models_fields_and_refuse_others(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    for model in (EventCreate, EventUpdate):
        schema = schemas[model.__name__]
        aliases = {info.alias or name for name, info in model.model_fields.items()}
        assert set(schema["properties"]) == aliases
        assert schema["additionalProperties"] is False
    create = schemas["EventCreate"]
    assert create["required"] == ["title", "startsAt", "endsAt"]
    assert create["properties"]["title"]["maxLength"] == 300
    assert create["properties"]["calendar"]["default"] == "Личное"
    assert "required" not in schemas["EventUpdate"]


def _examples(node: Any, schema: Any = None) -> Iterator[tuple[Any, Any]]:
    """Every (example, schema it illustrates) in the document."""
    if isinstance(node, dict):
        here = node.get("schema", schema)
        if "example" in node and isinstance(here, dict):
            yield node["example"], here
        for example in node.get("examples", {}).values() if "schema" in node else ():
            yield example["value"], here
        if "examples" in node and isinstance(node["examples"], list):  # JSON Schema examples
            for example in node["examples"]:
                yield example, node
        for key, value in node.items():
            if key not in ("example", "examples"):
                yield from _examples(value)
    elif isinstance(node, list):
        for value in node:
            yield from _examples(value)


def test_every_example_in_the_document_is_valid_against_its_schema(doc: dict[str, Any]) -> None:
    examples = list(_examples({"paths": doc["paths"], "components": doc["components"]}))
    assert len(examples) >= 20
    for example, schema in examples:
        assert _valid(doc, schema, example), example


# What the API accepts as startsAt/endsAt, and what the document says about it, must agree.
TIMED = [
    "2026-03-02T09:30:00+01:00",
    "2026-03-02T09:30:00Z",
    "2026-03-02t09:30:00z",
    "2026-03-02 09:30",
    "2026-03-02T09:30",
    "2026-03-02T09:30:00.123456789+0530",
    "2026-03-02T09:30:00-18:00",
    "2026-03-02T09:30:00+1759",
    "  2026-03-02T09:30:00+01:00\u3000",
    "2024-02-29T10:00:00Z",
    "2000-02-29T10:00:00Z",
    "2026-03-29T02:30",  # inside Berlin's DST gap: moved forward
    "2026-03-02",  # a date: only for all-day events
    "2026-02-29T10:00:00Z",
    "1900-02-29T10:00:00Z",
    "2026-04-31T10:00:00Z",
    "2026-03-02T24:00:00Z",
    "2026-03-02T09:60:00Z",
    "2026-03-02T09:30:60Z",
    "2026-03-02T09:30:00+24:00",
    "2026-03-02T09:30:00.1234567890Z",
    "2026-3-2T09:30:00Z",
    "0000-03-02T09:30:00Z",
    "2026-03-02T09:30:00 Europe/Berlin",
    "tomorrow",
    "",
    " ",
]
ALL_DAY = [
    "2026-03-02",
    " 2026-03-02 ",
    "2026-03-02T00:00",
    "2026-03-02T00:00:00.000+01:00",
    "2024-02-29",
    "2026-03-02T09:00:00Z",
    "2026-02-29",
    "2026-13-01",
    "20260302",
]


@pytest.mark.parametrize(
    ("value", "all_day"), [(v, False) for v in TIMED] + [(v, True) for v in ALL_DAY]
)
def test_a_start_is_valid_in_the_document_exactly_when_the_api_accepts_it(
    api: httpx.Client, doc: dict[str, Any], berlin_key: str, value: str, all_day: bool
) -> None:
    body = event_body(startsAt=value, endsAt="2027-01-01" if all_day else "2027-01-01T00:00Z")
    if all_day:
        body["allDay"] = True
    schema = {"$ref": "#/components/schemas/EventCreate"}
    response = api.post(EVENTS, json=body, headers=bearer(berlin_key))
    assert response.status_code in (201, 400), response.text
    assert _valid(doc, schema, body) is (response.status_code == 201), response.text


@pytest.mark.parametrize(
    ("body", "accepted"),
    [
        ({"title": "Renamed"}, True),
        ({"description": None, "location": None}, True),
        ({}, True),
        ({"startsAt": "2026-03-02T08:30:00Z"}, True),
        ({"allDay": True, "startsAt": "2026-03-02", "endsAt": "2026-03-02"}, True),
        ({"title": None}, False),
        ({"startsAt": None}, False),
        ({"endsAt": None}, False),
        ({"allDay": None}, False),
        ({"title": "   "}, False),
        ({"title": 5}, False),
        ({"allDay": "true"}, False),
        ({"allDay": False, "startsAt": "2026-03-02"}, False),
        ({"calendarId": "cal_x"}, False),
        ({"startAt": "2026-03-02T09:30:00Z"}, False),
    ],
)
def test_patch_accepts_the_bodies_its_schema_allows_and_refuses_the_others(
    api: httpx.Client, doc: dict[str, Any], berlin_key: str, body: dict[str, Any], accepted: bool
) -> None:
    created = api.post(EVENTS, json=event_body(), headers=bearer(berlin_key))
    assert created.status_code == 201
    url = f"{EVENTS}/{created.json()['id']}"
    response = api.patch(url, json=body, headers=bearer(berlin_key))
    schema = {"$ref": "#/components/schemas/EventUpdate"}
    assert _valid(doc, schema, body) is accepted
    assert response.status_code == (200 if accepted else 400), response.text
    _check(doc, response, ITEM, "patch")


def test_the_links_lead_from_a_created_event_to_reading_changing_and_deleting_it(
    doc: dict[str, Any],
) -> None:
    created = _resolve(doc, _operation(doc, "createCalendarEvent")["responses"]["201"])
    targets = {link["operationId"]: link["parameters"] for link in created["links"].values()}
    assert targets == {
        name: {"eventId": "$response.body#/id"}
        for name in ("getCalendarEvent", "updateCalendarEvent", "deleteCalendarEvent")
    }
    listed = _operation(doc, "listCalendarEvents")["responses"]["200"]
    assert listed["links"]["NextPage"]["parameters"] == {
        "pageToken": "$response.body#/nextPageToken"
    }
    for item in doc["paths"].values():
        for method, op in item.items():
            if method == "parameters":
                continue
            for response in op["responses"].values():
                for link in _resolve(doc, response).get("links", {}).values():
                    assert link["operationId"] in OPERATIONS


def test_real_responses_match_the_document(
    api: httpx.Client, doc: dict[str, Any], factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    _, reader = factory.key(factory.owner(), permission="read")
    created = api.post(
        EVENTS,
        json=event_body(description="d"),
        headers={**bearer(secret), "Idempotency-Key": "k-1"},
    )
    _check(doc, created, "/calendar/events", "post")
    replayed = api.post(
        EVENTS,
        json=event_body(description="d"),
        headers={**bearer(secret), "Idempotency-Key": "k-1"},
    )
    _check(doc, replayed, "/calendar/events", "post")
    reused = api.post(
        EVENTS, json=event_body(), headers={**bearer(secret), "Idempotency-Key": "k-1"}
    )
    assert reused.status_code == 422
    _check(doc, reused, "/calendar/events", "post")
    url = f"{EVENTS}/{created.json()['id']}"
    _check(doc, api.get(EVENTS, headers=bearer(secret)), "/calendar/events", "get")
    _check(
        doc, api.get(EVENTS, params={"limit": 1}, headers=bearer(secret)), "/calendar/events", "get"
    )
    _check(doc, api.post(EVENTS, json={}, headers=bearer(secret)), "/calendar/events", "post")
    _check(
        doc,
        api.post(EVENTS, content=b"x", headers={**bearer(secret), "Content-Type": "text/plain"}),
        "/calendar/events",
        "post",
    )
    _check(
        doc, api.post(EVENTS, json=event_body(), headers=bearer(reader)), "/calendar/events", "post"
    )
    _check(doc, api.get(EVENTS), "/calendar/events", "get")
    _check(doc, api.get(EVENTS, params={"api_key": secret}), "/calendar/events", "get")
    _check(doc, api.get(url, headers=bearer(secret)), ITEM, "get")
    _check(doc, api.patch(url, json={"title": "t"}, headers=bearer(secret)), ITEM, "patch")
    _check(doc, api.delete(url, headers=bearer(secret)), ITEM, "delete")
    _check(doc, api.get(url, headers=bearer(secret)), ITEM, "get")


def _query_parameters(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(operationId, parameter) for every query parameter of every operation."""
    for item in doc["paths"].values():
        shared = item.get("parameters", [])
        for method, operation in item.items():
            if method == "parameters":
                continue
            for parameter in [*shared, *operation.get("parameters", [])]:
                parameter = _resolve(doc, parameter)
                if parameter["in"] == "query":
                    yield operation["operationId"], parameter


def test_flags_are_booleans_in_the_document_and_true_or_false_on_the_wire(
    doc: dict[str, Any], api: httpx.Client, factory: Factory
) -> None:
    """A generated client passes a flag as a boolean (issue 24 item 7): the document says
    boolean, and the API takes what such a client sends, ``true`` or ``false``."""
    for operation_id, parameter in _query_parameters(doc):
        schema = parameter["schema"]
        enum = set(schema.get("enum", ()))
        assert not enum or not enum <= {"true", "false", ""}, (operation_id, parameter["name"])
    flags = {
        p["name"]: p["schema"] for _, p in _query_parameters(doc) if p["name"] == "singleEvents"
    }
    assert flags == {"singleEvents": {"type": "boolean", "default": True}}
    _, secret = factory.key(factory.owner())
    series = event_body(recurrence=["RRULE:FREQ=DAILY;COUNT=3"])
    assert api.post(EVENTS, json=series, headers=bearer(secret)).status_code == 201
    window = {"timeMin": "2026-03-01", "timeMax": "2026-03-10"}
    for flag, count in ((True, 3), (False, 1)):
        listed = api.get(EVENTS, params={**window, "singleEvents": flag}, headers=bearer(secret))
        assert listed.status_code == 200, listed.text
        assert len(listed.json()["events"]) == count


def test_every_operation_in_the_document_refuses_a_parameter_it_does_not_declare(
    doc: dict[str, Any], api: httpx.Client, factory: Factory
) -> None:
    """The document's query parameters and the ones the API takes are one declaration
    (``rest.parameters``): each operation, sent all it declares and one more, refuses that
    one alone, as 400 ``unknown_parameter`` (issue 24 item 3)."""
    _, secret = factory.key(factory.owner())
    declared = dict.fromkeys(OPERATIONS, ())
    for operation_id, parameter in _query_parameters(doc):
        declared[operation_id] = (*declared[operation_id], parameter["name"])
    assert set(declared) == {op["operationId"] for _, _, op in _all_operations(doc)}
    for path, method, operation in _all_operations(doc):
        event = api.post(EVENTS, json=event_body(), headers=bearer(secret)).json()
        url = "/api/v1" + path.replace("{eventId}", event["id"])
        options: dict[str, Any] = {"headers": bearer(secret)}
        body = operation.get("requestBody", {}).get("content", {})
        for media, content in body.items():
            example = content.get("example")
            if example is None:
                example = next(iter(content.get("examples", {}).values()))["value"]
            options["headers"]["Content-Type"] = media
            options["content"] = example if isinstance(example, str) else json.dumps(example)
        params = [(name, "1") for name in declared[operation["operationId"]]]
        answer = api.request(method, url, params=[*params, ("bogusParameter", "1")], **options)
        assert answer.status_code == 400, (operation["operationId"], answer.text)
        problem = answer.json()
        assert problem["code"] == "unknown_parameter", (operation["operationId"], problem)
        assert [e["field"] for e in problem["errors"]] == ["bogusParameter"]


def _all_operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, operation


def test_a_calendars_colour_is_in_the_document_and_in_the_answers(
    api: httpx.Client, doc: dict[str, Any], factory: Factory
) -> None:
    calendar = doc["components"]["schemas"]["Calendar"]
    assert "color" in calendar["required"]
    color = calendar["properties"]["color"]
    assert {"type": "string", "pattern": "^#[0-9A-Fa-f]{6}$"} in color["anyOf"]
    assert {"type": "null"} in color["anyOf"]
    owner = factory.owner()
    work = factory.db.call(
        calendars.create_calendar, user_id=owner.id, name="Work", color="#0B8043", now=utcnow()
    )
    _, secret = factory.key(owner)
    listed = api.get(EVENTS, headers=bearer(secret))
    _check(doc, listed, "/calendar/events", "get")
    assert [(c["id"], c["color"]) for c in listed.json()["calendars"]] == [
        (owner.default_calendar_id, None),
        (work["id"], "#0b8043"),
    ]


def test_every_webhook_event_type_is_in_the_document_and_in_the_webhook_docs(
    doc: dict[str, Any],
) -> None:
    """The deliveries' types (``triggers.kinds.EVENT_TYPES``): each a ``webhooks`` entry of the
    document with its payload's schema, each named in docs/webhooks.md."""
    assert set(doc["webhooks"]) == set(EVENT_TYPES)
    for event_type, item in doc["webhooks"].items():
        body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        envelope = _resolve(doc, body)
        assert event_type in envelope["properties"]["type"]["enum"]
        data = _resolve(doc, envelope["properties"]["data"])
        assert "event" in data["required"]
    timed = _resolve(doc, {"$ref": "#/components/schemas/WebhookTimeData"})
    assert timed["required"] == ["event", "minutesBefore", "scheduledFor", "late"]
    text = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    assert all(f"`{t}`" in text for t in EVENT_TYPES)
