"""The vendored Raft engine (consensus/_vendor/pysyncobj): each change to the
upstream copy, listed in consensus/DESIGN.md, has its test here or is named there."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consensus._vendor.pysyncobj import _RAFT_STATE
from consensus._vendor.pysyncobj.journal import MemoryJournal, createJournal
from consensus._vendor.pysyncobj.monotonic import monotonic
from consensus.backend import RaftBackend
from consensus.config import RaftConfigError
from consensus.journal import DurableJournal
from consensus.node import RaftNode
from harness.ports import free_port
from harness.raft import make_config, single_node

ROOT = Path(__file__).resolve().parents[3]
IMPORT = re.compile(r"^\s*(import|from)\s+pysyncobj\b", re.MULTILINE)


def test_the_installed_pysyncobj_is_never_imported() -> None:
    probe = (
        "import sys, consensus.backend, consensus.driver, consensus.local;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'pysyncobj');"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT)


def test_no_module_outside_the_vendored_copy_names_the_library_package() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("consensus", "node", "api", "sdk")
        for path in (ROOT / folder).rglob("*.py")
        if "_vendor" not in path.parts and IMPORT.search(path.read_text())
    ]
    assert offenders == []


def test_a_journal_instance_is_used_as_is(tmp_path: Path) -> None:
    journal = DurableJournal(tmp_path / "journal")
    try:
        assert createJournal(journal) is journal
        assert isinstance(createJournal(None), MemoryJournal)
    finally:
        journal._destroy()


async def test_the_engine_runs_on_our_journal_and_dump_store(tmp_path: Path) -> None:
    async with single_node(tmp_path / "raft") as backend:
        node = backend._node
        assert node._obj._SyncObj__raftLog is node._journal
        assert node._obj._SyncObj__serializer is node._store


async def test_outgoing_raft_connections_leave_from_the_cluster_address(tmp_path: Path) -> None:
    with socket.socket() as peer:
        peer.bind(("127.0.0.1", 0))
        peer.listen()
        peer.settimeout(10)
        peer_addr = f"127.0.0.1:{peer.getsockname()[1]}"
        config = make_config(
            tmp_path / "raft", cluster_addr=f"127.0.0.2:{free_port()}", peers={"node-2": peer_addr}
        )
        backend = await RaftBackend.open(config)
        try:
            conn, source = await asyncio.to_thread(peer.accept)
            conn.close()
        finally:
            await backend.close()
    assert source[0] == "127.0.0.2"


def test_membership_and_version_entries_are_strict_json_and_digits() -> None:
    from consensus._vendor.pysyncobj.syncobj import (
        SyncObjException,
        _decodeMembership,
        _decodeVersion,
        _encodeMembership,
        _encodeVersion,
    )

    assert _encodeMembership("add", "127.0.0.1:1") == b'["add","127.0.0.1:1"]'
    assert _decodeMembership(_encodeMembership("rem", "h:2")) == ["rem", "h:2"]
    assert _decodeVersion(_encodeVersion(3)) == 3
    for bad in (b"", b"[]", b'["add"]', b'["drop","h:1"]', b'["add",1]', b"\x80\x02K\x01."):
        with pytest.raises(SyncObjException):
            _decodeMembership(bad)
    for bad in (b"", b"-1", b"1e3", b"\x80\x02K\x01."):
        with pytest.raises((SyncObjException, UnicodeDecodeError)):
            _decodeVersion(bad)


async def test_a_single_node_leader_holds_its_lease(tmp_path: Path) -> None:
    async with single_node(tmp_path / "raft") as backend:
        assert backend.is_leader()
        for _ in range(100):  # the lease is computed at the end of the leader's tick
            if backend.has_lease():
                break
            await asyncio.sleep(0.01)
        assert backend.has_lease()
        assert backend.status()["has_lease"] is True


def test_the_lease_is_the_minimum_election_timeout_less_the_drift_margin(tmp_path: Path) -> None:
    config = make_config(tmp_path, election_timeout_min=0.2, election_timeout_max=0.3)
    assert config.lease_duration == pytest.approx(0.18)
    with pytest.raises(RaftConfigError, match="clock_drift_margin"):
        make_config(tmp_path, clock_drift_margin=0.5)
    with pytest.raises(RaftConfigError, match="two heartbeats"):
        make_config(
            tmp_path, heartbeat_interval=0.012, election_timeout_min=0.04, clock_drift_margin=0.45
        )


# -- PreVote, driven by hand on a replica whose tick thread never runs -------------------------


@pytest.fixture
def idle_replica(tmp_path: Path) -> Iterator[Any]:
    """A 3-voter replica whose peers do not exist: we call the engine ourselves."""
    peers = {"b": f"127.0.0.1:{free_port()}", "c": f"127.0.0.1:{free_port()}"}
    node = RaftNode(make_config(tmp_path / "raft", peers=peers))
    try:
        yield node._obj
    finally:
        node.stop()


def _peer(obj: Any) -> Any:
    return sorted(obj.otherNodes, key=str)[0]


def test_a_pre_vote_request_changes_neither_term_nor_vote(idle_replica: Any) -> None:
    obj = idle_replica
    term = obj.raftCurrentTerm
    request = {"type": "request_vote", "pre_vote": True, "term": term + 5,
               "last_log_index": 10**6, "last_log_term": 10**6}  # fmt: skip
    obj._SyncObj__onMessageReceived(_peer(obj), request)
    assert obj.raftCurrentTerm == term
    assert obj._SyncObj__votedForNodeId is None


def test_a_failed_candidate_asks_for_pre_votes_again_and_can_win_them(idle_replica: Any) -> None:
    obj = idle_replica
    obj._SyncObj__raftState = _RAFT_STATE.CANDIDATE
    obj._SyncObj__raftCurrentTerm = 5
    obj._SyncObj__connectedNodes.add(_peer(obj))  # elections need someone to talk to
    obj._SyncObj__raftElectionDeadline = 0

    obj._onTick(0)  # the election timer fires: a pre-vote for term 6, no new term yet
    assert obj.raftCurrentTerm == 5
    assert obj._SyncObj__raftState == _RAFT_STATE.FOLLOWER

    obj._SyncObj__onMessageReceived(
        _peer(obj), {"type": "response_vote", "pre_vote": True, "term": 6}
    )  # with our own, a majority of three: the real election starts
    assert obj.raftCurrentTerm == 6
    assert obj._SyncObj__raftState == _RAFT_STATE.CANDIDATE


def test_a_follower_that_hears_its_leader_ignores_vote_requests(idle_replica: Any) -> None:
    obj = idle_replica
    leader, candidate = sorted(obj.otherNodes, key=str)
    term = obj.raftCurrentTerm
    obj._SyncObj__raftLeader = leader
    obj._SyncObj__lastLeaderContact = monotonic()
    request = {"type": "request_vote", "term": term + 1,
               "last_log_index": 10**6, "last_log_term": 10**6}  # fmt: skip

    obj._SyncObj__onMessageReceived(candidate, request)
    assert obj.raftCurrentTerm == term  # sticky: not even the term moved

    obj._SyncObj__lastLeaderContact = monotonic() - 10  # the leader went quiet
    obj._SyncObj__onMessageReceived(candidate, request)
    assert obj.raftCurrentTerm == term + 1
    assert obj._SyncObj__votedForNodeId == candidate.id


def test_a_leader_told_of_a_later_term_steps_down(idle_replica: Any) -> None:
    obj = idle_replica
    obj._SyncObj__raftCurrentTerm = 3
    obj._SyncObj__onBecomeLeader()
    assert obj._isLeader()

    obj._SyncObj__onMessageReceived(
        _peer(obj),
        {"type": "next_node_idx", "next_node_idx": 1, "reset": False, "success": False, "term": 4},
    )
    assert not obj._isLeader()
    assert obj.raftCurrentTerm == 4


async def test_a_connect_whose_syn_is_dropped_is_retried(tmp_path: Path) -> None:
    """A firewall that drops SYNs leaves a connect pending with no socket event;
    the kernel retries only after 1, 3, 7... s. The transport gives the attempt up
    after twice the retry time and dials again, so a healed link comes back at once."""
    from tests.cluster.test_ha_partition import iptables_usable, partitioned
    from tests.conftest import require

    require(iptables_usable(), "iptables (as root) is needed to drop SYNs")
    blackhole = f"127.0.16.9:{free_port()}"
    config = make_config(
        tmp_path / "raft", cluster_addr=f"127.0.17.1:{free_port()}", peers={"b": blackhole}
    )
    with partitioned("127.0.16.9"):
        backend = await RaftBackend.open(config)
        try:
            transport = backend._node._transport
            seen: set[float] = set()
            for _ in range(500):
                seen.update(transport._lastConnectAttempt.values())
                if len(seen) >= 3:
                    break
                await asyncio.sleep(0.01)
        finally:
            await backend.close()
    assert len(seen) >= 3, "the first connect was never given up"


def test_a_conflicting_term_is_skipped_in_one_reply(idle_replica: Any) -> None:
    """A cut-off leader's uncommitted tail (here 10 entries of term 2) is unwound
    in one round trip: the reply names the first entry of the conflicting term."""
    obj = idle_replica
    journal = obj._SyncObj__raftLog
    first = journal.last_index() + 1
    for index in range(first, first + 10):
        journal.add(b"\x01", index, 1)
    for index in range(first + 10, first + 20):
        journal.add(b"\x01", index, 2)
    obj._SyncObj__raftCurrentTerm = 2
    transport = obj._SyncObj__transport
    transport._deferred.clear()

    append = {"type": "append_entries", "term": 3, "commit_index": 0, "entries": [],
              "prevLogIdx": first + 19, "prevLogTerm": 3}  # fmt: skip
    obj._SyncObj__onMessageReceived(_peer(obj), append)

    replies = [message for _, message in transport._deferred]
    assert replies[-1]["reset"] and not replies[-1]["success"]
    assert replies[-1]["next_node_idx"] == first + 10


def test_late_resets_do_not_send_the_leader_back_and_forth(idle_replica: Any) -> None:
    """A follower with a stale tail answers the appends of one burst in turn:
    "no entry at prev" (its log end + 1), then "conflict" (the start of its tail's
    term). The leader probes from the lowest index it was told, one append per
    period, until the follower matches; late resets neither raise nor undo that."""
    obj = idle_replica
    obj._SyncObj__raftCurrentTerm = 3
    obj._SyncObj__onBecomeLeader()
    journal = obj._SyncObj__raftLog
    for _ in range(40):
        journal.add(b"\x01", journal.last_index() + 1, 3)
    last = journal.last_index()
    peer = _peer(obj)
    next_index = obj._SyncObj__raftNextIndex
    obj._SyncObj__connectedNodes.add(peer)
    obj._SyncObj__onNodeConnected(peer)

    def reset(to: int) -> None:
        obj._SyncObj__onMessageReceived(
            peer, {"type": "next_node_idx", "next_node_idx": to, "reset": True, "success": False}
        )

    reset(30)  # "no entry at prev": the follower's log ends at 29
    assert next_index[peer] == 30
    reset(5)  # "conflict": its entries from 5 on are of another term
    assert next_index[peer] == 5
    reset(30)  # late: from an append sent before the first reset
    assert next_index[peer] == 5
    obj._SyncObj__sendAppendEntries()  # a probe from 5: the next index stays
    assert next_index[peer] == 5
    obj._SyncObj__onMessageReceived(
        peer, {"type": "next_node_idx", "next_node_idx": last + 1, "reset": False, "success": True}
    )
    assert next_index[peer] == last + 1
    assert obj._SyncObj__raftMatchIndex[peer] == last
    reset(5)  # late again, below what the follower confirmed: stale
    assert next_index[peer] == last + 1
    obj._SyncObj__sendAppendEntries()
    assert next_index[peer] == last + 1

    # A reconnect forgets what was confirmed: a peer that restarted is believed.
    obj._SyncObj__onNodeConnected(peer)
    reset(5)
    assert next_index[peer] == 5


def test_a_new_leader_holds_no_lease_before_its_no_op_is_applied(idle_replica: Any) -> None:
    """Echoes from a majority give the lease only once this term's no-op, and so
    every entry an earlier leader committed, is applied here: until then a read
    on this node could miss a write its predecessor acknowledged."""
    obj = idle_replica
    obj._SyncObj__raftCurrentTerm = 3
    assert obj.termStartIndex() is None  # not leading
    obj._SyncObj__onBecomeLeader()
    start = obj.termStartIndex()
    assert start is not None and start == obj._SyncObj__getCurrentLogIndex()
    peer = _peer(obj)
    stamp = int(monotonic() * 1e6)
    obj._SyncObj__onMessageReceived(
        peer,
        {"type": "next_node_idx", "next_node_idx": 1, "reset": True, "success": False,
         "term": 3, "lease": stamp},
    )  # fmt: skip  # a refused append, echoing our stamp: a majority with us
    assert obj._SyncObj__leaseStamps.get(peer) == stamp
    assert obj.raftLastApplied < start
    assert obj.leaseRemaining(0.5) == 0.0

    obj._SyncObj__raftLastApplied = start  # the no-op (and all before it) applied
    assert obj.leaseRemaining(0.5) > 0.0


async def test_the_lease_waits_for_the_loop_to_hear_of_earlier_terms(tmp_path: Path) -> None:
    """The backend's lease also needs this loop told of every entry before the
    term (its caches invalidated): ``lease_from`` is the term's no-op."""
    async with single_node(tmp_path / "raft") as backend:
        for _ in range(100):
            if backend.has_lease():
                break
            await asyncio.sleep(0.01)
        assert backend.has_lease()
        node = backend._node
        assert node.lease_from() > 0
        assert backend._loop_log_applied >= node.lease_from()
        backend._loop_log_applied = node.lease_from() - 1  # as if not yet told
        assert node.has_lease() and not backend.has_lease()
