"""A corpus of hostile VTIMEZONEs: each a whole ``.ics`` file with one event (UID ``victim``)
in the zone ``Hostile`` the file describes, and a sane event beside it (UID ``bystander``,
in UTC). Built here rather than stored: some are thousands of lines."""

from __future__ import annotations

EVENT = """BEGIN:VEVENT
UID:victim
DTSTAMP:20260101T000000Z
DTSTART;TZID=Hostile:20260310T090000
DTEND;TZID=Hostile:20260310T100000
SUMMARY:Victim
END:VEVENT
BEGIN:VEVENT
UID:bystander
DTSTAMP:20260101T000000Z
DTSTART:20260311T090000Z
DTEND:20260311T100000Z
SUMMARY:Bystander
END:VEVENT
"""


def observance(
    kind: str,
    rule: str | None,
    *,
    start: str = "19000101T000000",
    offset_from: str | None = "+0100",
    offset_to: str | None = "+0000",
    extra: str = "",
) -> str:
    lines = [f"BEGIN:{kind}"]
    if start:
        lines.append(f"DTSTART:{start}")
    if offset_from:
        lines.append(f"TZOFFSETFROM:{offset_from}")
    if offset_to:
        lines.append(f"TZOFFSETTO:{offset_to}")
    if rule:
        lines.append(f"RRULE:{rule}")
    if extra:
        lines.append(extra)
    lines.append(f"END:{kind}")
    return "\n".join(lines)


def pair(rule: str, **options: str) -> list[str]:
    """A STANDARD and a DAYLIGHT observance, both repeating with ``rule``."""
    return [
        observance("STANDARD", rule, offset_from="+0200", offset_to="+0100", **options),
        observance("DAYLIGHT", rule, offset_from="+0100", offset_to="+0200", **options),
    ]


def zone_file(*observances: str, tzid: str = "Hostile", zones: int = 1) -> bytes:
    tz = []
    for n in range(zones):
        name = tzid if n == 0 else f"{tzid}-{n}"
        tz += ["BEGIN:VTIMEZONE", f"TZID:{name}", *observances, "END:VTIMEZONE"]
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//attacker//EN",
        *tz,
        EVENT.strip(),
        "END:VCALENDAR",
        "",
    ]
    return "\n".join(lines).encode()


def many_zones_used(count: int, rule: str) -> bytes:
    """``count`` zones, each with two observances repeating by ``rule``, each used by an
    event of its own (``victim-N``)."""
    parts = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//attacker//EN"]
    for n in range(count):
        parts += ["BEGIN:VTIMEZONE", f"TZID:Z{n}", *pair(rule), "END:VTIMEZONE"]
    for n in range(count):
        parts += [
            "BEGIN:VEVENT",
            f"UID:victim-{n}",
            "DTSTAMP:20260101T000000Z",
            f"DTSTART;TZID=Z{n}:20260310T090000",
            f"DTEND;TZID=Z{n}:20260310T100000",
            "SUMMARY:Victim",
            "END:VEVENT",
        ]
    parts += ["END:VCALENDAR", ""]
    return "\n".join(parts).encode()


SECONDLY = zone_file(*pair("FREQ=SECONDLY"))
"""The file of the issue: two observances that change the offset every second."""

CORPUS: dict[str, bytes] = {
    "secondly": SECONDLY,
    "minutely": zone_file(*pair("FREQ=MINUTELY")),
    "hourly": zone_file(*pair("FREQ=HOURLY")),
    "daily": zone_file(*pair("FREQ=DAILY")),
    "weekly": zone_file(*pair("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU")),
    "secondly with a count": zone_file(*pair("FREQ=SECONDLY;COUNT=2000000000")),
    "yearly with a huge count from 1601": zone_file(
        *pair("FREQ=YEARLY;COUNT=1000000;BYMONTH=3;BYDAY=-1SU", start="16010101T020000")
    ),
    "yearly every day by BYDAY and BYSETPOS": zone_file(
        *pair(
            "FREQ=YEARLY;BYMONTH=1,2,3,4,5,6,7,8,9,10,11,12;BYDAY=MO,TU,WE,TH,FR,SA,SU;"
            "BYSETPOS=" + ",".join(str(n) for n in range(-366, 367) if n)
        )
    ),
    "monthly until the year 9999": zone_file(*pair("FREQ=MONTHLY;UNTIL=99991231T000000Z")),
    "yearly that never occurs": zone_file(*pair("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30")),
    "yearly by week number": zone_file(*pair("FREQ=YEARLY;BYWEEKNO=1,2,3,4,5,6,7,8,9,10")),
    "yearly by year day": zone_file(
        *pair("FREQ=YEARLY;BYYEARDAY=" + ",".join(map(str, range(1, 367))))
    ),
    "many hours a day": zone_file(*pair("FREQ=YEARLY;BYHOUR=" + ",".join(map(str, range(24))))),
    "an interval of zero": zone_file(*pair("FREQ=YEARLY;INTERVAL=0")),
    "thousands of observances": zone_file(
        *[
            observance(
                "STANDARD" if n % 2 else "DAYLIGHT",
                "FREQ=MONTHLY",
                start=f"{1900 + n % 300}0101T000000",
            )
            for n in range(3000)
        ]
    ),
    "a hundred monthly observances": zone_file(
        *[
            observance("STANDARD", "FREQ=MONTHLY;BYMONTHDAY=1,2,3,4,5,6,7,8,9,10")
            for _ in range(100)
        ]
    ),
    "thousands of RDATEs": zone_file(
        observance(
            "STANDARD",
            None,
            extra="RDATE:"
            + ",".join(f"{1900 + n // 12}{n % 12 + 1:02d}01T000000" for n in range(3600)),
        ),
        observance(
            "DAYLIGHT",
            None,
            offset_to="+0200",
            extra="RDATE:"
            + ",".join(f"{1900 + n // 12}{n % 12 + 1:02d}15T000000" for n in range(3600)),
        ),
    ),
    "no TZOFFSETTO": zone_file(observance("STANDARD", None, offset_to=None)),
    "no DTSTART": zone_file(observance("STANDARD", None, start="")),
    "an offset of almost a day": zone_file(observance("STANDARD", None, offset_to="-2359")),
    "no observance at all": zone_file(),
    "a rule without FREQ": zone_file(*pair("BYMONTH=3")),
    "a numbered BYDAY far out": zone_file(*pair("FREQ=YEARLY;BYMONTH=3;BYDAY=99SU")),
    "three hundred zones each used": many_zones_used(300, "FREQ=MONTHLY;BYMONTHDAY=1,15"),
}
