"""``REPORT``: ``calendar-query`` (RFC 4791 §7.8, time ranges with and without ``expand``),
``calendar-multiget`` (§7.9) and ``sync-collection`` (RFC 6578), each on one calendar.

What a report reads is read in its transaction (which events match, their rows); what takes
CPU (expanding series, writing the objects' text, the XML) is left for after it, off the event
loop (a ``later.Later``, which ``gateway.finished`` runs on a thread).

- A window with both bounds is matched as the list matches it (``events.list_events``, one
  page of up to ``MAX_LIMIT`` occurrences, occurrence by occurrence): an object matches when
  one of its occurrences overlaps the window. Past one page, every series that spans the window
  is answered (a superset, never fewer). An open window matches by the events' spans
  (``objects.matching``).
- ``sync-collection`` reads the same change feed as the list's sync tokens
  (``events.sync.sync_events``): its token is such a token, for this one calendar.
- Filters: ``comp-filter``, ``time-range``, and ``prop-filter`` with a ``text-match`` on
  UID, SUMMARY, DESCRIPTION or LOCATION (what clients look objects up by); any other is
  refused (403 ``CALDAV:supported-filter``): nothing is answered that the filter would not
  have kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import CalendarRow
from calendar_service.calendar.event_input import MAX_LIMIT
from calendar_service.calendar.events.listing import list_events_later
from calendar_service.calendar.events.sync import current_position, sync_events
from calendar_service.calendar.recurrence.ids import split_occurrence_id
from calendar_service.interop.caldav import objects
from calendar_service.interop.caldav.asked import (
    CalendarQuery,
    Multiget,
    Report,
    SyncCollection,
    TextMatch,
    Wanted,
    Window,
)
from calendar_service.interop.caldav.names import Found, Gone, Kept, Multistatus, Value, c, d
from calendar_service.interop.caldav.resources import (
    SYNC_TOKEN_PREFIX,
    Place,
    answer,
    href_path,
    locate,
    object_properties,
    sync_token,
)
from calendar_service.interop.ical.export import reminder_of
from calendar_service.platform.deferred import Later, finish
from calendar_service.platform.errors import (
    BadRequest,
    CalendarError,
    DavRefused,
    SyncTokenExpired,
    ValidationFailed,
)
from calendar_service.platform.lru import Lru
from calendar_service.platform.timeutil import format_utc

MAX_SYNC_PAGES = 40  # of MAX_LIMIT changes each
MAX_HREFS = 5000  # in one multiget


def report(
    conn: Connection,
    *,
    principal: Principal,
    path: str,
    asked: Report | None,
    problem: CalendarError | None,
    token_key: bytes,
) -> Multistatus | Later:
    """The ``multistatus`` answer to the REPORT ``asked`` on ``path`` (``problem``: what its
    document asks that cannot be answered), as a ``Later`` when there is work left to do."""
    place = locate(conn, principal=principal, path=path)
    if problem is not None:
        raise problem
    assert asked is not None
    if place.kind != "calendar" or place.calendar is None:
        raise DavRefused("Ask a calendar collection for this report.", d("supported-report"))
    if isinstance(asked, CalendarQuery):
        return _query(conn, principal, place, asked, token_key)
    if isinstance(asked, Multiget):
        return _multiget(conn, principal, place, asked, token_key)
    return _sync(conn, principal, place, asked, token_key)


def _listed(
    conn: Connection, principal: Principal, calendar: CalendarRow, window: Window, key: bytes
) -> dict[str, Any] | Later:
    """The list's first page of occurrences in ``window`` (both bounds), maybe a ``Later``."""
    low, high = window
    assert low is not None and high is not None
    return list_events_later(
        conn,
        principal=principal,
        time_min=format_utc(low),
        time_max=format_utc(high),
        limit=MAX_LIMIT,
        token_key=key,
        single_events=True,
        calendar_ids=[calendar.id],
    )


def _by_object(listed: dict[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], bool]:
    """The occurrences listed, by the object (event or series) each belongs to; and whether
    the page was the last."""
    found: dict[str, list[dict[str, Any]]] = {}
    for event in listed["events"]:
        found.setdefault(event.get("recurringEventId") or event["id"], []).append(event)
    return found, "nextPageToken" not in listed


def _query(
    conn: Connection, principal: Principal, place: Place, asked: CalendarQuery, key: bytes
) -> Multistatus | Later:
    calendar = place.calendar
    assert calendar is not None
    wanted, window, texts, expand = asked.wanted, asked.window, asked.texts, asked.wanted.expand
    if not asked.possible:
        return Multistatus()
    low, high = window
    exact = _listed(conn, principal, calendar, window, key) if low and high else None
    if isinstance(exact, dict) and "nextPageToken" not in exact and expand is None:
        return _from_list(conn, place, calendar, exact["events"], wanted, texts)
    if low is None and high is None:
        candidates = objects.load_all(conn, calendar=calendar)
    elif isinstance(exact, dict) and "nextPageToken" not in exact:
        # The list is whole already (no series to expand): its objects are the answer.
        candidates = objects.load(conn, calendar=calendar, event_ids=_by_object(exact)[0])
    else:
        ids = objects.matching(conn, calendar=calendar, low=low, high=high)
        candidates = objects.load(conn, calendar=calendar, event_ids=ids)
    expanding = None
    if expand is not None:
        expanding = exact if expand == window else _listed(conn, principal, calendar, expand, key)

    def made() -> Multistatus:
        chosen = candidates
        if exact is not None:
            listed, last = _by_object(finish(exact))
            if last:
                chosen = {k: v for k, v in candidates.items() if k in listed}
        if texts:
            chosen = {k: v for k, v in chosen.items() if all(t.holds(v) for t in texts)}
        occurrences = None
        if expanding is not None:
            occurrences, _ = _by_object(finish(expanding))
        return _answer(place, calendar, chosen.values(), wanted, occurrences)

    return Later(made)


def _from_list(
    conn: Connection,
    place: Place,
    calendar: CalendarRow,
    events: list[dict[str, Any]],
    wanted: Wanted,
    texts: Sequence[TextMatch],
) -> Multistatus:
    """A time range's objects from the list's whole page (``events``): each single event
    answered from its public object (no second read of its row), each series that occurs in
    the window read with its changed occurrences (``load``, or kept: ``_series_objects``).
    Each response is made only when asked for (``Kept``), keyed by what its object's ETag is
    made of, the calendar's path and what was asked for: the front keeps it written, and
    answers a week asked for before, at the same versions, at once."""
    singles = [e for e in events if "recurringEventId" not in e]
    series_ids = {e["recurringEventId"] for e in events if "recurringEventId" in e}
    reminder = reminder_of(conn, calendar=calendar)
    uids = objects.uids_of(conn, calendar=calendar, event_ids=[e["id"] for e in singles])
    series = _series_objects(conn, calendar, series_ids, reminder) if series_ids else []
    shape = (wanted.names, wanted.allprop, wanted.propname, wanted.calendar_data)
    status = Multistatus()
    for event in singles:
        event_id = event["id"]
        uid, named = uids.get(event_id, (event_id, None))
        # What its ETag is made of (``objects.listed_etag``), without the digest; and its name.
        made_of = (event_id, event["updatedAt"], uid, calendar.time_zone, reminder, named)

        def single(
            event: dict[str, Any] = event, uid: str = uid, named: str | None = named
        ) -> Found | None:
            etag = objects.listed_etag(uid, event, calendar, reminder)
            obj = objects.listed(event, uid, calendar, reminder, etag, named)
            if texts and not all(t.holds(obj) for t in texts):
                return None
            return _response(place, calendar, obj, wanted, None)

        key = None if texts else (made_of, place.path, shape)
        status.responses.append(Kept(key, single))
    for obj in series:
        if texts and not all(t.holds(obj) for t in texts):
            continue

        def one(obj: objects.DavObject = obj) -> Found:
            return _response(place, calendar, obj, wanted, None)

        status.responses.append(Kept((obj.etag, place.path, shape), one))
    return status


# A calendar's series objects, by the calendar's series version (``calendars.series_version``,
# which every write of a series or of a changed occurrence moves, in the write's transaction),
# its zone and the owner's reminder: a week's series are read once, not at every report.
_SERIES = Lru(256)


def _series_objects(
    conn: Connection, calendar: CalendarRow, ids: set[str], reminder: int | None
) -> list[objects.DavObject]:
    """The objects of the series ``ids`` of ``calendar``, read (``objects.load``) only when
    not kept for the calendar's current series version."""
    if calendar.series_version is None:
        return list(objects.load(conn, calendar=calendar, event_ids=ids).values())
    key = (calendar.id, calendar.series_version, calendar.time_zone, reminder)
    kept: dict[str, objects.DavObject] | None = _SERIES.get(key)
    if kept is None:
        kept = {}
        _SERIES.put(key, kept)
    missing = [i for i in ids if i not in kept]
    if missing:
        kept.update(objects.load(conn, calendar=calendar, event_ids=missing))
    return [kept[i] for i in ids if i in kept]


def _response(
    place: Place,
    calendar: CalendarRow,
    obj: objects.DavObject,
    wanted: Wanted,
    occurrences: dict[str, list[dict[str, Any]]] | None,
) -> Found:
    """An object's ``DAV:response`` (with its text, if asked for)."""
    extra: dict[str, Value] = {}
    if wanted.calendar_data:
        if occurrences is not None:
            data = objects.expanded(obj, occurrences.get(obj.event_id, []))
        else:
            data = objects.render(obj, calendar)
        extra[c("calendar-data")] = data.decode()
    return answer(place.path + obj.name, object_properties(obj), wanted, extra)


def _answer(
    place: Place,
    calendar: CalendarRow,
    found: Iterable[objects.DavObject],
    wanted: Wanted,
    occurrences: dict[str, list[dict[str, Any]]] | None,
    missing: Sequence[str] = (),
    token: str | None = None,
) -> Multistatus:
    """The multistatus of ``found`` objects (with their text, if asked for), then
    ``missing`` hrefs (404) and the sync ``token``."""
    status = Multistatus(sync_token=token)
    for obj in found:
        status.responses.append(_response(place, calendar, obj, wanted, occurrences))
    status.responses.extend(Gone(href) for href in missing)
    return status


def _multiget(
    conn: Connection, principal: Principal, place: Place, asked: Multiget, key: bytes
) -> Later:
    calendar = place.calendar
    assert calendar is not None
    wanted, hrefs, expand = asked.wanted, asked.hrefs, asked.wanted.expand
    if len(hrefs) > MAX_HREFS:
        raise BadRequest(f"A calendar-multiget names at most {MAX_HREFS} objects.")
    ids: dict[str, str] = {}  # event id: href asked for
    missing: list[str] = []
    for href in hrefs:
        path = href_path(href)
        name = path[len(place.path) :] if path.startswith(place.path) else ""
        named = bool(name) and "/" not in name
        event_id = objects.event_id_named(conn, calendar=calendar, name=name) if named else None
        if event_id is None:
            missing.append(href)
        else:
            ids[event_id] = href
    found = objects.load(conn, calendar=calendar, event_ids=ids)
    missing += [href for event_id, href in ids.items() if event_id not in found]
    expanding = None if expand is None else _listed(conn, principal, calendar, expand, key)

    def made() -> Multistatus:
        occurrences = None if expanding is None else _by_object(finish(expanding))[0]
        return _answer(place, calendar, found.values(), wanted, occurrences, missing)

    return Later(made)


def _sync(
    conn: Connection, principal: Principal, place: Place, asked: SyncCollection, key: bytes
) -> Later:
    calendar = place.calendar
    assert calendar is not None
    wanted, given = asked.wanted, asked.token
    chosen = [calendar.id]
    if not given:  # the first sync: everything, and where it stands
        position = current_position(conn)
        found = objects.load_all(conn, calendar=calendar)
        token = sync_token(key, principal, position, calendar)
        return Later(lambda: _answer(place, calendar, found.values(), wanted, None, [], token))
    if not given.startswith(SYNC_TOKEN_PREFIX):
        raise _bad_token()
    changed: set[str] = set()
    gone: set[str] = set()
    try:
        result = sync_events(
            conn,
            principal=principal,
            sync_token=given[len(SYNC_TOKEN_PREFIX) :],
            limit=MAX_LIMIT,
            token_key=key,
            calendar_ids=chosen,
        )
        for _ in range(MAX_SYNC_PAGES):
            _take(result["events"], changed, gone)
            if "nextPageToken" not in result:
                break
            result = sync_events(
                conn,
                principal=principal,
                sync_token=None,
                page_token=result["nextPageToken"],
                limit=MAX_LIMIT,
                token_key=key,
                calendar_ids=chosen,
            )
        else:
            raise DavRefused(
                "Too many changes since this token: sync again without one.",
                d("number-of-matches-within-limits"),
            )
    except (ValidationFailed, SyncTokenExpired):
        raise _bad_token() from None
    found = objects.load(conn, calendar=calendar, event_ids=changed)
    deleted = [i for i in gone if i not in found]
    uids = objects.uids_of(conn, calendar=calendar, event_ids=deleted)
    missing = [place.path + objects.name_of(*uids.get(i, (i, None))) for i in sorted(deleted)]
    token = SYNC_TOKEN_PREFIX + str(result["nextSyncToken"])
    return Later(lambda: _answer(place, calendar, found.values(), wanted, None, missing, token))


def _take(events: list[dict[str, Any]], changed: set[str], gone: set[str]) -> None:
    """Sort a sync's changes into objects changed and objects gone."""
    for event in events:
        series = event.get("recurringEventId")
        if series:  # an occurrence changed or cancelled: its series' object changed
            changed.add(series)
        elif event.get("status") == "cancelled":  # a tombstone
            split = split_occurrence_id(event["id"])
            if split is not None:  # a changed occurrence's row, gone with or from its series
                changed.add(split[0])
            else:
                gone.add(event["id"])
        else:
            changed.add(event["id"])


def _bad_token() -> CalendarError:
    return DavRefused(
        "The sync-token is not one this server issued for this calendar and key, or is too "
        "old: sync again without one.",
        d("valid-sync-token"),
    )


__all__ = ["report"]
