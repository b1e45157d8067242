"""A subscription feed fetched, in the core (``ical.feeds.fetch_feed``): the text rendered
once per version, 304 for a matching ``If-None-Match``, a revoked feed's fetch recorded and
then refused as an unknown one is, and every fetch in the feed's history."""

from __future__ import annotations

import asyncio

import pytest

from calendar_service.interop.ical import feeds
from calendar_service.platform.db import Database
from calendar_service.platform.errors import NotFound
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory


def _fetch(db: Database, cache: feeds.RenderedFeeds, token: str, **given: str) -> feeds.Fetched:
    return asyncio.run(
        feeds.fetch_feed(
            db=db,
            token=token,
            now=utcnow(),
            if_none_match=given.get("if_none_match"),
            client_addr="192.0.2.7",
            user_agent="Calendar/1.0",
            cache=cache,
        )
    )


def test_a_feed_fetch_is_rendered_once_answered_304_when_unchanged_and_recorded(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    feed = db.call(
        feeds.create_feed,
        user_id=owner.id,
        calendar_id=owner.default_calendar_id,
        base_url="http://x",
        now=utcnow(),
    )
    token = feed["url"].rsplit("/", 1)[1].removesuffix(".ics")
    cache = feeds.RenderedFeeds()
    first = _fetch(db, cache, token)
    assert first.status == 200 and first.rendered.body.startswith(b"BEGIN:VCALENDAR")
    assert _fetch(db, cache, token).rendered is first.rendered  # not rendered again
    unchanged = _fetch(db, cache, token, if_none_match=f'W/{first.rendered.etag}, "other"')
    assert unchanged.status == 304
    assert feeds.etag_matches("*", first.rendered.etag)
    assert not feeds.etag_matches('"other"', first.rendered.etag)
    db.call(feeds.revoke_feed, user_id=owner.id, feed_id=feed["id"], now=utcnow())
    with pytest.raises(NotFound):
        _fetch(db, cache, token)
    with pytest.raises(NotFound):
        _fetch(db, cache, "x" * feeds.TOKEN_CHARS)
    history = db.call(feeds.list_fetches, user_id=owner.id, feed_id=feed["id"])
    assert sorted(f["status"] for f in history) == [200, 200, 304, 404]
