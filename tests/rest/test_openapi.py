"""The OpenAPI document is valid 3.1.0 and real responses match it."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
from openapi_spec_validator import validate

from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, RunningServer, bearer


def _document(api: httpx.Client) -> dict[str, Any]:
    response = api.get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def _check(doc: dict[str, Any], response: httpx.Response, path: str, method: str) -> None:
    """Validate a real response's status, media type and body against the document."""
    spec = doc["paths"][path][method]["responses"][str(response.status_code)]
    if "content" not in spec:
        assert response.content == b""
        return
    media = response.headers["content-type"].split(";")[0]
    schema = spec["content"][media]["schema"]
    resolver_doc = {**schema, "components": doc["components"]}
    jsonschema.validate(response.json(), resolver_doc, cls=jsonschema.Draft202012Validator)
    for header in spec.get("headers", {}):
        if header.lower().startswith("ratelimit") or header == "Request-Id":
            assert header.lower() in response.headers, header


def test_the_document_is_valid_openapi_3_1_with_version_1_0_0(
    api: httpx.Client, server: RunningServer
) -> None:
    doc = _document(api)
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["version"] == "1.0.0"
    assert doc["servers"] == [{"url": f"{server.url}/api/v1"}]
    assert api.get("/.well-known/openapi.json").json() == doc


def test_every_operation_requires_bearer_auth_and_documents_its_errors(
    api: httpx.Client,
) -> None:
    doc = _document(api)
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "Authorization: Bearer <API_KEY>. Never in the URL.",
    }
    operations = {
        op["operationId"]: op
        for item in doc["paths"].values()
        for method, op in item.items()
        if method != "parameters"
    }
    assert {
        "listCalendarEvents",
        "createCalendarEvent",
        "getCalendarEvent",
        "updateCalendarEvent",
        "deleteCalendarEvent",
    } == set(operations)
    for op in operations.values():
        assert op["security"] == [{"bearerAuth": []}]
        assert {"400", "401", "429", "500"} <= set(op["responses"])
    create = operations["createCalendarEvent"]
    assert {"201", "409", "413", "415", "422"} <= set(create["responses"])
    schema = doc["components"]["schemas"]["EventCreate"]
    assert schema["required"] == ["title", "startsAt", "endsAt"]
    assert schema["properties"]["title"]["maxLength"] == 300
    assert schema["properties"]["calendar"]["default"] == "Личное"


def test_real_responses_match_the_document(api: httpx.Client, factory: Factory) -> None:
    doc = _document(api)
    _, secret = factory.key(factory.owner())
    item = "/calendar/events/{eventId}"
    created = api.post(EVENTS, json=event_body(description="d"), headers=bearer(secret))
    _check(doc, created, "/calendar/events", "post")
    url = f"{EVENTS}/{created.json()['id']}"
    _check(doc, api.get(EVENTS, headers=bearer(secret)), "/calendar/events", "get")
    _check(doc, api.post(EVENTS, json={}, headers=bearer(secret)), "/calendar/events", "post")
    _check(doc, api.get(EVENTS), "/calendar/events", "get")
    _check(doc, api.get(url, headers=bearer(secret)), item, "get")
    _check(doc, api.patch(url, json={"title": "t"}, headers=bearer(secret)), item, "patch")
    _check(doc, api.delete(url, headers=bearer(secret)), item, "delete")
    _check(doc, api.get(url, headers=bearer(secret)), item, "get")
