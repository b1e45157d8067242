"""The benchmark still runs end to end (at a tiny size, in seconds): it cannot rot unseen.

Nothing here is timed; the figures are in docs/performance.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.servers import REFERENCE

ROOT = Path(__file__).resolve().parents[2]

# The smoke run brings its own SQLite databases, whichever backend the suite runs on: once per
# `make test` (the SQLite leg) is enough.
pytestmark = pytest.mark.once


def test_the_minimum_the_bench_compares_with_is_in_the_repository() -> None:
    """A fresh clone benches: the hand-written minimum is kept in bench/reference/."""
    assert (REFERENCE / "minimal_app.py").is_file() and (REFERENCE / "seed_db.py").is_file()
    assert "where it came from" in (REFERENCE / "README.md").read_text(encoding="utf-8").lower()


def run_bench(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from the repository, bounded; it must exit 0."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.long
def test_a_tiny_benchmark_run_measures_ours_and_the_minimum_without_errors(
    tmp_path: Path,
) -> None:
    # Every phase a plain `python -m bench` runs on SQLite but the hostile one (its own test).
    phases = "main,asrun,series,search,freetime,modes,ratelimit"
    proc = run_bench(
        "bench", "--tiny", "--only", phases, "--loadgen", "python", "--out", str(tmp_path)
    )
    assert "median ratio" in proc.stdout
    summary = json.loads((tmp_path / "latest.json").read_text())["summary"]
    for kind in ("list", "create"):
        result = summary["main"][kind]
        assert result["errors"] == 0, result
        assert result["ours"]["rps"] > 0 and result["minimum"]["rps"] > 0
    for kind in ("list", "create"):  # on the database built through the API (bench.api_seed)
        result = summary["asrun"][kind]
        assert result["errors"] == 0, result
        assert result["ours"]["rps"] > 0 and result["minimum"]["rps"] > 0
    search = summary["search"]["sqlite"]  # two words over a year, beside the one-week list
    assert search["search"]["errors"] == 0 and search["search"]["rps"] > 0, search
    assert search["matched"] > 0, search
    series = summary["series"]  # the list with weekly series beside the events, and without
    for who in ("with", "without"):
        assert series[who]["errors"] == 0 and series[who]["rps"] > 0, series
    freetime = summary["freetime"]  # findFreeTime beside the list on the same database
    for kind in ("freetime", "list"):
        assert freetime[kind]["errors"] == 0 and freetime[kind]["rps"] > 0, freetime
    limiter = summary["ratelimit"]["sqlite"]  # the list, shared limiter against in memory
    for who in ("shared", "local"):
        assert limiter[who]["errors"] == 0 and limiter[who]["rps"] > 0, limiter
    assert (tmp_path / "performance.png").exists()


def test_the_webhook_benchmark_measures_one_process_and_a_worker_in_another(
    tmp_path: Path,
) -> None:
    out = tmp_path / "webhooks.json"
    run_bench("bench.webhooks", "--samples", "5", "--count", "20", "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["throughput"]["deliveries"] == 20
    for latency in (figures["latency"], figures["cross_process_latency"]):
        assert latency["samples"] == 5 and latency["p50_ms"] > 0


def test_the_trigger_benchmark_plans_ticks_bursts_and_lists_at_a_tiny_size(
    tmp_path: Path,
) -> None:
    out = tmp_path / "triggers.json"
    run_bench("bench.triggers", "--tiny", "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["first_plan"]["rows"] > 0
    assert figures["burst"]["deliveries"] == 40
    assert figures["tick_idle"]["p50_ms"] > 0 and figures["list"]["ratio"] > 0


@pytest.mark.long
def test_the_in_process_driver_serves_ours_and_the_minimum_without_errors() -> None:
    proc = run_bench(
        *("bench.inprocess", "--events", "10000", "--requests", "20"),
        *("--concurrency", "4"),  # 4 at a time: group commits
    )
    lines = proc.stdout.splitlines()
    for which in ("ours", "minimum"):
        for kind in ("list", "create"):
            assert any(line.split()[:2] == [which, kind] for line in lines), proc.stdout


def test_the_hostile_phase_times_each_request_with_healthz_beside_it_and_stops_by_itself(
    tmp_path: Path,
) -> None:
    run_bench("bench", "--only", "hostile", "--tiny", "--out", str(tmp_path))
    figures = json.loads((tmp_path / "latest.json").read_text())["summary"]["hostile"]
    [rule] = figures["rules"].values()
    requests = rule["requests"]
    assert [r["request"] for r in requests] == [
        "list, cold",
        "list, warm",
        "list, next page",
        "singleEvents=false",
        "freeBusy, 92 days",
    ]
    assert all(r["status"] == 200 and r["seconds"] is not None for r in requests), requests
    assert rule["peak_rss_mb"] > 0


@pytest.mark.long
def test_the_storm_benchmark_sends_every_trigger_to_the_healthy_receiver_at_a_tiny_size(
    tmp_path: Path,
) -> None:
    out = tmp_path / "storm.json"
    run_bench("bench.storm", "--tiny", "--database-url", "sqlite", "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["healthy"]["deliveries"] == 60
    assert figures["healthy"]["during"]["hanging_connections"] > 0


def test_the_link_benchmark_computes_the_same_slots_as_find_free_time_at_a_tiny_size() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.links", "--events", "20", "--rounds", "1", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "page / findFreeTime" in done.stdout
