"""A durable Raft journal for pysyncobj: append, fsync in batches, never mmap.

pysyncobj's ``FileJournal`` writes into an mmap and never msyncs, and its
meta file (term, vote, commit index) is renamed without fsync, so a follower
acknowledges entries that a power cut would erase. This journal keeps the
library's interface (pysyncobj calls it with list *positions*, not log
indexes) but:

* appends length-prefixed, CRC-checked records with ``os.pwrite``; a torn tail
  left by a crash is detected on open and cut off (it was never acknowledged,
  because acknowledgement waits for :meth:`sync`);
* :meth:`sync` is one ``fdatasync`` for everything appended since the last
  one; :mod:`consensus.node` calls it before every tick and before sending
  the deferred follower acknowledgements, which is the group commit;
* the file's tail is written ahead as zeros (:meth:`reserve`), so an append
  overwrites blocks that are already allocated and written, and its
  ``fdatasync`` flushes data without a file-system journal commit for a new
  size (fallocate's unwritten extents would still need one): ~230 → ~150 µs
  per sync with three nodes syncing on one disk. A tail of zeros is free
  space on open, not a torn record;
* compaction (``deleteEntriesTo``) writes a new file and renames it into
  place instead of rewriting the old one in place;
* term and vote are written durably before any message that depends on them.

Files are created 0600; the directory is the caller's (0700).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from consensus._vendor.pysyncobj.journal import Journal
from sdk.timings import Timings

__all__ = [
    "DurableJournal",
    "JournalEntry",
    "fsync_dir",
    "write_all",
    "write_file_atomically",
]

log = logging.getLogger(__name__)

JournalEntry = tuple[bytes, int, int]  # (command, log index, term), as pysyncobj wants

#: Format 2: a regular entry is its type byte and our command bytes. Format 1
#: (pysyncobj's pickled method call around them) is refused, never unpickled.
_MAGIC = b"CFRJRNL2"
_MAGIC_V1 = b"CFRJRNL1"
_RECORD = struct.Struct("<IIQQ")  # command length, crc32, index, term

#: :meth:`DurableJournal.reserve` writes zeros this far ahead of the last record
#: once fewer than :data:`RESERVE_LOW` bytes of them are left (one ~1 ms write
#: and sync per MiB of log, outside the path of a write being acknowledged).
RESERVE_BYTES = 1024 * 1024
RESERVE_LOW = 256 * 1024
_ZEROS = bytes(RESERVE_BYTES)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, payload: bytes, offset: int | None = None) -> None:
    """Write every byte (``os.write`` may return short on large buffers)."""
    view = memoryview(payload)
    while view:
        written = os.write(fd, view) if offset is None else os.pwrite(fd, view, offset)
        view = view[written:]
        if offset is not None:
            offset += written


def write_file_atomically(target: Path, payload: bytes) -> None:
    """tmp + fsync + rename + directory fsync, mode 0600."""
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fsync_dir(target.parent)


def _record(command: bytes, index: int, term: int) -> bytes:
    crc = zlib.crc32(struct.pack("<QQ", index, term) + command)
    return _RECORD.pack(len(command), crc, index, term) + command


class DurableJournal(Journal):  # type: ignore[misc]  # pysyncobj is untyped
    """The Raft log on disk and in memory (pysyncobj reads entries by position)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._meta_path = path.with_name(path.name + ".meta")
        self._entries: list[JournalEntry] = []
        self._offsets: list[int] = []  # file offset of each record
        self._dirty = False
        #: The first I/O error; after it the journal refuses all writes (fail-stop:
        #: after a failed fsync the page cache state is unknown, see "fsyncgate").
        self.broken: OSError | None = None
        self._meta: dict[str, Any] = self._read_meta()
        self._meta_dirty = False
        self._fd = self._open_and_load()
        #: Every entry up to this index is known to be on disk.
        self.synced_index = self._entries[-1][1] if self._entries else 0
        #: Relaxed durability: fsync runs on a timer, so a leader counts what it
        #: has written as its own acknowledgement, not only what is synced.
        self.count_unsynced = False
        #: Strict durability: records reach the file in :meth:`sync`, just before
        #: its ``fdatasync``, not in :meth:`add`, so a leader's AppendEntries
        #: leave before its own write (nothing is acknowledged before the sync).
        self.write_at_sync = False
        self._unwritten = 0  # the last entries, not yet in the file
        #: Each ``sync``'s ``fdatasync`` (read by ``sys/metrics``).
        self.fsync_timings = Timings()

    # -- opening -----------------------------------------------------------

    def _read_meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self._meta_path.read_bytes())
        except FileNotFoundError:
            return {}
        if not isinstance(meta, dict):
            raise ValueError(f"corrupt raft meta file {self._meta_path}")
        return meta

    def _open_and_load(self) -> int:
        created = not self._path.exists()
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if created:
                os.write(fd, _MAGIC)
                os.fsync(fd)
                fsync_dir(self._path.parent)
            self._load(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _load(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
        if data[: len(_MAGIC)] == _MAGIC_V1:
            raise ValueError(
                f"{self._path} is a format 1 raft journal (pickled entries), which this "
                "version does not read; restore the node from a snapshot or re-join it"
            )
        if data[: len(_MAGIC)] != _MAGIC:
            raise ValueError(f"{self._path} is not a Coffer raft journal")
        offset = len(_MAGIC)
        while offset + _RECORD.size <= size:
            length, crc, index, term = _RECORD.unpack_from(data, offset)
            end = offset + _RECORD.size + length
            command = data[offset + _RECORD.size : end]
            if end > size or zlib.crc32(struct.pack("<QQ", index, term) + command) != crc:
                break
            self._entries.append((command, index, term))
            self._offsets.append(offset)
            offset = end
        if offset != size and data.count(0, offset) != size - offset:
            log.warning("raft journal %s: cut %d bytes of torn tail", self._path, size - offset)
            os.ftruncate(fd, offset)
            os.fsync(fd)
            size = offset
        self._end = offset
        self._allocated = size  # the records, then zeros written ahead
        self._reserve_after = 0

    # -- pysyncobj's Journal interface ---------------------------------------

    @contextlib.contextmanager
    def _io(self) -> Iterator[None]:
        if self.broken is not None:
            raise OSError(f"raft journal unusable after an I/O error: {self.broken}")
        try:
            yield
        except OSError as exc:
            self.broken = exc
            raise

    def add(self, command: bytes | str, idx: int, term: int) -> None:
        raw = command if isinstance(command, bytes) else command.encode("utf-8")
        if self.write_at_sync:
            self._unwritten += 1
        else:
            with self._io():
                write_all(self._fd, _record(raw, idx, term), self._end)
        self._entries.append((raw, idx, term))
        self._offsets.append(self._end)
        self._end += _RECORD.size + len(raw)
        self._allocated = max(self._allocated, self._end)
        self._dirty = True

    def clear(self) -> None:
        self._truncate_at(0)

    def deleteEntriesFrom(self, entryFrom: int) -> None:
        self._truncate_at(max(entryFrom, 0))

    def deleteEntriesTo(self, entryTo: int) -> None:
        """Drop entries before position ``entryTo`` by writing a new file."""
        self._unwritten = 0  # the new file is written from the entries in memory
        keep = self._entries[entryTo:]
        tmp = self._path.with_name(self._path.name + ".compact")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        offsets, chunks, end = [], [_MAGIC], len(_MAGIC)
        for entry in keep:
            record = _record(*entry)
            offsets.append(end)
            chunks.append(record)
            end += len(record)
        try:
            with self._io():
                write_all(fd, b"".join(chunks))
                os.fsync(fd)
                os.replace(tmp, self._path)
                fsync_dir(self._path.parent)
        except BaseException:
            os.close(fd)
            raise
        os.close(self._fd)
        self._fd, self._entries, self._offsets, self._end = fd, keep, offsets, end
        self._allocated, self._reserve_after = end, 0  # a new file: offsets start again
        self._dirty = False
        self.synced_index = keep[-1][1] if keep else 0

    def __getitem__(self, item: int | slice) -> Any:
        return self._entries[item]

    def __len__(self) -> int:
        return len(self._entries)

    def _destroy(self) -> None:
        if self._fd < 0:
            return
        try:
            self.sync()
            self._store_meta_if_dirty()
        finally:
            os.close(self._fd)
            self._fd = -1

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:
        if self._meta.get("commit_index") != raftCommitIndex:
            self._meta["commit_index"] = raftCommitIndex
            self._meta_dirty = True

    def getRaftCommitIndex(self) -> int:
        # Never claim more than the log holds (an entry lost before its sync).
        last = self._entries[-1][1] if self._entries else 1
        return min(int(self._meta.get("commit_index", 1)), last)

    def setCurrentTerm(self, term: int, votedForNodeId: str | None) -> None:
        # Raft: term and vote must be durable before the vote is sent.
        self._meta["term"] = term
        self._meta["voted_for"] = votedForNodeId
        self._store_meta()

    def getCurrentTerm(self) -> int:
        return int(self._meta.get("term", 0))

    def getVotedForNodeId(self) -> str | None:
        voted = self._meta.get("voted_for")
        return voted if isinstance(voted, str) else None

    def onOneSecondTimer(self) -> None:
        self._store_meta_if_dirty()

    # -- ours ------------------------------------------------------------------

    def sync(self) -> bool:
        """fdatasync everything written since the last call; True if it did."""
        if not self._dirty:
            return False
        self._write_unwritten()
        started = time.perf_counter()
        with self._io():
            os.fdatasync(self._fd)
        self.fsync_timings.observe(time.perf_counter() - started)
        self._dirty = False
        self.synced_index = self._entries[-1][1] if self._entries else 0
        return True

    def _write_unwritten(self) -> None:
        count, self._unwritten = self._unwritten, 0
        if not count:
            return
        records = b"".join(_record(*entry) for entry in self._entries[-count:])
        with self._io():
            write_all(self._fd, records, self._offsets[-count])

    def reserve(self) -> bool:
        """Write zeros ahead of the log once little of them is left, and sync them;
        True if it did. Called after a sync's acknowledgements are out.

        A write that fails (a full disk) is not fatal: appends still grow the
        file, and the next try waits until another :data:`RESERVE_BYTES` were
        appended. A failed sync is, as everywhere in this journal."""
        if (
            self.broken is not None
            or self._allocated - self._end >= RESERVE_LOW
            or self._end < self._reserve_after
        ):
            return False
        try:
            write_all(self._fd, _ZEROS, self._allocated)
        except OSError as exc:
            log.warning("raft journal %s: cannot write ahead: %s", self._path, exc)
            self._reserve_after = self._end + RESERVE_BYTES
            return False
        with self._io():
            os.fdatasync(self._fd)
        self._allocated += RESERVE_BYTES
        return True

    @property
    def dirty(self) -> bool:
        return self._dirty

    @property
    def size_bytes(self) -> int:
        """The journal file's length: what a restart would read and replay."""
        return self._end

    def durableIndex(self) -> int:
        """The engine asks this before the leader counts itself towards a commit."""
        if self.count_unsynced:
            return self._entries[-1][1] if self._entries else 0
        return self.synced_index

    def first_index(self) -> int:
        return self._entries[0][1]

    def last_index(self) -> int:
        return self._entries[-1][1]

    def term_at(self, index: int) -> int | None:
        position = index - self._entries[0][1] if self._entries else -1
        if position < 0 or position >= len(self._entries):
            return None
        return self._entries[position][2]

    def position_of(self, entry: JournalEntry) -> int | None:
        """Where ``entry`` sits, if the journal holds exactly it."""
        position = entry[1] - self._entries[0][1] if self._entries else -1
        if 0 <= position < len(self._entries) and self._entries[position] == entry:
            return position
        return None

    def _truncate_at(self, position: int) -> None:
        if position >= len(self._entries):
            return
        self._write_unwritten()
        with self._io():
            os.ftruncate(self._fd, self._offsets[position])
        self._end = self._allocated = self._offsets[position]
        self._reserve_after = min(self._reserve_after, self._end)
        del self._entries[position:]
        del self._offsets[position:]
        self._dirty = True
        self.synced_index = min(self.synced_index, self._entries[-1][1] if self._entries else 0)

    def _store_meta(self) -> None:
        payload = json.dumps(self._meta, separators=(",", ":")).encode("utf-8")
        with self._io():
            write_file_atomically(self._meta_path, payload)
        self._meta_dirty = False

    def _store_meta_if_dirty(self) -> None:
        if self._meta_dirty:
            self._store_meta()
