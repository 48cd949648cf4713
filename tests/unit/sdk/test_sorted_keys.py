"""merge_sorted keeps a key list sorted whichever way it merges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sdk.sorted_keys import MERGE_ONE_BY_ONE, merge_sorted

_keys = st.sets(st.text(max_size=4), max_size=3 * MERGE_ONE_BY_ONE)


@given(_keys, _keys)
def test_the_merged_list_is_every_key_in_order(present: set[str], more: set[str]) -> None:
    keys = sorted(present)
    added = more - present
    merge_sorted(keys, added)
    assert keys == sorted(present | added)
