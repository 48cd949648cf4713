"""Full dumps for log compaction, written off the Raft thread in our format.

This object stands in for pysyncobj's ``Serializer`` (same six methods; the
vendored engine takes it as ``SyncObjConf(snapshotStore=...)``). The library's own class
cannot do what we need even with its ``serializer`` hooks:

* with a custom serializer it never forks but runs the hook *on the tick
  thread* and renames the tmp file the moment the hook returns, so an
  asynchronous writer is impossible, and a big synchronous one stalls
  heartbeats (pysyncobj.md section 4);
* its default fork path is unsafe here: ``os.fork`` in a process running an
  asyncio loop and several threads copies locks held by other threads into
  the child (a deadlock waiting to happen; Python 3.12 warns about exactly
  this), and the child pickles our objects;
* it neither fsyncs a dump nor checks a snapshot received from the leader
  before renaming it over ours.

Here a dump is a cheap copy of the state taken on the Raft thread (values are
immutable bytes, so a shallow dict copy), encoded and written by a plain
thread: tmp + fsync + rename + directory fsync, no fork. pysyncobj truncates
its journal only after :meth:`checkSerializing` reports success, i.e. after
the dump is durable. A snapshot streamed from the leader arrives in
acknowledged, resumable chunks (:mod:`consensus.snapshot_stream`) into a side
file; once complete it is checked against its digest, fully verified, and
refused if it is older than what this node has applied or if our log already
holds its last entry (Raft keeps the log then; pysyncobj would discard it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from consensus._vendor.pysyncobj.config import SERIALIZER_STATE
from consensus._vendor.pysyncobj.node import TCPNode
from consensus.journal import DurableJournal, fsync_dir
from consensus.snapshot import RaftPoint, SnapshotError, decode_snapshot, encode_snapshot
from consensus.snapshot_stream import (
    Chunk,
    ChunkAck,
    IncomingSnapshot,
    OutgoingSnapshot,
    SnapshotId,
)
from consensus.state import KVState, StateImage

__all__ = ["SnapshotStore"]

log = logging.getLogger(__name__)

#: A journal smaller than this is never compacted for its size alone (the default
#: of ``RaftConfig.compaction_min_bytes``). A dump costs every node a copy of the
#: state on the Raft thread, an encode under the GIL and a write with its fsync,
#: all at the same index; under the former 4 MiB floor a small store dumped about
#: once a second at 2,500 writes/s (docs/performance.md, "Ninth pass").
JOURNAL_COMPACT_BYTES = 32 * 1024 * 1024


#: The dump writer sleeps this long after each line (512 keys or results) it
#: encodes. Encoding holds the GIL, and the event loop and the Raft thread would
#: get it back only at the 5 ms switch interval: every node dumps at the same
#: index, and a 6 MB dump stalled the cluster's writes for ~100 ms. Pacing
#: makes the dump take about twice as long and halves the dip (docs/performance.md,
#: "Ninth pass").
DUMP_LINE_PAUSE = 0.0005


class SnapshotStore:
    """The dump file at ``path``, its writer thread and its transmissions."""

    def __init__(
        self,
        path: Path,
        state: KVState,
        journal: DurableJournal,
        chunk: int,
        compact_bytes: int = JOURNAL_COMPACT_BYTES,
    ) -> None:
        self._path = path
        self._compact_bytes = compact_bytes
        self._state = state
        self._journal = journal
        self._chunk = chunk
        self._writer: threading.Thread | None = None
        self._written = False
        self._serialize_id: int | None = None
        self._outgoing: dict[Any, OutgoingSnapshot] = {}
        self._incoming = IncomingSnapshot(path)
        self._loaded: tuple[StateImage, RaftPoint] | None = None
        #: The dump on disk: its identity and size (what followers are sent).
        self.dump_id: tuple[SnapshotId, int] | None = None
        self._written_id: tuple[SnapshotId, int] | None = None
        self._applied_bytes = 0  # entry bytes applied since the dump (compactionPoint)
        self.failed: str | None = None  # set when a load fails; the node fail-stops
        #: Called with the dump's index after the state was replaced by a dump.
        self.on_loaded: Callable[[int], None] | None = None

    # -- reading ---------------------------------------------------------------

    def read(self, path: Path | None = None) -> tuple[StateImage, RaftPoint] | None:
        """Parse and verify the dump (``None`` if there is none)."""
        loaded = self._read_with_id(path or self._path)
        return None if loaded is None else loaded[0]

    def _read_with_id(
        self, path: Path
    ) -> tuple[tuple[StateImage, RaftPoint], tuple[SnapshotId, int]] | None:
        digest = hashlib.sha256()
        size = 0

        def hashed(lines: Iterable[bytes]) -> Iterator[bytes]:
            nonlocal size
            for line in lines:
                digest.update(line)
                size += len(line)
                yield line

        try:
            with open(path, "rb") as stream:
                image, raft = decode_snapshot(hashed(stream))
        except FileNotFoundError:
            return None
        if raft is None:
            raise SnapshotError("the dump file holds an export, not a dump")
        return (image, raft), (SnapshotId(raft.index, raft.last[2], digest.hexdigest()), size)

    def preload(self) -> RaftPoint | None:
        """Verify the dump before pysyncobj loads it, so a bad one stops start-up."""
        found = self._read_with_id(self._path)
        if found is None:
            self._loaded = None
            return None
        self._loaded, self.dump_id = found
        self._incoming.drop_if_covered(self.dump_id[0].index)
        return self._loaded[1]

    # -- pysyncobj's Serializer interface ----------------------------------------

    def deserialize(self) -> tuple[None, Any, Any, list[TCPNode]]:
        try:
            loaded = self._loaded or self.read()
            if loaded is None:
                raise SnapshotError("dump file vanished")
        except (OSError, SnapshotError) as exc:
            # pysyncobj swallows this and would run on with a partial state.
            self.failed = f"cannot load raft dump: {exc}"
            log.critical(self.failed)
            raise
        self._loaded = None
        image, raft = loaded
        self._state.load(image)
        self._applied_bytes = 0  # the journal after the dump is replayed (and counted) next
        if self.on_loaded is not None:
            self.on_loaded(raft.index)
        return None, raft.last, raft.prev, [TCPNode(address) for address in raft.cluster]

    def serialize(self, data: tuple[Any, Any, Any, Any], id: int) -> None:
        if self._writer is not None:
            return
        _, last, prev, cluster = data
        raft = RaftPoint(
            (bytes(last[0]), last[1], last[2]),
            (bytes(prev[0]), prev[1], prev[2]),
            tuple(sorted(node.id for node in cluster if node is not None)),
        )
        image = self._state.capture()  # on the Raft thread: consistent with `last`
        self._applied_bytes = 0
        self._serialize_id = id
        self._written = False
        self._writer = threading.Thread(
            target=self._write, args=(image, raft), name="coffer-raft-dump", daemon=True
        )
        self._writer.start()

    def checkSerializing(self) -> tuple[int, int | None]:
        writer = self._writer
        if writer is None:
            return SERIALIZER_STATE.NOT_SERIALIZING, None
        if writer.is_alive():
            return SERIALIZER_STATE.SERIALIZING, self._serialize_id
        writer.join()
        self._writer = None
        if not self._written:
            return SERIALIZER_STATE.FAILED, self._serialize_id
        self.dump_id = self._written_id
        self._close_outgoing()  # followers move on to the new dump
        return SERIALIZER_STATE.SUCCESS, self._serialize_id

    def getTransmissionData(self, transmissionID: Any) -> Chunk | None:
        """The next chunk of our dump for follower ``transmissionID``, or ``None`` for now."""
        if self._writer is not None or self.dump_id is None:
            return None  # the file is about to change; pysyncobj retries later
        snapshot, size = self.dump_id
        current = self._outgoing.get(transmissionID)
        if current is None or current.snapshot != snapshot:
            if current is not None:
                current.close()
            try:
                stream = open(self._path, "rb")  # noqa: SIM115 (kept across ticks)
            except OSError:
                log.exception("cannot open the raft dump for a follower")
                return None
            current = OutgoingSnapshot(stream, snapshot, size, self._chunk)
            self._outgoing[transmissionID] = current
        try:
            return current.next_chunk()
        except OSError:
            log.exception("cannot read the raft dump for a follower")
            self.cancelTransmisstion(transmissionID)
            return None

    def onTransmissionAck(self, transmissionID: Any, ack: Any) -> None:
        current = self._outgoing.get(transmissionID)
        if current is not None and isinstance(ack, ChunkAck):
            current.on_ack(ack)

    def setTransmissionData(self, data: Any) -> bool | str | ChunkAck | None:
        """Take a chunk: ``True`` once a snapshot is installed, ``"have"`` if it is not
        needed (our log already covers it), else the acknowledgement to send."""
        if not isinstance(data, Chunk):
            return None
        try:
            ack, complete = self._incoming.receive(data)
        except OSError:
            log.exception("cannot store the snapshot received from the leader")
            self._incoming.discard()
            return None
        if complete is None:
            return ack
        accepted = self._accept(complete, data.snapshot)
        self._incoming.installed()
        return True if accepted else "have"

    def cancelTransmisstion(self, id: Any) -> None:
        current = self._outgoing.pop(id, None)
        if current is not None:
            current.close()

    # -- ours ---------------------------------------------------------------------

    def compactionPoint(self, index: int, size: int, count_due: bool) -> bool:
        """Called by the engine after applying entry ``index`` of ``size`` bytes:
        compact here once the entries applied since the dump outgrew the dump
        (and ``compact_bytes``), or when the engine's entry count
        says so (``count_due``), unless a dump is still being written.

        A restart loads the dump and replays the journal after it; compacting
        once that journal is bigger than the dump keeps the replay no costlier
        than the load. pysyncobj's own triggers count entries, and a batch
        entry can carry hundreds of writes, so they fired far too late. The
        decision depends only on the dump and the entries applied since, which
        are the same on every node that holds the same dump: those nodes
        compact at the same index and write byte-identical dumps, so a
        follower's partial snapshot is still good on a new leader. A partial
        snapshot at or below ``index`` is useless from here on and is dropped.
        """
        self._applied_bytes += size
        incoming = self._incoming
        if incoming.snapshot is not None:  # one attribute test per entry otherwise
            incoming.drop_if_covered(index)
        if self._writer is not None:
            return False  # this node skips the point (and may then compact apart)
        dump_bytes = self.dump_id[1] if self.dump_id is not None else 0
        return count_due or self._applied_bytes > max(self._compact_bytes, dump_bytes)

    # -- internals ----------------------------------------------------------------------

    def close(self) -> None:
        if self._writer is not None:
            self._writer.join()
            self._writer = None
        self._close_outgoing()

    def _accept(self, side: Path, snapshot: SnapshotId) -> bool:
        try:
            loaded = self._read_with_id(side)
            assert loaded is not None
        except SnapshotError as exc:
            log.error("refusing a corrupt snapshot from the leader: %s", exc)
            side.unlink(missing_ok=True)
            return False
        (image, raft), dump_id = loaded
        if dump_id[0] != snapshot:
            log.error("refusing a snapshot whose content is not what the leader named")
            side.unlink(missing_ok=True)
            return False
        if (
            self._journal.term_at(raft.index) == raft.last[2]
            or raft.index < self._state.applied_index
        ):
            log.warning("ignoring a snapshot at %d: this node already holds it", raft.index)
            side.unlink(missing_ok=True)
            return False
        if self._writer is not None:
            self._writer.join()  # our own dump, being written, must not replace this one
            self._writer = None
            self._written = False
        os.replace(side, self._path)
        fsync_dir(self._path.parent)
        self._loaded = (image, raft)
        self.dump_id = dump_id
        self._close_outgoing()
        log.info("installed a snapshot at index %d from the leader", raft.index)
        return True

    def _write(self, image: StateImage, raft: RaftPoint) -> None:
        tmp = self._path.with_name(self._path.name + ".tmp")
        digest = hashlib.sha256()
        size = 0
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as stream:
                for line in encode_snapshot(image, raft):
                    stream.write(line)
                    digest.update(line)
                    size += len(line)
                    time.sleep(DUMP_LINE_PAUSE)  # the GIL to the loop and the Raft thread
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(tmp, self._path)
            fsync_dir(self._path.parent)
            self._written_id = (SnapshotId(raft.index, raft.last[2], digest.hexdigest()), size)
            self._written = True
        except Exception:
            log.exception("writing the raft dump failed")

    def _close_outgoing(self) -> None:
        for current in self._outgoing.values():
            current.close()
        self._outgoing.clear()
