"""``served_address``: the address ``serve`` records for the commands that print links, on the
real database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from calendar_service.platform import served_address
from calendar_service.platform.db import Database
from calendar_service.platform.errors import ConfigError
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.support import fresh_database_url, migrated_database


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Database]:
    """A database of its own: what ``serve`` recorded in the shared one is not this test's."""
    with fresh_database_url(tmp_path) as url, migrated_database(make_config(url)) as db:
        yield db


def test_the_last_serve_to_start_is_the_address_links_use(fresh: Database) -> None:
    assert fresh.call(served_address.recorded) is None
    fresh.call(served_address.record, base_url="http://127.0.0.1:9101/", now=utcnow())
    fresh.call(served_address.record, base_url="http://127.0.0.1:9102", now=utcnow())
    assert fresh.call(served_address.recorded) == "http://127.0.0.1:9102"
    assert fresh.call(served_address.link_base, configured=None) == "http://127.0.0.1:9102"
    configured = "https://calendar.example.com/"
    assert fresh.call(served_address.link_base, configured=configured) == configured[:-1]


def test_without_a_serve_or_a_base_url_no_link_base_is_guessed(fresh: Database) -> None:
    for configured in (None, "", "  "):
        with pytest.raises(ConfigError, match="Set CALENDAR_BASE_URL"):
            fresh.call(served_address.link_base, configured=configured)


def test_an_address_too_long_to_keep_forgets_the_earlier_one(fresh: Database) -> None:
    fresh.call(served_address.record, base_url="http://127.0.0.1:9101", now=utcnow())
    long = "https://calendar.example.com/" + "a" * 200
    fresh.call(served_address.record, base_url=long, now=utcnow())
    assert fresh.call(served_address.recorded) is None
