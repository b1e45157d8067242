"""Every settings page fits a phone (390 px), a small laptop (1024 px) and a desktop (1280 px):
nothing makes the page scroll sideways, with realistic data (long names, a key limited to a
calendar, many calls, a failing webhook).

Screenshots of each page at each width go to artifacts/screenshots/layout-<page>-<width>.png.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from calendar_service.access import keys
from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import receiver, screenshot
from tests.support import Factory, Owner, RunningServer, bearer, wait_for
from tests.webhooks.support import set_webhook

EVENTS = "/api/v1/calendar/events"
WIDTHS = [390, 1024, 1280]
LONG_CALENDAR = "Family & friends — shared with the grandparents in Lisbon and Porto"
BOOKINGS_KEY = "Zapier: new bookings from the website contact form → Work calendar (marketing)"
MACHINE_KEY = "crm_sync_production_eu_west_1_integration_account_7f3c9a2b41d0e8f6"
AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36 zapier-platform-core/15.5.1"
)
CAREFUL_KEY = "Claude (connected from the phone app, asks before changing anything important)"
MEETING_LINK = "https://meet.example.com/j/8837261940?pwd=Q2xXUXdhY0tqN2RjZ3V5c0p4dWRrZz09"


@dataclass
class Seeded:
    owner: Owner
    key_id: str
    machine_key_id: str
    revoked_key_id: str
    event_id: str
    delivery_id: str


@pytest.fixture(scope="module")
def seeded(factory: Factory, server: RunningServer) -> Seeded:
    """An owner with long and machine-made names, keys of every kind, 120 calls, events, and a
    webhook whose deliveries succeeded and failed."""
    owner = factory.owner()
    family = factory.calendar(owner, name=LONG_CALENDAR, time_zone="America/Los_Angeles")
    work = factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    expires = utcnow() + timedelta(days=90)
    key_id, secret = factory.key(owner, name=BOOKINGS_KEY, expires_at=expires, calendar_id=work)
    machine_key_id, machine_secret = factory.key(
        owner, name=MACHINE_KEY, permission="write", expires_at=expires
    )
    factory.key(owner, name="Assistant", permission="read", calendar_id=family)
    revoked_key_id, _ = factory.key(owner, name="Old laptop script (replaced in March)")
    factory.db.call(keys.revoke_key, user_id=owner.id, key_id=revoked_key_id, now=utcnow())

    # Many calls of every kind, so that the history pages and its chart are full.
    now = utcnow()

    def calls(conn: Any) -> None:
        for n in range(120, 0, -1):  # oldest first, as calls arrive
            record_call(
                conn,
                CallRecord(
                    key_id=key_id,
                    at=now - timedelta(hours=n * 5 + 1),
                    transport="mcp" if n % 3 == 0 else "rest",
                    operation="createCalendarEvent" if n % 2 else "listCalendarEvents",
                    method="POST" if n % 2 else "GET",
                    path="/mcp" if n % 3 == 0 else f"{EVENTS}/evt_01hzx8k2m4q6s8u0w2y4a6c8e{n:03d}",
                    status=[200, 201, 401, 404, 422, 500][n % 6],
                    latency_ms=3.5 + n,
                    client_addr="2001:db8:85a3:8d3:1319:8a2e:370:7348",
                    user_agent=AGENT,
                    request_id=f"req_01hzx8k2m4q6s8u0w2y4a6c8e{n:03d}",
                ),
            )

    factory.db.call(calls)

    def answer(body: bytes) -> tuple[int, bytes]:
        return (500, b"Internal Server Error") if b"Cancelled" in body else (204, b"")

    with receiver(answer) as (url, _), httpx.Client(base_url=server.url, timeout=30) as api:
        long_url = url + "/" + "a1b2c3d4e5f6" * 12 + "?source=calendar-service&team=marketing"
        set_webhook(factory.db, owner, long_url)

        def create(body: dict[str, Any], key: str = secret) -> str:
            made = api.post(EVENTS, json=body, headers={**bearer(key), "User-Agent": AGENT})
            assert made.status_code == 201, made.text
            return str(made.json()["id"])

        event_id = create(
            {
                "title": "Quarterly planning with the product, design and engineering leads "
                "(bring laptops and the Q3 numbers)",
                "startsAt": "2031-03-04T09:30:00+01:00",
                "endsAt": "2031-03-04T11:00:00+01:00",
                "location": MEETING_LINK,
                "description": "Agenda in the shared folder.",
            }
        )
        create(
            {
                "title": "Dentist",
                "startsAt": "2031-03-05T08:00:00Z",
                "endsAt": "2031-03-05T08:30:00Z",
            }
        )
        create(
            {
                "calendarId": family,
                "title": "Grandma's 80th birthday lunch",
                "startsAt": "2031-06-14T12:30:00-07:00",
                "endsAt": "2031-06-14T16:00:00-07:00",
                "location": "Restaurante O Velho Eurico, Largo de São Cristóvão 3, Lisboa",
            },
            key=machine_secret,
        )
        # A change that waits for the owner (Pending), from a key whose updates wait.
        _, careful = factory.key(
            owner, name=CAREFUL_KEY, permission="write", approval="destructive", expires_at=expires
        )
        waits = api.patch(
            f"{EVENTS}/{event_id}",
            json={"location": MEETING_LINK + "&room=" + "b" * 40, "title": "Quarterly planning"},
            headers=bearer(careful),
        )
        assert waits.status_code == 202, waits.text
        for _ in range(3):
            api.get(EVENTS, headers={**bearer(secret), "User-Agent": AGENT})
        wait_for(
            lambda: all(
                d["status"] == "succeeded"
                for d in factory.db.call(webhook_config.list_deliveries, user_id=owner.id)
            ),
            what="the first deliveries to succeed",
        )
        create(
            {
                "title": "Cancelled: offsite",
                "startsAt": "2031-04-01",
                "endsAt": "2031-04-02",
                "allDay": True,
            }
        )

        def failed() -> list[dict[str, Any]]:
            listed = factory.db.call(webhook_config.list_deliveries, user_id=owner.id)
            return [d for d in listed if d["status"] == "failed"]

        delivery_id = wait_for(failed, timeout=30, what="the failing delivery to fail")[0]["id"]
        endpoint = factory.db.call(webhook_config.get_endpoint, user_id=owner.id)
        if endpoint["status"] == "disabled":
            factory.db.call(webhook_config.enable_endpoint, user_id=owner.id, now=utcnow())

    return Seeded(owner, key_id, machine_key_id, revoked_key_id, event_id, delivery_id)


@pytest.fixture(scope="module")
def contexts(browser: Any, server: RunningServer, seeded: Seeded) -> Iterator[dict[int, Any]]:
    """One signed-in browser context per width, shared by this module's tests."""
    made: dict[int, Any] = {}
    try:
        for width in WIDTHS:
            context = _context(browser, server, width)
            tab = context.new_page()
            tab.goto("/settings/sign-in")
            tab.get_by_label("Email").fill(seeded.owner.email)
            tab.get_by_label("Password").fill(seeded.owner.password)
            tab.get_by_role("button", name="Sign in").click()
            tab.wait_for_url("**/settings/keys")
            tab.close()
            made[width] = context
        yield made
    finally:
        for context in made.values():
            context.close()


def _context(browser: Any, server: RunningServer, width: int) -> Any:
    return browser.new_context(
        base_url=server.url,
        viewport={"width": width, "height": 900},
        device_scale_factor=1,
        locale="en-GB",
        timezone_id="UTC",
    )


def _key_created(tab: Any, seeded: Seeded) -> None:
    tab.goto("/settings/keys")
    tab.get_by_label("Name").fill("Booking widget on the marketing site (staging)")
    tab.get_by_role("button", name="Create key").click()
    expect(tab.get_by_text("it is shown only this once")).to_be_visible()


def _keys_with_errors(tab: Any, seeded: Seeded) -> None:
    tab.goto("/settings/keys")
    tab.get_by_label("Name").fill("Expires on no date")
    tab.get_by_label("Expires after").select_option("custom")
    tab.get_by_role("button", name="Create key").click()
    expect(tab.locator(".field-error").first).to_be_visible()


def _event_form_with_errors(tab: Any, seeded: Seeded) -> None:
    tab.goto(f"/settings/events/{seeded.event_id}/edit")
    tab.locator("#end_date").fill("2031-03-01")
    tab.get_by_role("button", name="Save event").click()
    expect(tab.locator(".field-error").first).to_be_visible()


def _rules_with_errors(tab: Any, seeded: Seeded) -> None:
    tab.goto("/settings/rules")
    tab.get_by_label("Book meetings only within these hours").check()
    tab.get_by_label("Monday").first.fill("17:00-09:00")
    tab.get_by_role("button", name="Save the rules").click()
    expect(tab.locator(".field-error").first).to_be_visible()


def _webhook_secret(tab: Any, seeded: Seeded) -> None:
    tab.goto("/settings/webhook")
    tab.get_by_role("button", name="Rotate the signing secret").click()
    expect(tab.get_by_label("Signing secret")).to_be_visible()


def _goto(path: str) -> Callable[[Any, Seeded], None]:
    def go(tab: Any, seeded: Seeded) -> None:
        answer = tab.goto(
            path.format(
                key=seeded.key_id,
                machine_key=seeded.machine_key_id,
                revoked=seeded.revoked_key_id,
                event=seeded.event_id,
                delivery=seeded.delivery_id,
            )
        )
        assert answer.status in (200, 404), answer.status

    return go


PAGES: dict[str, Callable[[Any, Seeded], None]] = {
    "sign-in": _goto("/settings/sign-in"),
    "keys": _goto("/settings/keys"),
    "keys-form-errors": _keys_with_errors,
    "key-created": _key_created,
    "revoke-confirm": _goto("/settings/keys/{machine_key}/revoke"),
    "calls-of-unused-key": _goto("/settings/keys/{machine_key}/calls"),
    "calls": _goto("/settings/keys/{key}/calls"),
    "calls-of-revoked-key": _goto("/settings/keys/{revoked}/calls"),
    "webhook": _goto("/settings/webhook"),
    "webhook-secret": _webhook_secret,
    "webhook-delivery": _goto("/settings/webhook/deliveries/{delivery}"),
    "calendars": _goto("/settings/calendars"),
    "event-new": _goto("/settings/events/new"),
    "event-edit": _goto("/settings/events/{event}/edit"),
    "event-form-errors": _event_form_with_errors,
    "event-delete": _goto("/settings/events/{event}/delete"),
    "pending": _goto("/settings/pending"),
    "rules": _goto("/settings/rules"),
    "rules-form-errors": _rules_with_errors,
    "activity": _goto("/settings/activity"),
    "activity-of-an-event": _goto("/settings/activity?event={event}"),
    "activity-filtered": _goto("/settings/activity?key={key}&since=2020-01-01&until=2090-12-31"),
    "key-undo": _goto("/settings/keys/{machine_key}/undo?since=all"),
    "error": _goto("/settings/keys/key_that_does_not_exist_0123456789abcdef/calls"),
}

# How far the page's content reaches to the right, and the page's own width.
_OVERFLOW = """() => ({
  scrollWidth: document.documentElement.scrollWidth,
  clientWidth: document.documentElement.clientWidth,
  innerWidth: window.innerWidth,
})"""


# Text that reaches past the window's edges, where nobody can read it: overflowing a box that
# clips it (a table's rounded corners) does not widen the page but hides the text all the same.
# Left out: what a scrolling box holds (a <pre>), what is meant for screen readers only, text
# cut with an ellipsis on purpose.
_TEXT_OUTSIDE = """() => {
  const limit = document.documentElement.clientWidth;
  const outside = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!node.textContent.trim() || el.closest(".visually-hidden, .skip")) continue;
    if (getComputedStyle(el).textOverflow === "ellipsis") continue;
    let scrolls = false;
    for (let box = el; box && box !== document.body; box = box.parentElement) {
      const x = getComputedStyle(box).overflowX;
      if (x === "auto" || x === "scroll") { scrolls = true; break; }
    }
    if (scrolls) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const rect of range.getClientRects()) {
      if (rect.width && (rect.left < -0.5 || rect.right > limit + 0.5)) {
        outside.push(node.textContent.trim().slice(0, 50));
        break;
      }
    }
  }
  return outside;
}"""


@dataclass
class Shown:
    """A settings page at one width, loaded once for every test here that looks at it."""

    name: str
    width: int
    tab: Any
    problems: list[str]  # script errors, broken CSP, assets that failed to load


SHOWN = [(name, width) for name in PAGES for width in WIDTHS]


@pytest.fixture(scope="module", params=SHOWN, ids=[f"{n}-{w}px" for n, w in SHOWN])
def shown(
    request: pytest.FixtureRequest,
    browser: Any,
    server: RunningServer,
    contexts: dict[int, Any],
    seeded: Seeded,
) -> Iterator[Shown]:
    """Each page at each width. Module-scoped and parametrized, so pytest runs the tests that
    use it one page after the other, and a page is loaded (a form posted, a key made) once for
    them all rather than once a test."""
    name, width = request.param
    signed_out = name == "sign-in"
    context = _context(browser, server, width) if signed_out else contexts[width]
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda e: problems.append(str(e)))
    tab.on(  # a broken Content-Security-Policy shows here
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    # Its stylesheet, script and icon load (the page itself may answer 400 or 404).
    tab.on(
        "response",
        lambda r: (
            problems.append(f"{r.status} {r.url}")
            if r.status >= 400 and r.request.resource_type != "document"
            else None
        ),
    )
    try:
        PAGES[name](tab, seeded)
        expect(tab.locator("main h1")).to_be_visible()
        yield Shown(name, width, tab, problems)
    finally:
        tab.close()
        if signed_out:
            context.close()


def test_no_settings_page_scrolls_sideways(shown: Shown) -> None:
    tab, width = shown.tab, shown.width
    screenshot(tab, f"layout-{shown.name}-{width}")
    sizes = tab.evaluate(_OVERFLOW)
    assert sizes["scrollWidth"] <= sizes["clientWidth"] <= width, sizes
    assert tab.evaluate(_TEXT_OUTSIDE) == []
    if width >= 1024:  # on a laptop or wider, every table fits without scrolling its box
        wider = tab.locator(".table-wrap").evaluate_all(
            "boxes => boxes.filter(b => b.scrollWidth > b.clientWidth).map(b => b.scrollWidth)"
        )
        assert wider == []
    assert shown.problems == []


@pytest.mark.parametrize("width", [1024, 1280], ids=["1024px", "1280px"])
def test_the_keys_table_shows_state_history_and_revoke_without_scrolling(
    contexts: dict[int, Any], seeded: Seeded, width: int
) -> None:
    tab = contexts[width].new_page()
    try:
        tab.goto("/settings/keys")
        row = tab.get_by_role("row", name=re.compile("^Zapier: new bookings"))
        targets = [
            tab.get_by_role("columnheader", name="State"),
            row.get_by_text("Active", exact=True),
            row.get_by_role("link", name=re.compile("^History")),
            row.get_by_role("link", name=re.compile("^Revoke")),
        ]
        for target in targets:
            box = target.bounding_box()
            assert box is not None
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, (target, box)
        revoke_links = tab.get_by_role("link", name=re.compile("^Revoke")).all()
        assert len(revoke_links) >= 3  # one per key not yet revoked
        for link in revoke_links:
            box = link.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width, box
    finally:
        tab.close()


# axe-core's rules for what a keyboard must reach and what each box is called: a box that
# scrolls (a <pre> wider than a phone) is reached with Tab to scroll it, and says what it holds.
_KEYBOARD_RULES = [
    "scrollable-region-focusable",
    "aria-allowed-attr",
    "aria-prohibited-attr",
    "aria-allowed-role",
    "landmark-unique",
    "nested-interactive",
]


def test_every_box_that_scrolls_is_reachable_by_keyboard_and_named(shown: Shown) -> None:
    options = {"runOnly": {"type": "rule", "values": _KEYBOARD_RULES}}
    found = Axe().run(shown.tab, options=options).response["violations"]
    assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []


# The pages where the owner governs what keys did (issue 26): every axe-core rule, not only
# the keyboard's, at each width.
GOVERNING = [
    "pending",
    "activity",
    "activity-of-an-event",
    "activity-filtered",
    "key-undo",
    "rules",
    "rules-form-errors",
]


@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
@pytest.mark.parametrize("name", GOVERNING)
def test_the_governing_pages_pass_every_axe_rule(
    contexts: dict[int, Any], seeded: Seeded, name: str, width: int
) -> None:
    tab = contexts[width].new_page()
    try:
        PAGES[name](tab, seeded)
        expect(tab.locator("main h1")).to_be_visible()
        tab.locator("main details").evaluate_all("all => all.forEach(d => d.open = true)")
        found = Axe().run(tab).response["violations"]
        assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []
    finally:
        tab.close()
