"""The instruction guard (``bench.floor``): its verdicts, and the budget it reads.

The count itself runs under valgrind in ``scripts/test`` (``make bench-guard``), not here: here
is what it concludes from a count, and that the committed budget says what bought each cost."""

from __future__ import annotations

import json
from typing import Any

from bench.floor import BUDGET, GUARD, GUARDED, compare


def budget(list_: int = 1_000_000, create: int = 500_000) -> dict[str, Any]:
    return {
        "tolerance": 0.05,
        "kinds": {
            "list": {"instructions": list_, "note": "n"},
            "create": {"instructions": create, "note": "n"},
        },
    }


def counts(list_: int, create: int) -> dict[str, Any]:
    return {"list": {"instructions": list_}, "create": {"instructions": create}}


def test_a_count_more_than_five_percent_over_its_budget_fails() -> None:
    problems, _ = compare(counts(1_050_001, 500_000), budget())
    assert len(problems) == 1 and problems[0].startswith("OVER BUDGET list")
    problems, _ = compare(counts(1_000_000, 525_001), budget())
    assert len(problems) == 1 and problems[0].startswith("OVER BUDGET create")


def test_a_count_within_five_percent_of_its_budget_passes() -> None:
    problems, notes = compare(counts(1_049_999, 475_001), budget())
    assert problems == []
    assert all("within 5%" in note for note in notes), notes


def test_a_count_well_under_its_budget_passes_and_asks_for_the_budget_to_be_lowered() -> None:
    problems, notes = compare(counts(900_000, 500_000), budget())
    assert problems == []
    assert any(note.startswith("list") and "lower it" in note for note in notes), notes


def test_a_kind_that_was_not_measured_fails() -> None:
    problems, _ = compare({"list": {"instructions": 1_000_000}}, budget())
    assert problems == ["create: not measured"]


def test_the_committed_budget_covers_both_shapes_and_notes_what_bought_each_cost() -> None:
    committed = json.loads(BUDGET.read_text())
    assert committed["tolerance"] == 0.05
    assert committed["shape"] == GUARD  # the shape the counts were taken on
    # the bulk-seeded database's list and create, and the create as people run it
    assert set(committed["kinds"]) == set(GUARDED) == {"list", "create", "create_api"}
    for kind in GUARDED:
        entry = committed["kinds"][kind]
        assert entry["instructions"] > 0
        assert entry["note"].strip(), f"{kind}: a budget says what bought its cost"
