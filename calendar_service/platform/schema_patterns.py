"""What the core accepts, as the JSON Schema patterns its published schemas carry: one
definition for the OpenAPI document (``rest/openapi/``) and the MCP tools' input schemas
(``models`` and ``mcp_tools.shapes``).

The OpenAPI document takes the exact patterns (a real calendar date, the accepted years, the
offsets): generated clients and the fuzzing tests rely on them. The MCP tools take the compact
ones (``TOOL_*``): the same syntax, times and offsets, with the date written as digits and its
calendar check left to the core (which the descriptions state), because every connected model
reads the tools' schemas in every conversation and the exact date pattern alone is about 900
characters. Either accepts every date-time the core accepts: a date, a time without an offset,
with one, without seconds. JSON Schema's ``format: date-time`` (RFC 3339 with an offset, no
dates) would refuse the dates and local times the descriptions invite.
"""

from __future__ import annotations

import calendar

from calendar_service.platform.timeutil import MAX_OFFSET, MAX_YEAR, MIN_YEAR

# What the API accepts as a date-time, as ECMA 262 patterns (the JSON Schema dialect), written
# so that Python's ``re`` reads them the same way. They follow ``timeutil``: RFC 3339 with the
# offset optional, seconds and fractions optional, "T", "t" or a space between date and time,
# and surrounding white space ignored (Python's ``str.strip``: ``_WS_CHARS`` are exactly the
# characters for which ``str.isspace()`` is true; ECMA's ``\s`` differs in a few).
#
# The accepted range is the core's (timeutil): instants in the years MIN_YEAR to MAX_YEAR in
# UTC, offsets within MAX_OFFSET. A pattern can hold the written year and the offset; whether a
# time in the first or last year is inside the range depends on its offset or the calendar's
# zone, which the descriptions say.
MAX_OFFSET_HOURS = int(MAX_OFFSET.total_seconds()) // 3600
MAX_LINE = 1000
"""Characters in one recurrence line (the ``maxLength`` of each line of ``recurrence``)."""


def _digits_between(low: int, high: int) -> str:
    """An alternation for the two-digit numbers ``low`` to ``high``: 0 and 17 give
    ``0[0-9]|1[0-7]``."""
    parts = []
    for tens in range(low // 10, high // 10 + 1):
        first, last = max(low, tens * 10) % 10, min(high, tens * 10 + 9) % 10
        parts.append(f"{tens}{first}" if first == last else f"{tens}[{first}-{last}]")
    return "|".join(parts)


def _years(first: int, last: int, *, leap: bool = False) -> str:
    """The four-digit years ``first`` to ``last`` (only the leap ones with ``leap``)."""
    parts = []
    for century in range(first // 100, last // 100 + 1):
        low, high = max(first, century * 100), min(last, century * 100 + 99)
        whole = (low, high) == (century * 100, century * 100 + 99)
        if leap and whole:
            parts.append(f"{century}(?:0[48]|[2468][048]|[13579][26])")
            parts.extend([f"{century}00"] if calendar.isleap(century * 100) else [])
        elif leap:
            parts.extend(str(year) for year in range(low, high + 1) if calendar.isleap(year))
        else:
            parts.append(
                f"{century}(?:{'[0-9]{2}' if whole else _digits_between(low % 100, high % 100)})"
            )
    return "(?:" + "|".join(parts) + ")"


_WS_CHARS = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_WS = f"[{_WS_CHARS}]"
_DATE = (
    rf"(?:{_years(MIN_YEAR, MAX_YEAR)}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    rf"|{_years(MIN_YEAR, MAX_YEAR, leap=True)}-02-29)"
)
_OFFSET = (
    rf"(?:[Zz]|[+-](?:(?:{_digits_between(0, MAX_OFFSET_HOURS - 1)}):?[0-5][0-9]"
    rf"|{MAX_OFFSET_HOURS:02d}:?00))"
)
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?"
_DATE_TIME = rf"{_DATE}[Tt ]{_TIME}{_OFFSET}?"
_MIDNIGHT = rf"{_DATE}[Tt ]00:00(?::00(?:\.0{{1,9}})?)?{_OFFSET}?"

DATE_TIME_PATTERN = rf"^{_WS}*{_DATE_TIME}{_WS}*$"
ALL_DAY_PATTERN = rf"^{_WS}*(?:{_DATE}|{_MIDNIGHT}){_WS}*$"
DATE_OR_DATE_TIME_PATTERN = rf"^{_WS}*(?:{_DATE}|{_DATE_TIME}){_WS}*$"
# A list bound: a date-time, a date (that day's midnight), or empty (the same as omitted).
BOUND_PATTERN = rf"^(?:{_WS}*(?:{_DATE}|{_DATE_TIME}){_WS}*)?$"
# Text: anything but NUL, which is refused everywhere (PostgreSQL cannot store it).
TEXT_PATTERN = r"^[^\x00]*$"
# A title: text with at least one character that ``str.strip`` keeps (not blank).
TITLE_PATTERN = rf"^[^\x00]*[^\x00{_WS_CHARS}][^\x00]*$"
# ``str.isprintable()`` on the header as Latin-1 text (how HTTP headers are decoded).
IDEMPOTENCY_KEY_PATTERN = r"^[\x20-\x7e\xa1-\xac\xae-\xff]+$"
RANGE_DOC = (
    f"Times must fall in the years {MIN_YEAR} to {MAX_YEAR} in UTC "
    f"({MIN_YEAR}-01-01T00:00:00Z to {MAX_YEAR + 1}-01-01T00:00:00Z), with offsets within "
    f"-{MAX_OFFSET_HOURS:02d}:00 to +{MAX_OFFSET_HOURS:02d}:00."
)

# The MCP tools' compact patterns: the date as digits (a real day in the accepted years is the
# core's check), the exact times and offsets, surrounding white space as ECMA's ``\s``.
_DIGITS_DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TOOL_DATE_OR_DATE_TIME = rf"\s*{_DIGITS_DATE}(?:[Tt ]{_TIME}{_OFFSET}?)?\s*"
TOOL_DATE_OR_DATE_TIME_PATTERN = f"^{_TOOL_DATE_OR_DATE_TIME}$"
# A list bound: as above, or empty (the same as omitted).
TOOL_BOUND_PATTERN = f"^(?:{_TOOL_DATE_OR_DATE_TIME})?$"


COLOR_PATTERN = "^#[0-9A-Fa-f]{6}$"
"""A calendar's colour: ``#rrggbb`` (``calendars.check_color``; the core stores it lower case)."""
