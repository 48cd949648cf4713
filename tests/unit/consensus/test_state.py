"""KVState: what every replica does with a command at a log index."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consensus.commands import (
    Applied,
    Batch,
    BatchResult,
    MemberChange,
    Mismatch,
    Rejected,
    Restore,
    Result,
    Txn,
)
from consensus.state import IDEMPOTENCY_WINDOW, ChangeSet, KVState
from sdk.physical import Check, Delete, Put, children_of


def txn(command_id: str, *ops: Put | Delete | Check) -> Txn:
    return Txn(command_id, ops)


def test_revision_is_the_log_index_of_the_entry() -> None:
    state = KVState()

    result, changes = state.apply(7, txn("a", Put("k", b"v"), Put("dir/x", b"w")))

    assert result == Applied(7)
    assert changes == ChangeSet(7, ("k", "dir/x"))
    assert state.get("k") == (b"v", 7)
    assert state.get("dir/x") == (b"w", 7)
    assert state.applied_index == 7
    assert state.list("") == ["dir/", "k"]


def test_a_failed_check_applies_nothing_but_consumes_the_index() -> None:
    state = KVState()
    state.apply(2, txn("a", Put("existing", b"1"), Put("doomed", b"2")))

    result, changes = state.apply(
        3,
        txn("b", Put("new", b"x"), Delete("doomed"), Check("existing", 99), Put("other", b"y")),
    )

    assert result == Mismatch("existing", 99, 2)
    assert changes is None
    assert state.get("new") is None
    assert state.get("doomed") == (b"2", 2)
    assert state.applied_index == 3
    assert state.list("") == ["doomed", "existing"]


def test_expect_zero_means_absent_and_checks_see_the_pre_state() -> None:
    state = KVState()

    assert state.apply(2, txn("a", Put("k", b"1", expect=0)))[0] == Applied(2)
    assert state.apply(3, txn("b", Put("k", b"2", expect=0)))[0] == Mismatch("k", 0, 2)
    assert state.apply(4, txn("c", Delete("k", expect=2), Put("k", b"3", expect=2)))[0] == Applied(
        4
    )
    assert state.get("k") == (b"3", 4)


def test_a_retried_command_id_returns_the_first_outcome_without_reapplying() -> None:
    state = KVState()
    first, _ = state.apply(5, txn("same-id", Put("k", b"v1")))
    state.apply(6, txn("other", Put("k", b"v2")))

    retry, changes = state.apply(9, txn("same-id", Put("k", b"v1")))

    assert retry == first == Applied(5)
    assert changes is None
    assert state.get("k") == (b"v2", 6)
    assert state.applied_index == 9
    assert state.result_for("same-id") == Applied(5)


def test_a_retried_failed_command_fails_the_same_way() -> None:
    state = KVState()
    state.apply(2, txn("seed", Put("k", b"v")))
    first, _ = state.apply(3, txn("cas", Put("k", b"x", expect=1)))

    state.apply(4, txn("fix", Put("k", b"y", expect=2)))  # now revision 4 ...

    assert (
        state.apply(5, txn("cas", Put("k", b"x", expect=4)))[0] == first
    )  # ... same id: same answer


def test_the_id_window_is_a_fixed_count() -> None:
    state = KVState()
    for index in range(2, IDEMPOTENCY_WINDOW + 3):
        state.apply(index, txn(f"id-{index}", Put("k", b"v")))

    assert state.result_for("id-2") is None
    assert state.result_for("id-3") == Applied(3)


def test_an_index_is_never_applied_twice() -> None:
    state = KVState()
    state.apply(4, txn("a", Put("k", b"1")))

    result, changes = state.apply(4, txn("b", Put("k", b"2")))

    assert isinstance(result, Rejected)
    assert changes is None
    assert state.get("k") == (b"1", 4)


def test_invalid_keys_reject_the_whole_command_identically() -> None:
    state = KVState()

    result, _ = state.apply(2, txn("a", Put("fine", b"1"), Put("/bad", b"2")))

    assert isinstance(result, Rejected)
    assert state.get("fine") is None
    assert state.applied_index == 2


def test_restore_replaces_everything_at_one_new_revision() -> None:
    state = KVState()
    state.apply(2, txn("a", Put("old", b"1"), Put("kept", b"old")))

    result, changes = state.apply(10, Restore("r", (("kept", b"new"), ("x/y", b"2"))))

    assert result == Applied(10)
    assert changes == ChangeSet(10, (), reset=True)
    assert state.get("old") is None
    assert state.get("kept") == (b"new", 10)
    assert state.list("") == ["kept", "x/"]
    assert state.apply(11, txn("b", Put("kept", b"next")))[0] == Applied(11)


def test_member_changes_touch_no_keys() -> None:
    state = KVState()

    assert state.apply(3, MemberChange("m", "node-4", "10.0.0.4:1"))[0] == Applied(3)
    assert state.members() == {"node-4": "10.0.0.4:1"}
    state.apply(4, MemberChange("n", "node-4", None))
    assert state.members() == {}
    assert state.list("") == []


def test_capture_and_load_round_trip() -> None:
    state = KVState()
    state.apply(2, txn("a", Put("a", b"1"), Put("b/c", b"2")))
    state.apply(3, MemberChange("m", "n2", "h:1"))
    image = state.capture()
    state.apply(4, txn("later", Put("a", b"changed")))

    copy = KVState()
    copy.load(image)

    assert copy.get("a") == (b"1", 2)
    assert copy.list("b/") == ["c"]
    assert copy.applied_index == 3
    assert copy.result_for("a") == Applied(2)
    assert copy.members() == {"n2": "h:1"}
    assert state.get("a") == (b"changed", 4), "the capture is a copy"


@pytest.mark.parametrize("prefix", ["/", "a//", "../"])
def test_list_with_an_impossible_prefix_is_empty(prefix: str) -> None:
    state = KVState()
    state.apply(2, txn("a", Put("a/x", b"1")))

    assert state.list(prefix) == []


_KEYS = st.sampled_from(["a", "a/b", "a/c", "b", "b/x/y", "c", "ca", "d/e", "d/f", "z"])
#: (kind, key): a put, a delete or a list (of that key's parent prefix).
_STEPS = st.lists(st.tuples(st.sampled_from(["put", "delete", "list"]), _KEYS), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_STEPS, st.integers(min_value=0, max_value=3))
def test_list_matches_the_keys_whatever_the_order_of_writes_and_lists(
    steps: list[tuple[str, str]], batch_lists_every: int
) -> None:
    """The sorted key list is merged lazily (pending adds and removals, one by one
    or in one pass): every ``list`` must still see exactly the stored keys."""
    state = KVState()
    model: set[str] = set()
    index = 1
    for position, (kind, key) in enumerate(steps):
        if kind == "list" or (batch_lists_every and position % (batch_lists_every * 7) == 0):
            prefix = key.rpartition("/")[0] + "/" if "/" in key else ""
            matched = sorted(k for k in model if k.startswith(prefix))
            assert state.list(prefix) == children_of(prefix, matched)
            continue
        index += 1
        op = Put(key, b"v") if kind == "put" else Delete(key)
        state.apply(index, txn(f"c{index}", op))
        if kind == "put":
            model.add(key)
        else:
            model.discard(key)
    assert state.list("") == children_of("", sorted(model))


def test_many_pending_keys_merge_in_one_pass() -> None:
    state = KVState()
    state.apply(2, txn("a", *(Put(f"k{n:03}", b"v") for n in range(50))))
    assert state.list("") == [f"k{n:03}" for n in range(50)]
    state.apply(3, txn("b", *(Delete(f"k{n:03}") for n in range(0, 50, 2))))
    state.apply(4, txn("c", Put("k000", b"again"), Put("a", b"new")))
    assert state.list("") == ["a", "k000", *(f"k{n:03}" for n in range(1, 50, 2))]


def test_restore_and_load_drop_pending_keys() -> None:
    state = KVState()
    state.apply(2, txn("a", Put("gone", b"1")))
    state.apply(3, Restore("r", (("kept", b"2"),)))
    assert state.list("") == ["kept"]
    image = state.capture()
    state.apply(4, txn("b", Put("later", b"3"), Delete("kept")))
    state.load(image)
    assert state.list("") == ["kept"]


_OPS = st.lists(
    st.one_of(
        st.builds(Put, _KEYS, st.just(b"v"), st.sampled_from([None, 0, 2, 3])),
        st.builds(Delete, _KEYS, st.sampled_from([None, 0, 2])),
        st.builds(Check, _KEYS, st.sampled_from([0, 2])),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_OPS, min_size=1, max_size=8), st.lists(st.booleans(), max_size=8))
def test_a_batch_applies_as_its_transactions_would_one_entry_each(
    txns: list[list[Put | Delete | Check]], repeat_id: list[bool]
) -> None:
    """Same values, revisions, results and changed keys (in order, once each) as
    separate entries, also with a retried id inside the batch."""
    commands = [
        txn("c0" if index and repeat_id[index : index + 1] == [True] else f"c{index}", *ops)
        for index, ops in enumerate(txns)
    ]
    batched, single = KVState(), KVState()
    for state in (batched, single):
        state.apply(1, txn("seed", Put("a", b"s"), Put("b", b"s")))

    result, changes = batched.apply(2, Batch(tuple(commands)))

    expected_keys: dict[str, None] = {}
    expected_results: list[Result] = []
    for position, command in enumerate(commands):
        one, one_changes = single.apply(2 + position, command)
        assert not isinstance(one, BatchResult)
        expected_results.append(one)
        if one_changes is not None:
            expected_keys.update(dict.fromkeys(one_changes.keys))
    assert result == BatchResult(tuple(expected_results))
    assert (changes.keys if changes else ()) == tuple(expected_keys)
    for key in ("a", "a/b", "a/c", "b", "b/x/y", "c", "ca", "d/e", "d/f", "z"):
        assert batched.get(key) == single.get(key)
    assert batched.list("") == single.list("")
