"""Ids (``ids.new_id``): the shape every pattern in the API accepts, unique, and in time order."""

from __future__ import annotations

import os
import re
import time

import pytest

from calendar_service.platform import ids
from calendar_service.platform.ids import ALPHABET, new_id, random_base62

ID = re.compile(r"ev_[0-9A-Za-z]{22}")


def test_ids_keep_their_shape_and_are_unique_across_many_pool_refills() -> None:
    made = [new_id("ev") for _ in range(20_000)]  # ~80 refills of the pool
    assert all(ID.fullmatch(i) for i in made)
    assert len(set(made)) == len(made)


def test_ids_made_later_sort_after() -> None:
    first = new_id("ev")
    made_in = time.monotonic_ns() // 1_000_000
    deadline = time.monotonic() + 1
    # The time part is in milliseconds: the next ids are made in a later one.
    while time.monotonic_ns() // 1_000_000 <= made_in + 1 and time.monotonic() < deadline:
        pass
    later = [new_id("ev") for _ in range(100)]
    assert all(first < i for i in later)


@pytest.mark.parametrize("ms", [0, 1, 61, 62, 3843, 3844, 10**12, 62**7 - 1])
def test_the_time_part_is_the_millisecond_in_seven_base62_digits(ms: int) -> None:
    ids._last_time = (-1, "")
    text = ids._time_chars(ms)
    assert len(text) == 7
    assert sum(ALPHABET.index(c) * 62**k for k, c in enumerate(reversed(text))) == ms


def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    new_id("ev")  # the parent's pool holds characters not yet handed out
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.write(write, " ".join(new_id("ev") for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as got:
        child = set(got.read().split())
    os.waitpid(pid, 0)
    parent = {new_id("ev") for _ in range(50)}
    assert len(child) == 50
    assert not {i[-15:] for i in child} & {i[-15:] for i in parent}


def test_secrets_come_straight_from_the_os_in_the_full_alphabet() -> None:
    drawn = "".join(random_base62(43) for _ in range(200))
    assert set(drawn) == set(ALPHABET)
