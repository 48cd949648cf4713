"""``GenerationMemo``: a value is found only at the generation it was read at."""

from __future__ import annotations

from node.memo import GenerationMemo
from sdk.epoch_lru import MISS


def test_a_value_is_found_only_at_the_generation_it_was_kept_at() -> None:
    memo: GenerationMemo[str, int | None] = GenerationMemo()
    memo.keep("a", 3, 1)
    memo.keep("absent", 3, None)
    assert memo.get("a", 3) == 1
    assert memo.get("absent", 3) is None  # a known absence is not a miss
    assert memo.get("a", 4) is MISS
    assert memo.get("b", 3) is MISS
    memo.keep("a", 4, 2)
    assert memo.get("a", 3) is MISS and memo.get("a", 4) == 2


def test_without_a_generation_nothing_is_kept_or_found() -> None:
    memo: GenerationMemo[str, int] = GenerationMemo()
    memo.keep("a", None, 1)
    assert len(memo) == 0
    memo.keep("a", 0, 1)
    assert memo.get("a", None) is MISS


def test_the_oldest_kept_value_is_dropped_past_the_capacity() -> None:
    memo: GenerationMemo[int, int] = GenerationMemo(capacity=3)
    for key in range(3):
        memo.keep(key, 1, key)
    memo.keep(0, 1, 10)  # kept again: now the newest
    memo.keep(3, 1, 3)
    assert len(memo) == 3
    assert memo.get(1, 1) is MISS
    assert [memo.get(key, 1) for key in (0, 2, 3)] == [10, 2, 3]
    memo.clear()
    assert len(memo) == 0
