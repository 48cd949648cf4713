"""sdk.epoch_lru: the LRU with refused stale fills that both value caches share."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk.epoch_lru import MISS, EpochLRU

keys = st.sampled_from(["a", "b", "c", "d"])
values = st.none() | st.binary(max_size=3)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("lookup"), keys),
        st.tuples(st.just("begin"), keys),  # a read that missed takes the epoch...
        st.tuples(st.just("fill"), values),  # ...and later hands in what it read
        st.tuples(st.just("put"), keys, values),
        st.tuples(st.just("advance")),
        st.tuples(st.just("invalidate"), st.lists(keys, max_size=2)),
        st.tuples(st.just("clear")),
    ),
    max_size=40,
)


@given(st.integers(1, 3), steps)
def test_an_epoch_lru_behaves_as_its_model(size: int, script: list[tuple[Any, ...]]) -> None:
    """The model: an ordered dict trimmed from the oldest end, and a fill that is
    dropped if any change came after its read began."""
    lru: EpochLRU[bytes] = EpochLRU(size)
    model: OrderedDict[str, bytes | None] = OrderedDict()
    #: Reads under way: (key, the epoch they took, whether nothing changed since).
    reads: list[tuple[str, int, bool]] = []

    def changed() -> None:
        reads[:] = [(key, epoch, False) for key, epoch, _ in reads]

    def remember(key: str, value: bytes | None) -> None:
        model[key] = value
        model.move_to_end(key)
        while len(model) > size:
            model.popitem(last=False)

    for step in script:
        match step:
            case ("lookup", key):
                expected = model.get(key, MISS)
                if key in model:
                    model.move_to_end(key)
                assert lru.lookup(key) == expected
            case ("begin", key):
                reads.append((key, lru.epoch, True))
            case ("fill", value) if reads:
                key, epoch, fresh = reads.pop(0)
                lru.fill(key, value, epoch)
                if fresh:
                    remember(key, value)
            case ("put", key, value):
                lru.put(key, value)
                remember(key, value)
            case ("advance",):
                lru.advance()
                changed()
            case ("invalidate", gone):
                lru.invalidate(gone)
                for key in gone:
                    model.pop(key, None)
                changed()
            case ("clear",):
                lru.clear()
                model.clear()
                changed()
        assert len(lru) == len(model)
    for key in "abcd":
        assert lru.lookup(key) == model.get(key, MISS)


def test_a_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        EpochLRU(0)
    lru: EpochLRU[bytes] = EpochLRU(2)
    lru.put("k", b"v")
    with pytest.raises(ValueError):
        lru.resize(0)
    assert lru.lookup("k") == b"v"  # a refused resize changed nothing
    lru.resize(1)
    assert lru.lookup("k") is MISS and lru.size == 1
