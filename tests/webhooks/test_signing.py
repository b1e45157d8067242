"""The two signatures, checked against an independent verifier and a recomputation."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from pathlib import Path

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from calendar_service.delivery.webhook_settings import new_secret
from webhooks.signing import signature_headers

BODY = '{"id":"evt_1","type":"calendar.event.created","data":{"event":{"title":"Zoé"}}}'.encode()


def test_a_new_secret_is_whsec_and_the_base64_of_32_random_bytes() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert new_secret() != secret


def test_the_seed_header_is_hmac_sha256_of_the_raw_body_keyed_with_the_secret_as_shown() -> None:
    secret = new_secret()
    headers = signature_headers(
        secrets=[secret], msg_id="evt_1", timestamp=1, body=BODY, seed_header="x-calendar-signature"
    )
    expected = hmac.new(secret.encode(), BODY, hashlib.sha256).hexdigest()
    assert headers["x-calendar-signature"] == f"v1={expected}"
    assert len(expected) == 64 and expected == expected.lower()


def test_the_standard_webhooks_library_verifies_the_standard_headers() -> None:
    secret = new_secret()
    headers = signature_headers(
        secrets=[secret],
        msg_id="evt_abc",
        timestamp=int(time.time()),
        body=BODY,
        seed_header="x-calendar-signature",
    )
    assert headers["webhook-id"] == "evt_abc"
    assert Webhook(secret).verify(BODY, headers)["id"] == "evt_1"
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY + b" ", headers)


def test_a_stale_timestamp_is_refused_by_the_standard_verifier() -> None:
    secret = new_secret()
    headers = signature_headers(
        secrets=[secret],
        msg_id="evt_abc",
        timestamp=int(time.time()) - 3600,
        body=BODY,
        seed_header="x-calendar-signature",
    )
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(secret).verify(BODY, headers)


def test_two_secrets_give_two_values_in_each_header_and_either_verifies() -> None:
    new, old = new_secret(), new_secret()
    headers = signature_headers(
        secrets=[new, old],
        msg_id="evt_abc",
        timestamp=int(time.time()),
        body=BODY,
        seed_header="x-calendar-signature",
    )
    seed = [hmac.new(s.encode(), BODY, hashlib.sha256).hexdigest() for s in (new, old)]
    assert headers["x-calendar-signature"] == f"v1={seed[0]},v1={seed[1]}"
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (new, old):
        Webhook(secret).verify(BODY, headers)


def test_the_test_vectors_in_the_docs_are_what_the_service_signs() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    secret = doc.split("test secret `", 1)[1].split("`", 1)[0]
    blocks = [part.split("```", 1)[0] for part in doc.split("```http\n")[1:]]
    assert len(blocks) == 2  # a change's delivery and a time trigger's
    for block in blocks:
        head, body = block.split("\n\n", 1)
        headers = dict(line.split(": ", 1) for line in head.splitlines()[1:])
        raw = body.rstrip("\n").encode()
        made = signature_headers(
            secrets=[secret],
            msg_id=headers["webhook-id"],
            timestamp=int(headers["webhook-timestamp"]),
            body=raw,
            seed_header="x-calendar-signature",
        )
        for name, value in made.items():
            assert headers[name] == value
