"""The index-state memo answers exactly what ``encode_state`` computes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from api.consistency import StateMemo
from node.cluster.consistency import encode_state

_KEYS = st.sampled_from([b"k" * 32, b"j" * 32])
_CLUSTERS = st.sampled_from(["c-1", "c-2"])
_INDEXES = st.integers(min_value=0, max_value=40)


@given(st.lists(st.tuples(_KEYS, _CLUSTERS, _INDEXES), min_size=1, max_size=80))
def test_every_answer_is_the_encoded_state(calls: list[tuple[bytes, str, int]]) -> None:
    memo = StateMemo()
    for key, cluster, index in calls:
        assert memo.encode(key, cluster, index) == encode_state(key, cluster, index)


def test_a_changed_key_cluster_or_index_is_encoded_afresh() -> None:
    memo = StateMemo()
    first = memo.encode(b"k" * 32, "c", 7)
    assert memo.encode(b"k" * 32, "c", 7) is first
    assert memo.encode(b"j" * 32, "c", 7) != first
    assert memo.encode(b"k" * 32, "d", 7) != first
    assert memo.encode(b"k" * 32, "c", 8) != first


def test_it_stays_bounded() -> None:
    memo = StateMemo()
    for index in range(100):
        assert memo.encode(b"k" * 32, "c", index) == encode_state(b"k" * 32, "c", index)
    assert len(memo._states) == StateMemo.SIZE
    assert memo.encode(b"k" * 32, "c", 99) == encode_state(b"k" * 32, "c", 99)
