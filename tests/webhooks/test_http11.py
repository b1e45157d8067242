"""The webhook client (``webhooks.http11``) against real receivers on 127.0.0.1: connections kept
alive per receiver and only to checked addresses, answers cut at the size cap, connections
cut short by the deadline never used again, chunked answers, TLS."""

from __future__ import annotations

import ipaddress

import pytest

from calendar_service.delivery import webhook_targets
from calendar_service.platform.timeutil import utcnow
from tests.support import TLSFiles
from tests.webhooks.support import Receiver, Reply
from webhooks import sender
from webhooks.http11 import RequestFailed, WebhookClient
from webhooks.transport import make_client


async def attempt(client: WebhookClient, url: str, deadline: float = 5.0) -> sender.AttemptResult:
    return await sender.attempt(
        client,
        url=url,
        msg_id="evt_http11",
        body=b'{"hello":"world"}',
        secrets=["whsec_" + "A" * 44],
        seed_header="x-calendar-signature",
        allow_local=True,
        deadline=deadline,
        now=utcnow(),
    )


async def test_one_connection_serves_a_receivers_requests_one_after_another(
    plain_receiver: Receiver,
) -> None:
    url = plain_receiver.url(200, 201, 202)
    async with make_client() as client:
        codes = [(await attempt(client, url)).status_code for _ in range(3)]
        assert client.connections_opened == 1 and client.requests_sent == 3
    assert codes == [200, 201, 202]
    received = plain_receiver.received(url)
    assert [r.body for r in received] == [b'{"hello":"world"}'] * 3
    headers = received[0].headers
    assert headers["content-length"] == "17" and headers["content-type"] == "application/json"
    assert headers["host"] == plain_receiver.base_url.removeprefix("http://")
    assert headers["user-agent"] == "calendar-service-webhooks/1"
    assert headers["webhook-id"] == "evt_http11"


async def test_a_large_answer_is_cut_at_the_cap_and_its_connection_not_used_again(
    plain_receiver: Receiver,
) -> None:
    url = plain_receiver.url(Reply(status=500, body=b"x" * 200_000), 200)
    async with make_client() as client:
        first = await attempt(client, url)
        second = await attempt(client, url)
        assert client.connections_opened == 2
    assert first.status_code == 500 and first.error == "HTTP 500"
    assert first.response_excerpt == "x" * sender.RESPONSE_EXCERPT_CHARS
    assert second.status_code == 200 and second.response_excerpt == "ok"


async def test_a_chunked_answer_and_its_retry_after_are_read(plain_receiver: Receiver) -> None:
    # No content-length in the reply: uvicorn sends the body chunked.
    reply = Reply(status=503, headers={"retry-after": "120"}, body=b"busy")
    url = plain_receiver.url(reply, 200)
    async with make_client() as client:
        first = await attempt(client, url)
        second = await attempt(client, url)
        assert client.connections_opened == 1  # read to its end: kept alive
    assert first.status_code == 503 and first.response_excerpt == "busy"
    assert first.retry_after == 120.0
    assert second.ok


async def test_a_connection_cut_short_by_the_deadline_is_closed(plain_receiver: Receiver) -> None:
    url = plain_receiver.url(Reply(hold=3.0), 200)
    async with make_client() as client:
        late = await attempt(client, url, deadline=0.3)
        then = await attempt(client, url)
        assert client.connections_opened == 2
    assert late.status_code is None and late.error == "timed out after 0.3 s"
    assert then.ok


async def test_a_kept_connection_goes_only_to_an_address_of_the_latest_check(
    plain_receiver: Receiver,
) -> None:
    url = plain_receiver.url(200, 200)
    port = int(plain_receiver.base_url.rsplit(":", 1)[-1])
    checked = webhook_targets.check_target(
        url, allow_local=True, resolve=webhook_targets.system_resolve
    )
    # The same URL, now pinned to another address where nothing listens (as if its name
    # resolved elsewhere): the connection to 127.0.0.1 is not used for it.
    elsewhere = webhook_targets.Target(
        url=url, host=checked.host, port=port, addresses=(ipaddress.ip_address("127.0.0.9"),)
    )
    async with make_client() as client:
        first = await client.post(checked, body=b"{}", headers={}, max_body=100)
        with pytest.raises(RequestFailed, match=r"^connection failed"):
            await client.post(elsewhere, body=b"{}", headers={}, max_body=100)
        assert client.connections_opened == 1
    assert first.status == 200
    assert len(plain_receiver.received(url)) == 1


async def test_tls_connections_are_kept_alive_too(receiver: Receiver, tls: TLSFiles) -> None:
    url = receiver.url(200, 200)
    async with make_client(verify=tls.client_context()) as client:
        results = [await attempt(client, url) for _ in range(2)]
        assert client.connections_opened == 1
    assert all(r.ok for r in results), [r.error for r in results]
