"""The follower-truncation fix (pysyncobj.md section 2, "Follower truncation").

First the pure rewrite rules, then the real thing: a pysyncobj follower fed
the rewound AppendEntries a leader sends after an out-of-order acknowledgement.
Unpatched, the library deletes entries it has already applied (and logs its
own CRITICAL); with :mod:`consensus.follower` in front, it keeps them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consensus._vendor.pysyncobj.transport import TCPTransport
from consensus.commands import Txn, encode_command
from consensus.follower import reconcile
from consensus.node import RaftNode
from harness.raft import make_config
from sdk.physical import Put

LEADER = "127.0.0.1:9"  # sorts above our address: we never dial it


class FakeLog:
    def __init__(self, terms: list[int], first: int = 1) -> None:
        self.first, self.terms = first, terms

    def first_index(self) -> int:
        return self.first

    def last_index(self) -> int:
        return self.first + len(self.terms) - 1

    def term_at(self, index: int) -> int | None:
        position = index - self.first
        return self.terms[position] if 0 <= position < len(self.terms) else None


def append(
    prev: int, prev_term: int, entries: list[tuple[int, int]], *, term: int = 1, commit: int = 0
) -> dict[str, Any]:
    return {
        "type": "append_entries",
        "term": term,
        "commit_index": commit,
        "prevLogIdx": prev,
        "prevLogTerm": prev_term,
        "entries": [(b"cmd", index, entry_term) for index, entry_term in entries],
    }


def test_new_entries_pass_through() -> None:
    log = FakeLog([0, 1, 1])
    message = append(3, 1, [(4, 1), (5, 1)], commit=5)

    result = reconcile(message, log, current_term=1, protected_index=3)

    assert result.message == message
    assert result.reply_next_index is None


def test_entries_already_held_become_a_heartbeat_at_our_last_entry() -> None:
    log = FakeLog([0, 1, 1, 1, 1, 1])  # indexes 1..6, applied up to 6
    message = append(2, 1, [(3, 1)], commit=6)  # the leader rewound nextIndex to 3

    result = reconcile(message, log, current_term=1, protected_index=6)

    assert result.message is not None
    assert (result.message["prevLogIdx"], result.message["entries"]) == (6, [])
    assert result.reply_next_index is None  # same-term tail: all of it matches the leader
    assert result.message["commit_index"] == 6


def test_overlap_then_new_entries_appends_only_the_new_ones() -> None:
    log = FakeLog([0, 1, 1, 1])
    message = append(2, 1, [(3, 1), (4, 1), (5, 1), (6, 1)], commit=6)

    result = reconcile(message, log, current_term=1, protected_index=4)

    assert result.message is not None
    assert result.message["prevLogIdx"] == 4
    assert [entry[1] for entry in result.message["entries"]] == [5, 6]
    assert result.truncates_from is None


def test_a_real_conflict_above_the_commit_index_still_truncates() -> None:
    log = FakeLog([0, 1, 1, 2, 2])  # 4 and 5 from a deposed leader of term 2
    message = append(3, 1, [(4, 3), (5, 3)], term=3, commit=5)

    result = reconcile(message, log, current_term=3, protected_index=3)

    assert result.message is not None
    assert result.message["prevLogIdx"] == 3
    assert result.truncates_from == 4
    assert result.message["commit_index"] == 5


def test_a_conflict_at_or_below_the_commit_index_is_refused() -> None:
    log = FakeLog([0, 1, 1, 2, 2])

    result = reconcile(append(3, 1, [(4, 3)], term=3), log, current_term=3, protected_index=4)

    assert result.message is None
    assert result.truncates_from == 4


def test_unverified_older_term_tail_is_kept_but_not_claimed() -> None:
    log = FakeLog([0, 1, 1, 1, 1, 1])  # 1..6 of term 1; the leader is now term 2
    message = append(2, 1, [(3, 1), (4, 1)], term=2, commit=6)

    result = reconcile(message, log, current_term=2, protected_index=2)

    assert result.message is not None
    assert (result.message["prevLogIdx"], result.message["entries"]) == (6, [])
    assert result.reply_next_index == 5  # only 1..4 were proven to match
    assert result.message["commit_index"] == 4  # Raft: min(leaderCommit, last new entry)


@pytest.mark.parametrize(
    "message",
    [
        append(9, 1, [(10, 1)]),  # we lack prevLogIdx: the library answers "reset"
        append(3, 7, [(4, 7)]),  # prevLogTerm differs: "no match"
        {**append(2, 1, [(3, 1)]), "term": 0},  # stale leader: ignored
        {"type": "append_entries", "term": 1, "serialized": (b"", True, False)},
        {**append(2, 1, []), "transmission": "start", "data": b""},
        {"type": "request_vote", "term": 1},
    ],
)
def test_messages_the_library_handles_safely_pass_through(message: dict[str, Any]) -> None:
    log = FakeLog([0, 1, 1, 1, 1])

    assert reconcile(message, log, current_term=1, protected_index=5).message is message


# -- against pysyncobj itself ------------------------------------------------------------


@pytest.fixture
def follower(tmp_path: Path) -> Iterator[RaftNode]:
    node = RaftNode(make_config(tmp_path / "raft", peers={"leader": LEADER}))
    try:
        yield node
    finally:
        node.stop()


def entry(node: RaftNode, index: int) -> tuple[bytes, int, int]:
    blob = encode_command(Txn(f"id-{index}", (Put(f"k{index}", b"v"),)))
    return (b"\x00" + blob, index, 1)


def deliver(node: RaftNode, message: dict[str, Any]) -> list[dict[str, Any]]:
    """Hand ``message`` to the follower as if from the leader; return its replies."""
    (leader,) = node._obj.otherNodes
    node._transport._onMessageReceived(leader, message)
    replies = [reply for _, reply in node._transport._deferred]  # held until the fsync
    node._transport._deferred.clear()
    node._obj.doTick(0)  # applies whatever became committed
    return replies


def replicate_six(node: RaftNode) -> None:
    entries = [entry(node, index) for index in range(2, 7)]
    message = {
        "type": "append_entries",
        "term": 1,
        "commit_index": 6,
        "prevLogIdx": 1,
        "prevLogTerm": 0,
        "entries": entries,
    }
    assert deliver(node, message)[-1]["next_node_idx"] == 7
    assert node.applied_index() == 6


def rewound(node: RaftNode) -> dict[str, Any]:
    return {
        "type": "append_entries",
        "term": 1,
        "commit_index": 6,
        "prevLogIdx": 2,
        "prevLogTerm": 1,
        "entries": [entry(node, 3)],
    }


def test_pysyncobj_alone_truncates_applied_entries(
    follower: RaftNode, caplog: pytest.LogCaptureFixture
) -> None:
    """The control: bypass our reconcile and the library deletes 4..6."""
    replicate_six(follower)
    (leader,) = follower._obj.otherNodes

    with caplog.at_level(logging.CRITICAL, logger="pysyncobj"):
        TCPTransport._onMessageReceived(follower._transport, leader, rewound(follower))

    assert follower._journal.last_index() == 3
    assert follower.applied_index() == 6
    assert "truncating already-applied log entries" in caplog.text


def test_reconciled_follower_keeps_applied_entries(
    follower: RaftNode, caplog: pytest.LogCaptureFixture
) -> None:
    replicate_six(follower)

    with caplog.at_level(logging.CRITICAL):
        replies = deliver(follower, rewound(follower))

    assert follower._journal.last_index() == 6
    assert follower.commit_index() == 6
    assert [reply["next_node_idx"] for reply in replies] == [7]
    assert "truncating" not in caplog.text
    assert follower.state.get("k6") == (b"v", 6)


def test_follower_refuses_to_rewrite_a_committed_entry(
    follower: RaftNode, caplog: pytest.LogCaptureFixture
) -> None:
    replicate_six(follower)
    conflicting = (entry(follower, 5)[0], 5, 2)
    message = {
        "type": "append_entries",
        "term": 2,
        "commit_index": 6,
        "prevLogIdx": 4,
        "prevLogTerm": 1,
        "entries": [conflicting],
    }

    with caplog.at_level(logging.CRITICAL):
        assert deliver(follower, message) == []

    assert follower._journal.last_index() == 6
    assert follower._transport.refused_appends == 1
    assert "refusing an append" in caplog.text


def test_acknowledgements_leave_only_after_the_journal_fsync(
    follower: RaftNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    journal = follower._journal
    real_sync = journal.sync
    monkeypatch.setattr(
        journal, "sync", lambda: events.append(f"sync@{journal.last_index()}") or real_sync()
    )
    monkeypatch.setattr(
        TCPTransport, "send", lambda self, node, message: events.append(message["type"]) or True
    )
    (leader,) = follower._obj.otherNodes
    message = {
        "type": "append_entries",
        "term": 1,
        "commit_index": 1,
        "prevLogIdx": 1,
        "prevLogTerm": 0,
        "entries": [entry(follower, 2), entry(follower, 3)],
    }

    follower._transport._onMessageReceived(leader, message)
    assert events == [] and journal.dirty, "the reply waits"
    follower._transport.flush_acks()

    assert events == ["sync@3", "next_node_idx"]
    assert not journal.dirty
    assert journal.synced_index == 3
