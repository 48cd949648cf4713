"""Streaming a dump to a follower in chunks, resumable across cuts and leaders.

A follower behind the leader's last compaction needs the leader's dump. It
travels in chunks of at most ``snapshot_chunk_bytes`` over the cluster
connection, each one an ``append_entries`` with a ``serialized`` :class:`Chunk`,
and the follower acknowledges each with a :class:`ChunkAck` in its
``next_node_idx`` reply. Why each part is there:

* **Identity.** A dump is named by :class:`SnapshotId` (index, term and the
  SHA-256 of the whole file). Dumps are deterministic, so two nodes that
  compacted at the same index hold byte-identical files with the same id.
* **Resume.** The follower keeps the bytes it has in a side file and the id
  beside it (both survive a restart). A leader starts every transfer with an
  empty probe chunk; the follower answers with how many bytes of that id it
  already holds, and the leader continues from there. A follower offered a
  different id discards its partial file and starts again from zero.
* **Flow control.** The leader keeps at most ``window`` bytes unacknowledged,
  so a follower that falls silent costs it no memory; after ``stall`` seconds
  without an acknowledgement it rewinds to the last acknowledged byte.
* **Checks.** Each chunk carries the SHA-256 of its bytes (a corrupt chunk is
  refused before it is written); the whole file is checked against the id's
  digest before it is handed on to be decoded and installed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "Chunk",
    "ChunkAck",
    "ChunkError",
    "IncomingSnapshot",
    "OutgoingSnapshot",
    "SnapshotId",
    "ack_from_obj",
    "ack_to_obj",
    "chunk_from_obj",
    "chunk_to_obj",
    "file_digest",
    "make_chunk",
]

log = logging.getLogger(__name__)

#: The largest dump a follower accepts (64 GiB): a bound, not a target.
MAX_SNAPSHOT_BYTES: Final = 1 << 36
_MAX_INT: Final = 2**63 - 1
_HEX: Final = frozenset("0123456789abcdef")


class ChunkError(ValueError):
    """A chunk or acknowledgement that does not match its schema."""


@dataclass(frozen=True, slots=True)
class SnapshotId:
    """Which dump: the index and term of its last entry and its file's SHA-256."""

    index: int
    term: int
    digest: str

    def to_obj(self) -> list[Any]:
        return [self.index, self.term, self.digest]


@dataclass(frozen=True, slots=True)
class Chunk:
    """``data`` is the dump's bytes at ``offset``; ``size`` is the whole dump's length."""

    snapshot: SnapshotId
    size: int
    offset: int
    data: bytes
    sha: str


@dataclass(frozen=True, slots=True)
class ChunkAck:
    """The follower holds the first ``held`` bytes of ``snapshot``; ``ok`` is false on a refusal."""

    snapshot: SnapshotId
    held: int
    ok: bool


def make_chunk(snapshot: SnapshotId, size: int, offset: int, data: bytes) -> Chunk:
    return Chunk(snapshot, size, offset, data, hashlib.sha256(data).hexdigest())


# -- strict JSON shapes (consensus.wire) -----------------------------------------------------


def _int(value: Any, what: str) -> int:
    if type(value) is not int or not 0 <= value <= _MAX_INT:
        raise ChunkError(f"malformed {what}")
    return value


def _digest(value: Any) -> str:
    if type(value) is not str or len(value) != 64 or not set(value) <= _HEX:
        raise ChunkError("malformed digest")
    return value


def _snapshot_id(value: Any) -> SnapshotId:
    if type(value) is not list or len(value) != 3:
        raise ChunkError("malformed snapshot id")
    return SnapshotId(_int(value[0], "index"), _int(value[1], "term"), _digest(value[2]))


def _fields(value: Any, names: frozenset[str], what: str) -> dict[str, Any]:
    if type(value) is not dict or set(value) != names:
        raise ChunkError(f"malformed {what}")
    return value


_CHUNK_FIELDS: Final = frozenset({"id", "size", "offset", "data", "sha"})
_ACK_FIELDS: Final = frozenset({"id", "held", "ok"})


def chunk_from_obj(value: Any, max_data: int) -> Chunk:
    """Decode a chunk strictly (``max_data``: the most bytes one chunk may carry)."""
    obj = _fields(value, _CHUNK_FIELDS, "snapshot chunk")
    size = _int(obj["size"], "size")
    offset = _int(obj["offset"], "offset")
    raw = obj["data"]
    if type(raw) is not str or len(raw) > (max_data + 2) // 3 * 4:
        raise ChunkError("malformed chunk data")
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ChunkError("malformed chunk data") from exc
    if size > MAX_SNAPSHOT_BYTES or offset + len(data) > size or len(data) > max_data:
        raise ChunkError("chunk outside its snapshot")
    return Chunk(_snapshot_id(obj["id"]), size, offset, data, _digest(obj["sha"]))


def chunk_to_obj(chunk: Chunk) -> dict[str, Any]:
    return {
        "id": chunk.snapshot.to_obj(),
        "size": chunk.size,
        "offset": chunk.offset,
        "data": base64.b64encode(chunk.data).decode("ascii"),
        "sha": chunk.sha,
    }


def ack_from_obj(value: Any) -> ChunkAck:
    obj = _fields(value, _ACK_FIELDS, "snapshot acknowledgement")
    if type(obj["ok"]) is not bool:
        raise ChunkError("malformed snapshot acknowledgement")
    return ChunkAck(_snapshot_id(obj["id"]), _int(obj["held"], "held"), obj["ok"])


def ack_to_obj(ack: ChunkAck) -> dict[str, Any]:
    return {"id": ack.snapshot.to_obj(), "held": ack.held, "ok": ack.ok}


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


# -- the leader's side ------------------------------------------------------------------------


class OutgoingSnapshot:
    """One follower's transfer of one dump (an open file descriptor and positions)."""

    def __init__(
        self,
        stream: IO[bytes],
        snapshot: SnapshotId,
        size: int,
        chunk_bytes: int,
        *,
        window: int = 4,
        stall: float = 5.0,
        clock: Any = time.monotonic,
    ) -> None:
        self.snapshot = snapshot
        self.size = size
        self._stream = stream
        self._chunk = chunk_bytes
        self._window = window * chunk_bytes
        self._stall = stall
        self._clock = clock
        self.acked: int | None = None  # None: the follower's position is not known yet
        self.sent = 0
        self._probed_at: float | None = None
        self._progress_at = clock()

    def next_chunk(self) -> Chunk | None:
        """The next chunk to send now, or ``None`` (waiting for an acknowledgement)."""
        now = self._clock()
        if self.acked is None:
            if self._probed_at is not None and now - self._probed_at < self._stall:
                return None
            self._probed_at = now
            return make_chunk(self.snapshot, self.size, 0, b"")
        if self.sent > self.acked and now - self._progress_at >= self._stall:
            log.info("snapshot transfer stalled at %d bytes; resending", self.acked)
            self.sent = self.acked
            self._progress_at = now
        if self.sent >= self.size or self.sent - self.acked >= self._window:
            return None
        data = os.pread(self._stream.fileno(), min(self._chunk, self.size - self.sent), self.sent)
        if not data:
            raise OSError("the dump is shorter than its recorded size")
        chunk = make_chunk(self.snapshot, self.size, self.sent, data)
        self.sent += len(data)
        return chunk

    def on_ack(self, ack: ChunkAck) -> None:
        if ack.snapshot != self.snapshot or ack.held > self.size:
            return  # about another dump: the follower switches when our chunks reach it
        self._progress_at = self._clock()
        if self.acked is None or not ack.ok or ack.held < self.acked:
            self.acked = self.sent = ack.held  # resume (or rewind) at what it holds
            if self.sent and self._probed_at is not None:
                log.info("resuming a snapshot transfer at byte %d of %d", self.sent, self.size)
            self._probed_at = None
            return
        self.acked = ack.held
        self.sent = max(self.sent, ack.held)

    def close(self) -> None:
        self._stream.close()


# -- the follower's side ----------------------------------------------------------------------


class IncomingSnapshot:
    """The partial dump a follower holds (``<dump>.incoming``, id in ``<dump>.incoming.id``)."""

    def __init__(self, dump: Path) -> None:
        self.path = dump.with_name(dump.name + ".incoming")
        self._id_path = dump.with_name(dump.name + ".incoming.id")
        self.snapshot: SnapshotId | None = None
        self.size = 0
        self.held = 0
        self._load()

    def _load(self) -> None:
        try:
            obj = json.loads(self._id_path.read_bytes())
            snapshot = _snapshot_id(obj["id"])
            size = _int(obj["size"], "size")
            held = min(self.path.stat().st_size, size)
        except FileNotFoundError:
            self.discard()
            return
        except (ValueError, KeyError, TypeError, OSError):
            log.warning("discarding an unreadable partial snapshot")
            self.discard()
            return
        os.truncate(self.path, held)
        self.snapshot, self.size, self.held = snapshot, size, held
        log.info("holding %d of %d bytes of the snapshot at %d", held, size, snapshot.index)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self._id_path.unlink(missing_ok=True)
        self.snapshot, self.size, self.held = None, 0, 0

    def _begin(self, snapshot: SnapshotId, size: int) -> None:
        from consensus.journal import fsync_dir  # the journal imports the vendored engine

        self.discard()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        tmp = self._id_path.with_name(self._id_path.name + ".tmp")
        tmp.write_bytes(json.dumps({"id": snapshot.to_obj(), "size": size}).encode())
        os.chmod(tmp, 0o600)
        os.replace(tmp, self._id_path)
        fsync_dir(self.path.parent)
        self.snapshot, self.size, self.held = snapshot, size, 0

    def receive(self, chunk: Chunk) -> tuple[ChunkAck, Path | None]:
        """Take a chunk; the acknowledgement, and the whole verified file once complete."""
        if hashlib.sha256(chunk.data).hexdigest() != chunk.sha:
            log.warning("refusing a corrupt snapshot chunk at offset %d", chunk.offset)
            held = self.held if chunk.snapshot == self.snapshot else 0
            return ChunkAck(chunk.snapshot, held, False), None
        if chunk.snapshot != self.snapshot or chunk.size != self.size:
            if self.snapshot is not None:
                log.info("a different snapshot is offered; dropping %d bytes held", self.held)
            self._begin(chunk.snapshot, chunk.size)
        end = chunk.offset + len(chunk.data)
        if chunk.offset > self.held:
            return ChunkAck(chunk.snapshot, self.held, False), None
        if end > self.held:
            fd = os.open(self.path, os.O_WRONLY)
            try:
                view = memoryview(chunk.data)[self.held - chunk.offset :]
                position = self.held
                while view:
                    written = os.pwrite(fd, view, position)
                    view, position = view[written:], position + written
                os.fdatasync(fd)
            finally:
                os.close(fd)
            self.held = end
        ack = ChunkAck(chunk.snapshot, self.held, True)
        if self.held < self.size:
            return ack, None
        if file_digest(self.path) != chunk.snapshot.digest:
            log.warning("a received snapshot does not match its digest; starting again")
            self._begin(chunk.snapshot, chunk.size)
            return ChunkAck(chunk.snapshot, 0, False), None
        return ack, self.path

    def installed(self) -> None:
        """The complete file was moved into place (or refused): forget it."""
        self.discard()

    def drop_if_covered(self, index: int) -> None:
        """This node holds its state at ``index`` (applied there, or its dump is):
        a partial snapshot at or below it could only be refused once complete,
        so it goes. A leader abandons a transfer when the follower catches up by
        its log instead; the partial would otherwise stay until the next
        snapshot replaced it."""
        if self.snapshot is not None and self.snapshot.index <= index:
            log.info(
                "dropping a partial snapshot at %d: this node is at %d",
                self.snapshot.index,
                index,
            )
            self.discard()
