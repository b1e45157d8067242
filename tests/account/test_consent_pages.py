"""The consent page of OAuth for remote MCP, over HTTP: what the owner is shown, the choices
checked as a key's are, and a request answered only once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from calendar_service.access import keys
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import csrf_from, text_of
from tests.mcp_tools.oauth_flow import Flow, query_of
from tests.support import Factory, RunningServer


@pytest.fixture
def flow(server: RunningServer, factory: Factory) -> Iterator[Flow]:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        started = Flow(server, factory.owner(), http)
        started.register(client_name="Planner <b>bot</b>")
        started.sign_in()
        yield started


def test_the_page_names_the_app_and_where_it_returns_and_lets_its_form_go_there_only(
    flow: Flow,
) -> None:
    page = flow.http.get(flow.consent_url())
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Connect “Planner &lt;b&gt;bot&lt;/b&gt;”?" in text  # the name as text, escaped
    assert "<b>bot</b>" not in page.text
    assert "127.0.0.1:9" in text
    csp = page.headers["content-security-policy"]
    assert "form-action 'self' http://127.0.0.1:9;" in csp
    assert page.headers["cache-control"] == "no-store"


def test_a_calendar_of_another_owner_is_refused_on_the_page_and_nothing_is_issued(
    flow: Flow, factory: Factory, db: Database
) -> None:
    stranger = factory.owner()
    url = flow.consent_url()
    refused = flow.consent(url, calendar=stranger.default_calendar_id)
    assert refused.status_code == 400
    assert "no calendar" in text_of(refused.text)
    allowed = flow.consent(url, calendar=flow.owner.default_calendar_id, permission="read")
    assert allowed.status_code == 303
    assert "code" in query_of(allowed.headers["location"])
    tokens = flow.exchange(query_of(allowed.headers["location"])["code"]).json()
    assert tokens["scope"] == "calendar:read"
    [app] = [
        k
        for k in db.call(keys.list_keys, user_id=flow.owner.id, now=utcnow())
        if k["kind"] == "app"
    ]
    assert (app["permission"], app["calendarId"]) == ("read", flow.owner.default_calendar_id)


def test_a_request_is_answered_once_and_an_unknown_one_is_not_found(flow: Flow) -> None:
    url = flow.consent_url()
    page = flow.http.get(url)
    assert flow.consent(url).status_code == 303
    again = flow.http.post(
        url,
        data={
            "csrf_token": csrf_from(page.text),
            "permission": "write",
            "expires": "30d",
            "calendar": "",
            "decision": "allow",
        },
    )
    assert again.status_code == 404
    assert flow.http.get(url).status_code == 404
    assert flow.http.get(f"{flow.server.url}/settings/connect/oar_nothing").status_code == 404


def test_a_grant_ending_within_the_hour_is_refused_as_a_keys_is(flow: Flow) -> None:
    url = flow.consent_url()
    soon = (utcnow() + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    refused = flow.consent(url, expires="custom", expires_on=soon)
    assert refused.status_code == 400
    assert "is less than an hour from now" in text_of(refused.text)
    assert flow.consent(url, expires="7d").status_code == 303


def test_the_owner_makes_an_apps_deletions_wait_on_the_consent_page(
    flow: Flow, db: Database
) -> None:
    page = text_of(flow.http.get(flow.consent_url()).text)
    assert "Wait for my approval" in page
    refused = flow.consent(flow.consent_url(), approval="maybe")
    assert refused.status_code == 400 and "approval" in refused.text
    code = flow.code(approval="destructive")
    assert flow.exchange(code).status_code == 200
    [app] = [
        k
        for k in db.call(keys.list_keys, user_id=flow.owner.id, now=utcnow())
        if k["kind"] == "app"
    ]
    assert app["approval"] == "destructive"
