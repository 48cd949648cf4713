"""One replica and the thread that drives it.

pysyncobj runs with ``autoTick=False``; this module's thread calls
``doTick`` in a loop, which gives us the sync points the durability rule
needs and a clean, joinable stop:

* **strict durability** (default): the journal is fsynced before every tick
  (the leader counts its own log towards a majority at the start of a tick,
  so everything it appended is on disk by then) and just before the tick
  waits on the network (so its own fsync overlaps the followers'); followers
  hold their acknowledgements until that fsync (:mod:`consensus.transport`).
  One fsync covers everything appended in a tick: group commit.
* **relaxed**: fsync every ``relaxed_sync_interval`` only.

Cost, measured with ``tests/cluster/bench_raft.py`` (3 processes, loopback,
2 vCPU): one writer on the leader 531 writes/s, p50 1.8 ms strict vs 645/s,
1.4 ms relaxed. Failover after kill -9 of the leader: 0.42 s median
(0.30-0.63) to a new leader and the first new write. Concurrent writes share
entries (:mod:`consensus.batching`). On a shared VM, measured back to back,
32 writers went from 1.4k to 3.8k writes/s and from 1270 to 380 µs of CPU per
write (all three processes). One writer stayed at about 4.4 ms of CPU per write
(one entry each, spent in the engine's per-message work: encoding, Fernet, ticks
on all three nodes), ~1.75 ms after issue 16 (``python -m bench.raft_cpu
--raft-only``). Details in ``consensus/DESIGN.md``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from consensus._vendor.pysyncobj.poller import POLL_EVENT_TYPE
from consensus.commands import Batch, Command
from consensus.config import Durability, RaftConfig, to_syncobj_conf
from consensus.dumps import SnapshotStore
from consensus.journal import DurableJournal
from consensus.pki import reload_certificate, tls_contexts
from consensus.snapshot import SnapshotError
from consensus.state import ChangeSet, KVState
from consensus.state_machine import Listener, ReplicatedStore
from consensus.transport import CofferTransport
from sdk.certs import RaftTLS
from sdk.errors import StorageError
from sdk.timings import Timings

__all__ = ["RaftNode"]

log = logging.getLogger(__name__)

_CANDIDATE = 1  # pysyncobj's _RAFT_STATE.CANDIDATE
_STATUS_EVERY = 0.1


def _prepare_dir(path: Path) -> int:
    """Create the directory 0700 (tightening an existing one) and lock it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    fd = os.open(path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise StorageError(f"raft data at {path} is in use by another process") from exc
    return fd


def _check_bindable(address: str) -> None:
    """Fail start-up cleanly; the library leaks its socket when bind fails."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            host, int(port), type=socket.SOCK_STREAM
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(sockaddr)
    except OSError as exc:
        raise StorageError(f"cannot bind the raft address {address}: {exc}") from exc


class RaftNode:
    """Journal, dump store, SyncObj and tick thread of one Coffer node."""

    def __init__(self, config: RaftConfig) -> None:
        self.config = config
        self.failure: str | None = None
        self.on_progress: Callable[[int], None] | None = None
        #: Called on the Raft thread where what it produced should reach the
        #: loop: before it blocks in the poll, after each tick, and on stopping.
        self.on_handoff: Callable[[], None] | None = None
        self._strict = config.durability is Durability.STRICT
        self._stop = threading.Event()
        self._raw_status: dict[str, Any] = {}
        #: Peers' addresses connected at the last status capture (every ``_STATUS_EVERY``).
        self._connected: frozenset[str] = frozenset()
        self._last_sync = self._next_ping = self._next_status = 0.0
        self._last_applied = 0
        self._lease_until = 0.0
        #: The first log index of this leader's term, taken with the lease.
        self._lease_from = 0
        #: Engine calls that must run on the Raft thread (the engine is not thread-safe).
        self._raft_calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        root = Path(config.data_dir)
        self._lock_fd = _prepare_dir(root)
        journal: DurableJournal | None = None
        try:
            _check_bindable(config.cluster_addr)
            self._journal = journal = DurableJournal(root / "journal")
            journal.count_unsynced = not self._strict
            journal.write_at_sync = self._strict
            self._state = KVState()
            self._store = SnapshotStore(
                root / "dump.jsonl",
                self._state,
                self._journal,
                config.snapshot_chunk_bytes,
                compact_bytes=config.compaction_min_bytes,
            )
            self._align_journal_with_dump()
            transport = functools.partial(self._make_transport, self._journal, self._strict)
            self._tls_dir = root / "tls"
            self._tls = tls_contexts(config.tls, self._tls_dir) if config.tls else None
            conf = to_syncobj_conf(
                config,
                journal=self._journal,
                dump_file=root / "dump.jsonl",
                snapshot_store=self._store,
                tls_contexts=self._tls,
            )
            self._obj = ReplicatedStore(
                config.cluster_addr, list(config.peers.values()), conf, self._state, transport
            )
        except BaseException as exc:
            if journal is not None:
                journal._destroy()
            self._release()
            if isinstance(exc, OSError | SnapshotError | ValueError):
                raise StorageError(f"cannot open raft storage at {root}: {exc}") from exc
            raise
        # A dump replaces the whole state (start-up, or a snapshot from the
        # leader): every cached key may be stale.
        self._store.on_loaded = lambda index: self._obj.notify(
            ChangeSet(index + self._state.offset, (), reset=True)
        )
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._obj._poller.subscribe(self._wake_r, self._drain_wake, POLL_EVENT_TYPE.READ)
        self._obj.addOnTickCallback(self._before_poll)
        self._thread = threading.Thread(target=self._run, name=f"coffer-raft-{config.node_id}")

    def _align_journal_with_dump(self) -> None:
        """Finish a compaction a crash interrupted (dump renamed, journal not cut).

        pysyncobj clears the whole journal when its first two entries are not
        the dump's, which would drop acknowledged entries after the dump.
        """
        point = self._store.preload()
        if point is None:
            return
        position = self._journal.position_of(point.prev)
        if position and self._journal.position_of(point.last) == position + 1:
            log.warning("completing an interrupted log compaction at %d", point.index)
            self._journal.deleteEntriesTo(position)

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking and release everything (blocking: call off the event loop)."""
        self._stop.set()
        self._wake()
        if self._thread.is_alive():
            self._thread.join()
        elif self._lock_fd >= 0:
            self._shutdown()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._strict:
                    self._journal.sync()
                try:
                    self._obj.doTick(self.config.tick_interval)
                except Exception:
                    if self._journal.broken is not None:
                        raise  # never run on after a failed journal write
                    log.exception("raft tick failed; continuing")
                    time.sleep(self.config.tick_interval)
                self._after_tick()
        except Exception as exc:
            self.failure = f"raft node stopped: {exc!r}"
            log.critical(self.failure, exc_info=True)
        finally:
            self._shutdown()
            self._hand_off()  # whatever stopping the engine answered

    def _shutdown(self) -> None:
        try:
            self._obj.destroy()  # autoTick=False: tears down transport and journal now
        except Exception:
            log.exception("raft shutdown failed")
        self._store.close()
        self._obj._poller.unsubscribe(self._wake_r)
        wake_r, wake_w, self._wake_r, self._wake_w = self._wake_r, self._wake_w, -1, -1
        os.close(wake_r)
        os.close(wake_w)
        self._release()

    def _release(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # -- the tick ----------------------------------------------------------------

    def _before_poll(self) -> None:
        while True:
            try:
                call = self._raft_calls.get_nowait()
            except queue.Empty:
                break
            call()
        self._hand_off()  # the loop runs while we sync and wait
        if self._strict:
            self._journal.sync()  # the leader's own fsync overlaps the followers'
            self._transport.flush_acks()
        self._journal.reserve()  # after the acknowledgements: off a write's path
        if self._single_leader_has_uncommitted():
            self._wake()  # nobody will send us an ack; commit on the next tick at once

    def _hand_off(self) -> None:
        """Report a new applied index (once per index), then hand what this thread
        posted to the loop in one wake-up.

        Before the poll, so a tick's applied entries reach the loop with their
        commit callbacks; after the tick, for entries applied while the poll
        handled messages.
        """
        applied = self.applied_index()
        if applied != self._last_applied:
            self._last_applied = applied
            if self.on_progress is not None:
                self.on_progress(applied)
        if self.on_handoff is not None:
            self.on_handoff()

    def _single_leader_has_uncommitted(self) -> bool:
        obj = self._obj
        return (
            not obj.otherNodes
            and obj._isLeader()
            and obj.raftCommitIndex < self._journal.last_index()
        )

    def _after_tick(self) -> None:
        now = time.monotonic()
        transport = self._transport
        if self._strict:
            transport.flush_acks()
        elif now - self._last_sync >= self.config.relaxed_sync_interval:
            self._journal.sync()
            self._last_sync = now
        if self.config.ping_interval and now >= self._next_ping:
            transport.ping_peers()
            self._next_ping = now + self.config.ping_interval
        if now >= self._next_status:
            raw = self._raw_status = self._obj.getStatus()
            self._connected = frozenset(
                key.removeprefix("partner_node_status_server_")
                for key, value in raw.items()
                if key.startswith("partner_node_status_server_") and value == 2
            )
            self._next_status = now + _STATUS_EVERY
        # Our clock is read before the engine's, so the expiry errs early, never late.
        before = time.monotonic()
        self._lease_from = int(self._obj.termStartIndex() or 0)
        self._lease_until = before + float(self._obj.leaseRemaining(self.config.lease_duration))
        self._hand_off()
        if self._store.failed:
            raise StorageError(self._store.failed)

    def _make_transport(self, journal: DurableJournal, strict: bool, *args: Any) -> CofferTransport:
        self._transport = CofferTransport(
            *args, journal=journal, defer_acks=strict, identity_of=self._node_id_at
        )
        return self._transport

    def _node_id_at(self, address: str) -> str | None:
        """The node id the cluster knows at ``address`` (replicated joins over the
        founding peers), for checking a peer's certificate; None if unknown."""
        for node_id, known in self._state.members().items():
            if known == address:
                return node_id
        for node_id, known in self.config.peers.items():
            if known == address:
                return node_id
        return None

    def _wake(self) -> None:
        if self._wake_w < 0:
            return  # stopped: the fd number may already belong to someone else
        with contextlib.suppress(OSError):  # a full pipe is already a wake-up
            os.write(self._wake_w, b"x")

    def _drain_wake(self, descr: int, event: int) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass

    # -- thread-safe API -----------------------------------------------------------

    @property
    def state(self) -> KVState:
        return self._state

    def add_listener(self, listener: Listener) -> None:
        self._obj.add_listener(listener)

    def submit(
        self,
        blob: bytes,
        callback: Callable[[Any, int], None],
        decoded: Command | Batch | None = None,
    ) -> None:
        self._obj.submit(blob, callback, decoded)

    def add_node(self, address: str, callback: Callable[[Any, int], None]) -> None:
        self._obj.addNodeToCluster(address, callback=callback)

    def remove_node(self, address: str, callback: Callable[[Any, int], None]) -> None:
        self._obj.removeNodeFromCluster(address, callback=callback)

    def transfer_leadership(self, callback: Callable[[Any, int], None]) -> None:
        """Hand leadership to the most caught-up connected follower (Raft TimeoutNow),
        on the Raft thread; ``callback(None, error)`` says whether the request left."""
        self._raft_calls.put(lambda: self._obj.transferLeadership(callback=callback))
        self._wake()

    def force_compaction(self) -> None:
        self._obj.forceLogCompaction()

    def reload_tls(self, tls: RaftTLS) -> None:
        """Present ``tls``'s certificate from the next handshake on (a rotation),
        swapped in on the Raft thread, which is the one that uses the contexts."""
        contexts = self._tls
        if contexts is None:
            raise StorageError("this replica runs without TLS")
        self._raft_calls.put(lambda: reload_certificate(contexts, tls, self._tls_dir))
        self._wake()

    @property
    def fsync_timings(self) -> Timings:
        """The journal's ``fdatasync`` durations (recorded on the Raft thread)."""
        return self._journal.fsync_timings

    def is_leader(self) -> bool:
        return bool(self._obj._isLeader())

    def has_lease(self) -> bool:
        """Leader, and a majority acknowledged it within ``config.lease_duration``.

        The expiry is computed on the Raft thread every tick; if that thread
        stalls the lease simply runs out.
        """
        return self.is_leader() and time.monotonic() < self._lease_until

    def lease_from(self) -> int:
        """The log index of the first entry of the term the lease is held in (its
        no-op): the entries before it were written by earlier leaders."""
        return self._lease_from

    def leader_address(self) -> str | None:
        leader = self._obj._getLeader()
        return None if leader is None else str(leader.id)

    def applied_index(self) -> int:
        # The library counts an entry applied only after its callbacks ran;
        # our state counts it as soon as it changed, which is what readers see.
        return max(int(self._obj.raftLastApplied), self._state.applied_index)

    def commit_index(self) -> int:
        return int(self._obj.raftCommitIndex)

    def addresses(self) -> list[str]:
        """Every voter this node knows: itself and its peers."""
        return [self.config.cluster_addr, *sorted(node.id for node in self._obj.otherNodes)]

    def connected_peers(self) -> frozenset[str]:
        """Addresses of the peers connected at the last status capture: what
        ``status()["connected"]`` says, without building the whole status."""
        return self._connected

    def status(self) -> dict[str, Any]:
        raw = self._raw_status
        return {
            "state": "leader"
            if self.is_leader()
            else ("candidate" if raw.get("state") == _CANDIDATE else "follower"),
            "term": int(self._obj.raftCurrentTerm),
            "leader": self.leader_address(),
            "commit_index": self.commit_index(),
            "applied_index": self.applied_index(),
            "log_length": raw.get("log_len"),
            "has_quorum": raw.get("has_quorum"),
            "has_lease": self.has_lease(),
            "match_index": {
                key.removeprefix("match_idx_server_"): value
                for key, value in raw.items()
                if key.startswith("match_idx_server_")
            },
            "connected": {
                key.removeprefix("partner_node_status_server_"): value == 2
                for key, value in raw.items()
                if key.startswith("partner_node_status_server_")
            },
        }
