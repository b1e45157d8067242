"""*Rules*: the owner's rules for agents (``calendar.rules``; docs/rules.md), each rule edited
in one form, and which keys they do not bind.

The form says each rule as a person would type it (a weekday's hours as ``09:00-12:00,
13:00-17:00``; a number of minutes; weekday boxes) and the page turns it into the rules
object the API shows, which the core checks: a refused form comes back with what was typed
and each error beside its field (the core's field names, ``workingHours.mon[0].end``, shown
at the weekday's field).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import keys
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import account, form, owner_page, render, see_other
from calendar_service.calendar.rules import WEEKDAYS, set_rules, stored_rules
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import utcnow

DAY_NAMES = dict(zip(WEEKDAYS, ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                "Saturday", "Sunday"), strict=True))  # fmt: skip
NUMBERS = (
    ("bufferMinutes", "Minutes free before and after each meeting"),
    ("maxMeetingsPerDay", "Meetings a day, at most"),
    ("maxMeetingMinutesPerDay", "Minutes of meetings a day, at most"),
    ("minNoticeMinutes", "Minutes' notice, at least"),
    ("maxDaysAhead", "Days ahead, at most"),
    ("maxDurationMinutes", "Minutes a meeting lasts, at most"),
)
NOTICES = {"saved": "Saved. Agents' writes are checked against these rules from now on; "
           "events already there stand."}  # fmt: skip


def _values(rules: dict[str, Any]) -> dict[str, str]:
    """The form's values for the stored ``rules``."""
    values: dict[str, str] = {"onViolation": rules.get("onViolation", "refuse")}
    for day, spans in rules.get("workingHours", {}).items():
        values[f"hours_{day}"] = ", ".join(f"{s['start']}-{s['end']}" for s in spans)
    for name, _ in NUMBERS:
        if name in rules:
            values[name] = str(rules[name])
    focus = rules.get("focus")
    if focus:
        values |= {"focus_minutes": str(focus["minutes"]), "focus_start": focus["start"]}
        values["focus_end"] = focus["end"]
    for day in rules.get("noMeetingDays", ()):
        values[f"off_{day}"] = "yes"
    values["hours_set"] = "yes" if "workingHours" in rules else ""
    return values


def _number(text: str) -> Any:
    text = text.strip()
    return int(text) if text.isdigit() and text.isascii() else text or None


def _rules(data: FormData) -> tuple[dict[str, Any], dict[str, str]]:
    """The rules object the form says, and the form's values as typed."""
    values = {name: str(value) for name, value in data.items() if name != "csrf_token"}
    rules: dict[str, Any] = {"onViolation": values.get("onViolation") or "refuse"}
    if values.get("hours_set"):
        hours: dict[str, Any] = {}
        for day in WEEKDAYS:
            text = values.get(f"hours_{day}", "").strip()
            if text:
                hours[day] = [
                    dict(zip(("start", "end"), part.strip().split("-", 1), strict=False))
                    for part in text.split(",")
                ]
        rules["workingHours"] = hours
    for name, _ in NUMBERS:
        rules[name] = _number(values.get(name, ""))
    if values.get("focus_minutes", "").strip():
        rules["focus"] = {
            "minutes": _number(values["focus_minutes"]),
            "start": values.get("focus_start", "").strip(),
            "end": values.get("focus_end", "").strip(),
        }
    rules["noMeetingDays"] = [day for day in WEEKDAYS if values.get(f"off_{day}")] or None
    return rules, values


def _errors(exc: ValidationFailed) -> dict[str, str]:
    """Each error at its field of the form: a weekday's hours at ``hours_<day>``."""
    found: dict[str, str] = {}
    for item in exc.errors:
        name = item["field"]
        if name.startswith("workingHours."):
            day = name.split(".")[1].split("[")[0]
            name = f"hours_{day}" if day in WEEKDAYS else "hours_set"
        elif name.startswith("focus"):
            name = "focus_minutes" if name in ("focus", "focus.minutes") else "focus_" + name[6:]
        found.setdefault(name, item["message"])
    return found


def _page(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    listed = keys.list_keys(conn, user_id=user_id, now=now)
    return {
        "rules": stored_rules(conn, user_id=user_id),
        "exempt": [
            k
            for k in listed
            if k["state"] == keys.ACTIVE and (k["rules"] == keys.RULES_EXEMPT or k["appPassword"])
        ],
    }


async def _show(
    request: Request,
    owner: OwnerSessionInfo,
    values: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
) -> Response:
    data = await account(request).services.db.run(_page, user_id=owner.user_id, now=utcnow())
    return render(
        request,
        "rules.html",
        {
            **data,
            "section": "rules",
            "values": _values(data["rules"]) if values is None else values,
            "errors": errors or {},
            "days": DAY_NAMES,
            "numbers": NUMBERS,
            "notice": NOTICES.get(request.query_params.get("notice", "")),
        },
        status_code=400 if errors else 200,
    )


@owner_page
async def rules_page(request: Request, owner: OwnerSessionInfo) -> Response:
    return await _show(request, owner)


@owner_page
async def save_rules(request: Request, owner: OwnerSessionInfo) -> Response:
    rules, values = _rules(await form(request))
    try:
        await account(request).services.db.run(
            set_rules, user_id=owner.user_id, value=rules, now=utcnow()
        )
    except ValidationFailed as exc:
        return await _show(request, owner, values, _errors(exc))
    return see_other(request, "/rules", notice="saved")


def routes() -> list[BaseRoute]:
    return [
        Route("/rules", rules_page, methods=["GET"]),
        Route("/rules", save_rules, methods=["POST"]),
    ]
