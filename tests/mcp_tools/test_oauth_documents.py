"""Client ID Metadata Documents: a client known by the https URL of its metadata, fetched
through the webhooks' SSRF guard (a real TLS server on 127.0.0.1, trusted through
``SSL_CERT_FILE`` as an operator would; local addresses allowed as the test config allows them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from calendar_service.access import keys
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.mcp_tools.oauth_flow import REDIRECT_URI, Flow
from tests.support import Factory, RunningServer, make_tls, own_server, run_server


@pytest.fixture
def documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """An https server answering ``/clients/<name>.json`` with ``documents[name]``."""
    served: dict[str, Any] = {}

    async def document(request: Request) -> Response:
        served["hits"] += 1
        found = served.get(request.path_params["name"])
        return Response(status_code=404) if found is None else JSONResponse(found)

    tls = make_tls(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_file))
    app = Starlette(routes=[Route("/clients/{name}.json", document)])
    with run_server(app, ssl_certfile=str(tls.certfile), ssl_keyfile=str(tls.keyfile)) as running:
        served["base"], served["hits"] = running.url, 0
        yield served


def _publish(documents: dict[str, Any], name: str, **fields: Any) -> str:
    url = f"{documents['base']}/clients/{name}.json"
    documents[name] = {
        "client_id": url,
        "client_name": f"Document client {name}",
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none",
        **fields,
    }
    return url


def test_a_client_known_by_its_metadata_document_url_is_authorized_without_registering(
    server: RunningServer, factory: Factory, db: Database, documents: dict[str, Any]
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        flow = Flow(server, factory.owner(), http)
        flow.client_id = _publish(documents, "good")
        flow.sign_in()
        page = http.get(flow.consent_url())
        assert "Document client good" in page.text
        assert flow.client_id in page.text  # the owner sees the URL it is known by
        tokens = flow.tokens()
        assert flow.list_tools(tokens["access_token"]).status_code == 200
    listed = db.call(keys.list_keys, user_id=flow.owner.id, now=utcnow())
    assert [k["name"] for k in listed if k["kind"] == "app"] == ["Document client good"]


@pytest.mark.parametrize(
    "fields",
    [
        {"client_id": "https://elsewhere.example/clients/good.json"},  # not its own URL
        {"token_endpoint_auth_method": "client_secret_post"},  # a document client is public
        {"redirect_uris": "not a list"},
    ],
    ids=["other-client-id", "secret-method", "malformed"],
)
def test_a_metadata_document_that_does_not_describe_its_url_leaves_the_client_unknown(
    server: RunningServer,
    factory: Factory,
    documents: dict[str, Any],
    fields: dict[str, Any],
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        flow = Flow(server, factory.owner(), http)
        flow.client_id = _publish(documents, "bad", **fields)
        refused = flow.authorize()
        assert refused.status_code == 400
        assert "location" not in refused.headers
        assert refused.json()["error"] == "invalid_request"
        flow.client_id = f"{documents['base']}/clients/missing.json"  # a 404
        assert flow.authorize().status_code == 400


def test_a_metadata_document_on_a_private_address_is_not_fetched_as_deployed(
    database_url: str, factory: Factory, documents: dict[str, Any]
) -> None:
    """As deployed (local targets not allowed) the guard refuses 127.0.0.1: the client stays
    unknown, and nothing was fetched."""
    config = make_config(database_url, webhook_allow_local=False)
    with own_server(config) as strict, httpx.Client(base_url=strict.url, timeout=30) as http:
        flow = Flow(strict, factory.owner(), http)
        flow.client_id = _publish(documents, "good")
        refused = flow.authorize()
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_request"
    assert documents["hits"] == 0
