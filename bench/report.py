"""Printing the rounds, summarising them (medians), the chart, and profile summaries."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

# The designs the modes phase compares (bench/variants.py), as the tables name them.
MODE_NAMES = {
    "group": "group commit (served)",
    "per_request": "commit per request",
    "thread": "database thread",
}


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def line(label: str, r: dict[str, Any]) -> str:
    err = f"  errors {r['errors']}" if r["errors"] else ""
    split = ""
    if "cpu_user_us_per_req" in r:  # Runner.measure's rows
        split = (
            f" ({r['cpu_user_us_per_req']} user, {r['cpu_sys_us_per_req']} sys; "
            f"{r['reads_per_req']} reads, {r['writes_per_req']} writes)"
        )
    return (
        f"  {label:<22} {r['rps']:>9,.0f} req/s   p50 {r['p50_ms']:>7.2f} ms   "
        f"p99 {r['p99_ms']:>7.2f} ms   cpu {r.get('cpu_us_per_req', 0):>5} us/req{split}   "
        f"machine {r.get('machine_busy_pct', 0):>3}% busy   "
        f"({r['requests']:,} requests){err}"
    )


def pair_summary(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Medians over rounds of (ours, minimum) pairs, and the median of the per-round ratios."""
    ours = [p[0] for p in pairs]
    base = [p[1] for p in pairs]
    return {
        "rounds": len(pairs),
        "ours": _medians(ours),
        "minimum": _medians(base),
        "rps_ratio": round(median([o["rps"] / b["rps"] for o, b in pairs if b["rps"]]), 3),
        "p99_ratio": round(median([o["p99_ms"] / b["p99_ms"] for o, b in pairs if b["p99_ms"]]), 3),
        "cpu_ratio": round(
            median(
                [o["cpu_us_per_req"] / b["cpu_us_per_req"] for o, b in pairs if b["cpu_us_per_req"]]
            ),
            3,
        ),
        "errors": sum(o["errors"] for o in ours) + sum(b["errors"] for b in base),
    }


def compared(runs: dict[str, list[dict[str, Any]]], top: str, base: str) -> dict[str, Any]:
    """Each side's medians (and its errors) of runs made side by side, round by round, and the
    median of ``top``/``base`` by round: ``rps_ratio``, ``p99_ratio``, each round's req/s ratio
    (``rounds``)."""
    out: dict[str, Any] = {
        who: {**_medians(rs), "errors": sum(r["errors"] for r in rs)} for who, rs in runs.items()
    }
    pairs = list(zip(runs[top], runs[base], strict=True))
    rps = [t["rps"] / b["rps"] for t, b in pairs if b["rps"]]
    out["rps_ratio"] = round(median(rps), 3)
    out["p99_ratio"] = round(
        median([t["p99_ms"] / b["p99_ms"] for t, b in pairs if b["p99_ms"]]), 3
    )
    out["rounds"] = [round(x, 3) for x in rps]
    return out


def _medians(results: list[dict[str, Any]]) -> dict[str, float]:
    keys = ["rps", "p50_ms", "p99_ms", "cpu_us_per_req", "machine_busy_pct"]
    keys += [key for key in _SPLIT if results and key in results[0]]
    return {key: round(median([r.get(key, 0) for r in results]), 2) for key in keys}


# Runner.measure's split of the CPU per request, and the read and write calls per request.
_SPLIT = ("cpu_user_us_per_req", "cpu_sys_us_per_req", "reads_per_req", "writes_per_req")


def chart(summary: dict[str, Any], path: Path, machine: str) -> Path | None:
    """Bars of ours against the minimum: req/s and p99 for list and create, list at each size,
    and PostgreSQL with one and two workers."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = []
    main = summary.get("main", {})
    if main:
        panels.append(("req/s (median)", "rps", main))
        panels.append(("p99 latency, ms (median)", "p99_ms", main))
    scale = summary.get("scale", {})
    pg = summary.get("postgres", {})
    n = len(panels) + bool(scale) + bool(pg)
    if n == 0:
        return None
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 4.0), squeeze=False)
    colours = {"ours": "#1f77b4", "minimum": "#bbbbbb"}
    i = 0
    for title, key, data in panels:
        ax = axes[0][i]
        i += 1
        kinds = list(data)
        xs = range(len(kinds))
        for j, who in enumerate(("minimum", "ours")):
            vals = [data[k][who][key] for k in kinds]
            bars = ax.bar(
                [x + (j - 0.5) * 0.38 for x in xs], vals, 0.38, label=who, color=colours[who]
            )
            ax.bar_label(bars, fmt="%.0f" if key == "rps" else "%.1f", fontsize=8)
        ax.set_xticks(list(xs), kinds)
        ax.set_title(title, fontsize=10)
        ax.margins(y=0.45)  # room for the legend above the tallest bar's label
        ax.legend(fontsize=8, loc="upper left")
    if scale:
        ax = axes[0][i]
        i += 1
        sizes = sorted(scale, key=int)
        labels = [_size_label(int(s)) for s in sizes]
        for who in ("minimum", "ours"):
            ax.plot(
                labels,
                [scale[s][who]["rps"] for s in sizes],
                marker="o",
                label=who,
                color=colours[who],
            )
        ax.set_ylim(bottom=0)
        ax.set_title("list req/s by number of events", fontsize=10)
        ax.legend(fontsize=8)
    if pg:
        ax = axes[0][i]
        kinds = list(pg)
        xs = range(len(kinds))
        for j, workers in enumerate(("1", "2")):
            vals = [pg[k][workers]["rps"] for k in kinds]
            bars = ax.bar(
                [x + (j - 0.5) * 0.38 for x in xs],
                vals,
                0.38,
                label=f"{workers} worker{'s' if workers == '2' else ''}",
                color=["#9ecae1", "#1f77b4"][j],
            )
            ax.bar_label(bars, fmt="%.0f", fontsize=8)
        ax.set_xticks(list(xs), kinds)
        ax.set_title("PostgreSQL req/s (ours)", fontsize=10)
        ax.margins(y=0.45)  # room for the legend above the tallest bar's label
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"calendar-service vs the hand-written minimum ({machine})", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _size_label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def summarise_profile(raw: Path, top: int = 25) -> str:
    """py-spy's collapsed stacks (``--format raw``) as the functions with the most samples,
    on their own (self) and with their callees (inclusive)."""
    own: dict[str, int] = defaultdict(int)
    incl: dict[str, int] = defaultdict(int)
    total = 0
    for text in raw.read_text().splitlines():
        stack, _, count = text.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[_short(frames[-1])] += n
        for frame in {_short(f) for f in frames}:
            incl[frame] += n
    if not total:
        return "no samples"
    out = [f"{total} samples", "", "self %   function"]
    out += [
        f"{100 * n / total:6.1f}   {f}" for f, n in sorted(own.items(), key=lambda x: -x[1])[:top]
    ]
    out += ["", "incl %   function"]
    out += [
        f"{100 * n / total:6.1f}   {f}" for f, n in sorted(incl.items(), key=lambda x: -x[1])[:top]
    ]
    return "\n".join(out)


def _short(frame: str) -> str:
    # "list_events (calendar_service/calendar/events/listing.py:42)" -> "list_events (listing.py)"
    name, _, where = frame.partition(" (")
    file = where.split(":", 1)[0].rsplit("/", 1)[-1]
    return f"{name} ({file})" if file else name


def markdown(s: dict[str, Any]) -> str:
    """The run's medians as the tables of docs/performance.md."""
    out = [
        "| case | ours req/s | ours p50 / p99 ms | minimum req/s | minimum p50 / p99 ms "
        "| ratio req/s | ratio p99 | CPU per request, ours / minimum |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def row(label: str, m: dict[str, Any]) -> str:
        o, b = m["ours"], m["minimum"]
        return (
            f"| {label} | {o['rps']:,.0f} | {o['p50_ms']:.1f} / {o['p99_ms']:.1f} | "
            f"{b['rps']:,.0f} | {b['p50_ms']:.1f} / {b['p99_ms']:.1f} | "
            f"**{m['rps_ratio']:.2f} x** | {m['p99_ratio']:.2f} x | "
            f"{o['cpu_us_per_req']:.0f} / {b['cpu_us_per_req']:.0f} us |"
        )

    for kind, m in (s.get("main") or {}).items():
        out.append(row(f"{kind}, {s.get('events', 0):,} events", m))
    for kind, m in (s.get("asrun") or {}).items():
        out.append(row(f"{kind} as run (built through the API, all-calendars key)", m))
    for size, m in (s.get("scale") or {}).items():
        if size != "spread":
            out.append(row(f"list, {int(size):,} events", m))
    if "spread" in (s.get("scale") or {}):
        out.append(f"\nOurs, list across sizes: spread {s['scale']['spread']:.1%} of the fastest.")
    modes = s.get("modes") or {}
    if modes:
        out += [
            "",
            "| SQLite, ours | design | req/s | p50 ms | p99 ms | CPU per request |",
            "|---|---|---|---|---|---|",
        ]
        for kind, m in modes.items():
            for mode, r in m.items():
                out.append(
                    f"| {kind} | {MODE_NAMES.get(mode, mode)} | {r['rps']:,.0f} | "
                    f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['cpu_us_per_req']:.0f} us |"
                )
    pg = s.get("postgres") or {}
    if pg:
        out += [
            "",
            "| PostgreSQL, ours | 1 worker req/s | p99 ms | machine busy | 2 workers req/s "
            "| p99 ms | machine busy | 2 / 1 |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for kind, m in pg.items():
            one, two = m["1"], m["2"]
            out.append(
                f"| {kind} | {one['rps']:,.0f} | {one['p99_ms']:.1f} | "
                f"{one.get('machine_busy_pct', 0):.0f} % | {two['rps']:,.0f} | "
                f"{two['p99_ms']:.1f} | {two.get('machine_busy_pct', 0):.0f} % | "
                f"**{m['ratio']:.2f} x** |"
            )
    free = s.get("freetime") or {}
    if free:
        f, li = free["freetime"], free["list"]
        out.append(
            f"\nfindFreeTime (30 minutes in working hours, one-week windows, "
            f"{s.get('events', 0):,} events and the weekly series): {f['rps']:,.0f} req/s, "
            f"p50 / p99 {f['p50_ms']:.1f} / {f['p99_ms']:.1f} ms; the list of the same windows "
            f"{li['rps']:,.0f} req/s, p99 {li['p99_ms']:.1f} ms ({free['rps_ratio']:.2f} x)."
        )
    hooks = s.get("webhooks") or {}
    if "latency" in hooks:
        lat, thr = hooks["latency"], hooks.get("throughput", {})
        out.append(
            f"\nWebhooks ({hooks.get('backend')}): commit to request p50 {lat.get('p50_ms')} ms, "
            f"p99 {lat.get('p99_ms')} ms; {thr.get('per_second')} deliveries/s from one worker."
        )
    return "\n".join(out)
