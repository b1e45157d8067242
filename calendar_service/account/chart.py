"""Calls per day as a stacked bar chart, laid out here and drawn as inline SVG by a template.

No JavaScript and no library: the page's Content-Security-Policy allows neither, and an SVG of
thirty bars is a few kilobytes. Colours are set by CSS classes (``style`` attributes would need
``'unsafe-inline'``); each bar has a ``<title>`` and the page also carries the numbers as a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

WIDTH = 720
HEIGHT = 230
LEFT = 56
RIGHT = 32
TOP = 12
BOTTOM = 46  # room for the day labels
_STEPS = (1, 2, 5)


@dataclass(frozen=True, slots=True)
class Bar:
    day: date
    ok: int
    failed: int
    x: float
    width: float
    ok_y: float
    ok_height: float
    failed_y: float
    failed_height: float
    label: str | None  # shown under every few bars
    label_x: float
    label_anchor: str  # SVG text-anchor: the last label ends at its bar, inside the chart

    @property
    def title(self) -> str:
        return (
            f"{self.day:%a} {self.day.day} {self.day:%b}: {self.ok} succeeded, {self.failed} failed"
        )


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    plot_bottom: float
    plot_right: float
    bars: list[Bar]
    ticks: list[tuple[float, int]]  # (y, value) of the horizontal grid lines
    total_ok: int
    total_failed: int
    first: date
    last: date


def _nice_step(peak: int) -> int:
    """The smallest 1/2/5 × 10^k step such that four steps reach ``peak``."""
    magnitude = 1
    while True:
        for step in _STEPS:
            if step * magnitude * 4 >= peak:
                return step * magnitude
        magnitude *= 10


def daily_chart(counts: dict[str, tuple[int, int]], *, last: date, days: int = 30) -> Chart:
    """Lay out ``days`` bars ending on ``last`` from ``{"YYYY-MM-DD": (ok, failed)}``."""
    first = last - timedelta(days=days - 1)
    series = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        ok, failed = counts.get(day.isoformat(), (0, 0))
        series.append((day, ok, failed))
    step = _nice_step(max((ok + failed for _, ok, failed in series), default=0))
    top_value = step * 4
    plot_height = HEIGHT - TOP - BOTTOM
    plot_bottom = float(HEIGHT - BOTTOM)
    slot = (WIDTH - LEFT - RIGHT) / days
    bar_width = slot * 0.7
    bars = []
    for index, (day, ok, failed) in enumerate(series):
        ok_height = plot_height * ok / top_value
        failed_height = plot_height * failed / top_value
        ok_y = plot_bottom - ok_height
        last_bar = index == days - 1
        # A label a week apart, counted back from today's bar, so today is always labelled.
        label = f"{day:%b} {day.day}" if (days - 1 - index) % 7 == 0 else None
        bars.append(
            Bar(
                day=day,
                ok=ok,
                failed=failed,
                x=round(LEFT + index * slot + (slot - bar_width) / 2, 2),
                width=round(bar_width, 2),
                ok_y=round(ok_y, 2),
                ok_height=round(ok_height, 2),
                failed_y=round(ok_y - failed_height, 2),
                failed_height=round(failed_height, 2),
                label=label,
                label_x=round(
                    LEFT + (index + 1) * slot if last_bar else LEFT + (index + 0.5) * slot, 2
                ),
                label_anchor="end" if last_bar else "middle",
            )
        )
    ticks = [(round(plot_bottom - plot_height * i / 4, 2), step * i) for i in range(5)]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        plot_bottom=plot_bottom,
        plot_right=float(WIDTH - RIGHT),
        bars=bars,
        ticks=ticks,
        total_ok=sum(ok for _, ok, _ in series),
        total_failed=sum(failed for _, _, failed in series),
        first=first,
        last=last,
    )
