"""The list's memory between requests is bounded by entries and, where told, by weight."""

from __future__ import annotations

from calendar_service.platform.lru import Lru


def test_the_least_recently_used_entry_goes_first_when_there_are_too_many() -> None:
    kept = Lru(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1  # a is now the most recently used
    kept.put("c", 3)
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (1, None, 3)


def test_entries_go_until_what_is_kept_weighs_no_more_than_the_most() -> None:
    kept = Lru(100, most_weight=10)
    kept.put("a", "A", weight=4)
    kept.put("b", "B", weight=4)
    kept.put("c", "C", weight=4)  # 12: a goes
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (None, "B", "C")
    kept.put("b", "B2", weight=1)  # replacing an entry counts its new weight only
    kept.put("d", "D", weight=5)  # 1 + 4 + 5 = 10
    assert (kept.get("b"), kept.get("c"), kept.get("d")) == ("B2", "C", "D")


def test_one_entry_heavier_than_the_most_is_still_kept_alone() -> None:
    kept = Lru(100, most_weight=10)
    kept.put("a", "A", weight=3)
    kept.put("huge", "H", weight=50)
    assert (kept.get("a"), kept.get("huge")) == (None, "H")
