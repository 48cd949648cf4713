"""merge_sorted keeps a key list sorted whichever way it merges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sdk.sorted_keys import MERGE_ONE_BY_ONE, SortedKeys, merge_sorted

_keys = st.sets(st.text(max_size=4), max_size=3 * MERGE_ONE_BY_ONE)


@given(_keys, _keys)
def test_the_merged_list_is_every_key_in_order(present: set[str], more: set[str]) -> None:
    keys = sorted(present)
    added = more - present
    merge_sorted(keys, added)
    assert keys == sorted(present | added)


_steps = st.lists(
    st.tuples(st.sampled_from(["put", "delete", "list"]), st.text("ab/", max_size=3)),
    max_size=4 * MERGE_ONE_BY_ONE,
)


@given(st.sets(st.text("ab/", max_size=3), max_size=6), _steps)
def test_sorted_keys_list_what_a_set_holds(initial: set[str], steps: list[tuple[str, str]]) -> None:
    """Adds and removals pending (one at a time or past the one-by-one bound),
    re-added before a listing or removed before ever being listed: every listing
    is exactly the present keys, in order, and a prefix gives exactly its keys."""
    keys, model = SortedKeys(initial), set(initial)
    for action, key in steps:
        if action == "put" and key not in model:
            keys.add(key)
            model.add(key)
        elif action == "delete" and key in model:
            keys.discard(key)
            model.discard(key)
        elif action == "list":
            assert keys.starting_with(key) == sorted(k for k in model if k.startswith(key))
    assert keys.sorted() == sorted(model)
