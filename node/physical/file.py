"""Crash-safe file physical backend with group commit and write-back key files.

Each key is one file holding an 8-byte revision and the ciphertext. A commit is
appended to a write-ahead log (``wal``, framed records, see
:mod:`node.physical.wal`); one writer thread takes every commit queued while the
previous fsync ran, appends them all and makes them durable with one shared
fsync of the log (group commit), and answers the callers. The key files are
written later, at a checkpoint, from each key's last logged write
(:mod:`node.physical.pending_writes` holds those until then and answers reads
for them). Reads and the writer's revision checks go through a write-through
cache of entries (:mod:`node.physical.entry_cache`), then the pending writes,
before they open a file.

A checkpoint starts when the log outgrows ``checkpoint_bytes``: the writer
renames the log to ``wal.old``, starts a new one and goes on committing, while
a checkpoint thread writes the pending generation to the key files, syncs the
filesystem once (``syncfs``), records the highest revision and only then
deletes ``wal.old``. A crash therefore loses nothing acknowledged: on open both
logs are replayed over the key files (a torn last record is cut off). Close
checkpoints everything. A multi-key journal left by an older version is
replayed on open.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import contextlib
import ctypes
import fcntl
import json
import os
import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from urllib.parse import quote, unquote

from node.physical import wal
from node.physical.entry_cache import DEFAULT_ENTRIES, MISS, EntryCache
from node.physical.pending_writes import LoggedWrite, PendingWrites
from sdk.errors import InvalidRequestError, RevisionMismatchError, StorageError
from sdk.physical import Check, Delete, Entry, Put, TxnOp, validate_key

__all__ = ["FileBackend"]

_REVISION_BYTES = 8
#: The multi-key journal of versions before the write-ahead log (replayed on open).
_JOURNAL = "txn.journal"
_WAL = "wal"
#: The log a running checkpoint is writing to the key files (deleted after it).
_WAL_OLD = "wal.old"
#: Highest revision handed out, persisted at each checkpoint (the log is emptied
#: then, and a delete can remove the file holding the highest revision).
_REVISION_FILE = "revision"
#: Log size at which the writer syncs the filesystem and empties the log.
CHECKPOINT_BYTES = 16 << 20
#: Commits taken into one batch at most (one log write, one fsync).
_MAX_BATCH = 1024

Fsync = Callable[[int], None]


def _encode_segment(segment: str) -> str:
    # "_" is escaped so a leaf file ("_" + name) never collides with a folder.
    return quote(segment, safe="").replace("_", "%5F")


def _write_atomically(target: Path, payload: bytes, fsync: Fsync) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _write_all(fd, payload)
        fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    _fsync_dir(target.parent, fsync)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _last_writes(writes: Iterable[LoggedWrite]) -> dict[str, LoggedWrite]:
    """Each key's last write (with its revision): only that one decides its file."""
    return {op.key: (op, revision) for op, revision in writes}


def _deleted(pending: dict[str, LoggedWrite], key: str) -> bool:
    found = pending.get(key)
    return found is not None and isinstance(found[0], Delete)


def _is_temporary(name: str) -> bool:
    """A key file's temporary (``._<name>.tmp``), possibly left by a crash: no key."""
    return name.startswith("._")


def _has_entries(folder: Path) -> bool:
    """Whether ``folder`` holds a key file, at any depth. A temporary file a
    crash left behind (``._*``) is no key, nor is a folder of nothing else."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if _is_temporary(entry.name):
                continue
            if not entry.is_dir(follow_symlinks=False) or _has_entries(Path(entry.path)):
                return True
    return False


def _fsync_dir(path: Path, fsync: Fsync) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def _filesystem_sync() -> Fsync:
    """``syncfs(fd)``: every file and folder on ``fd``'s filesystem reaches the disk.

    One call instead of an fsync per key file written since the last checkpoint;
    ``os.sync`` (every filesystem) where libc has no ``syncfs``.
    """
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return lambda fd: os.sync()

    def sync(fd: int) -> None:
        if syncfs(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))

    return sync


class _Commit:
    """One queued commit and where its answer goes."""

    __slots__ = ("error", "future", "loop", "ops", "revision", "writes")

    def __init__(
        self, ops: Sequence[TxnOp], loop: asyncio.AbstractEventLoop, future: asyncio.Future[int]
    ) -> None:
        self.ops = ops
        self.loop = loop
        self.future = future
        self.revision = 0
        self.writes: builtins.list[Put | Delete] = []
        self.error: BaseException | None = None


class _CheckpointRequest:
    """A caller waiting for :meth:`FileBackend.checkpoint`, answered like a commit
    (with revision 0)."""

    __slots__ = ("error", "future", "loop", "revision")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[int]) -> None:
        self.loop = loop
        self.future = future
        self.revision = 0
        self.error: BaseException | None = None


_STOP = object()


def _resolve(commits: Sequence[_Commit | _CheckpointRequest]) -> None:
    """On the caller's loop: resolve each future (skipping ones already cancelled)."""
    for commit in commits:
        if commit.future.done():
            continue
        if commit.error is not None:
            commit.future.set_exception(commit.error)
        else:
            commit.future.set_result(commit.revision)


class FileBackend:
    """Stores every key as a file under ``<path>/data``; commits go through the log.

    ``fsync`` is called for every fsync the backend makes (a seam for tests that
    count them); ``checkpoint_bytes`` is the log size that triggers a checkpoint;
    ``cached_entries`` bounds the entry cache.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: Fsync = os.fsync,
        checkpoint_bytes: int = CHECKPOINT_BYTES,
        cached_entries: int = DEFAULT_ENTRIES,
    ) -> None:
        self._root = Path(path)
        self._data_dir = self._root / "data"
        self._fsync = fsync
        self._syncfs = _filesystem_sync()
        self._checkpoint_bytes = checkpoint_bytes
        self._queue: queue.SimpleQueue[_Commit | _CheckpointRequest | object] = queue.SimpleQueue()
        #: Entries as stored: the key files overlaid with the pending writes (filled
        #: by reads, updated by the writer).
        self._cache = EntryCache(cached_entries)
        #: Logged writes the key files do not hold yet.
        self._pending = PendingWrites()
        #: The thread of the running checkpoint, if any.
        self._checkpointer: threading.Thread | None = None
        self._closed = False
        #: Set by a failed log write or checkpoint; every later commit is refused.
        self._failed: StorageError | None = None
        self._wal_fd = -1
        try:
            self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._data_dir.mkdir(mode=0o700, exist_ok=True)
            self._lock_fd = os.open(self._root / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot open file storage at {self._root}: {exc.strerror}") from exc
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._lock_fd)
            raise StorageError(
                f"file storage at {self._root} is in use by another process"
            ) from exc
        try:
            self._replay_journal()
            logged = self._recover_logs()
            self._revision = max(logged, self._persisted_revision(), self._highest_revision())
        except OSError as exc:
            self._release()
            raise StorageError(f"cannot open file storage at {self._root}: {exc}") from exc
        except BaseException:
            self._release()
            raise
        self._writer = threading.Thread(
            target=self._run_writer, name=f"file-storage-writer {self._root}", daemon=True
        )
        self._writer.start()

    # -- protocol -----------------------------------------------------------

    async def get(self, key: str) -> Entry | None:
        found = self._cache.lookup(key)  # only valid keys are ever cached
        if found is not MISS:
            return found
        token = self._cache.fill_token()
        found = self._pending.lookup(key)
        entry = await asyncio.to_thread(self._get, key) if found is MISS else found
        self._cache.fill(key, entry, token)
        return entry

    async def put(self, key: str, value: bytes) -> int:
        return await self._submit([Put(key, value)])

    async def delete(self, key: str) -> None:
        await self._submit([Delete(key)])

    async def list(self, prefix: str) -> builtins.list[str]:
        return await asyncio.to_thread(self._list, prefix)

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        return await self._submit(builtins.list(ops))

    async def checkpoint(self) -> None:
        """Bring the key files up to date with every write answered so far and empty
        the log (what close does, without closing): for a look at the files."""
        await self._hand_to_writer(_CheckpointRequest)  # answered with 0

    async def close(self) -> None:
        """Finish every queued commit, checkpoint, and release the directory."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            await asyncio.to_thread(self._join_threads)
        self._release()

    async def _submit(self, ops: Sequence[TxnOp]) -> int:
        """Queue ``ops`` for the writer; the answer comes after the fsync covering them."""
        return await self._hand_to_writer(lambda loop, future: _Commit(ops, loop, future))

    def _hand_to_writer(
        self,
        make: Callable[
            [asyncio.AbstractEventLoop, asyncio.Future[int]], _Commit | _CheckpointRequest
        ],
    ) -> asyncio.Future[int]:
        """Queue what ``make`` builds around this loop and a new future, which the
        writer resolves (a plain function: no extra coroutine on the write path)."""
        if self._closed:
            raise StorageError("file storage is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self._queue.put(make(loop, future))
        return future

    def _join_threads(self) -> None:
        self._writer.join()

    def _release(self) -> None:
        wal_fd, self._wal_fd = self._wal_fd, -1
        if wal_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(wal_fd)
        fd, self._lock_fd = self._lock_fd, -1
        if fd < 0:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)

    # -- reads (worker threads) ------------------------------------------------

    def _file_for(self, key: str) -> Path:
        validate_key(key)
        *folders, leaf = key.split("/")
        folder = self._data_dir.joinpath(*(_encode_segment(f) for f in folders))
        return folder / ("_" + _encode_segment(leaf))

    def _get(self, key: str) -> Entry | None:
        try:
            raw = self._file_for(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"read failed: {exc.strerror}") from exc
        revision = int.from_bytes(raw[:_REVISION_BYTES], "big")
        return Entry(key, raw[_REVISION_BYTES:], revision)

    def _list(self, prefix: str) -> builtins.list[str]:
        """The children of ``prefix``'s folder that start with its last segment: the
        folder's files and non-empty subfolders, overlaid with the pending writes."""
        *folders, stem = prefix.split("/")
        if folders:
            try:
                validate_key("/".join(folders))
            except InvalidRequestError:
                return []  # no valid key lies below such a prefix
        base = "".join(f + "/" for f in folders)  # the folder's key prefix
        # Taken before the folder is read: a checkpoint deletes a generation only
        # after its key files are in place, so nothing falls between the two.
        pending = self._pending.overlay(base + stem)
        folder = self._data_dir.joinpath(*(_encode_segment(f) for f in folders))
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            names = []
        found: set[str] = set()
        for name in names:
            if _is_temporary(name):
                continue  # (folder names never contain "_")
            if name.startswith("_"):
                child = unquote(name[1:])
                if _deleted(pending, base + child):
                    continue
            else:
                child = unquote(name) + "/"
                if not self._holds_a_key(folder / name, base + child, pending):
                    continue
            if child.startswith(stem):
                found.add(child[len(stem) :])
        for key, (op, _revision) in pending.items():
            if isinstance(op, Put):
                rest = key[len(base) :]
                child, slash, _ = rest.partition("/")
                found.add(child[len(stem) :] + slash)
        return sorted(found)

    @staticmethod
    def _holds_a_key(folder: Path, base: str, pending: dict[str, LoggedWrite]) -> bool:
        """Whether ``folder`` (the key prefix ``base``) holds a file of a key that no
        pending write deletes."""
        if not any(k.startswith(base) and isinstance(w[0], Delete) for k, w in pending.items()):
            return _has_entries(folder)
        for parent, _dirs, files in os.walk(folder):
            relative = Path(parent).relative_to(folder).parts
            keys = "".join(unquote(part) + "/" for part in relative)
            for name in files:
                if name.startswith("_") and not _is_temporary(name):
                    key = base + keys + unquote(name[1:])
                    if not _deleted(pending, key):
                        return True
        return False

    # -- the writer thread -------------------------------------------------------

    def _run_writer(self) -> None:
        """Take everything queued, commit it as one batch; repeat until closed."""
        stopping = False
        while not stopping:
            batch: builtins.list[_Commit] = []
            requests: builtins.list[_CheckpointRequest] = []
            item = self._queue.get()
            while True:
                if item is _STOP:
                    stopping = True
                elif isinstance(item, _Commit):
                    batch.append(item)
                elif isinstance(item, _CheckpointRequest):
                    requests.append(item)
                if len(batch) >= _MAX_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            self._commit_batch(batch)
            if requests:
                self._checkpoint_for(requests)
        while True:  # commits queued after close() began are still answered
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Commit):
                self._commit_batch([item])
            elif isinstance(item, _CheckpointRequest):
                self._checkpoint_for([item])
        self._wait_for_checkpoint()
        if self._failed is None and (self._wal_size > 0 or len(self._pending)):
            with contextlib.suppress(OSError):  # the log still holds it all
                self._checkpoint_now()

    def _checkpoint_for(self, requests: builtins.list[_CheckpointRequest]) -> None:
        """Run a checkpoint on the writer thread and answer ``requests``."""
        self._wait_for_checkpoint()
        error: BaseException | None = self._failed
        if error is None:
            try:
                self._checkpoint_now()
            except OSError as exc:  # the log still holds it all
                self._fail(exc, [])
                error = self._failed
        for request in requests:
            request.error = error
        self._answer(requests)

    def _commit_batch(self, batch: builtins.list[_Commit]) -> None:
        """Commit ``batch`` and answer every caller, whatever happens."""
        try:
            self._write_batch(batch)
        except Exception as exc:  # noqa: BLE001 - a bug must not leave callers waiting forever
            self._cache.clear()
            self._failed = StorageError(
                f"file storage writer failed ({type(exc).__name__}); "
                "it refuses writes until restarted"
            )
            for commit in batch:
                commit.error = self._failed
        self._answer(batch)

    def _write_batch(self, batch: builtins.list[_Commit]) -> None:
        """Check and number each commit in order, log them with one fsync; their
        writes then wait in the pending writes for a checkpoint."""
        accepted: builtins.list[_Commit] = []
        frames: builtins.list[bytes] = []
        # Revisions the batch's earlier commits give their keys (0: deleted), so a
        # later commit's checks see them before they reach the key files.
        pending: dict[str, int] = {}
        for commit in batch:
            if self._failed is not None:
                commit.error = self._failed
                continue
            try:
                frames.append(self._prepare(commit, pending))
            except (InvalidRequestError, RevisionMismatchError, StorageError) as exc:
                commit.error = exc
                continue
            accepted.append(commit)
        log = b"".join(frames)
        if log:
            try:
                self._append(log)
            except OSError as exc:
                self._fail(exc, accepted)
        if self._failed is None:
            final = _last_writes((op, c.revision) for c in accepted for op in c.writes)
            self._pending.record(final.values())
            self._cache.update(final.values())
        if self._failed is None and self._wal_size >= self._checkpoint_bytes:
            try:
                self._start_checkpoint()
            except OSError as exc:  # the batch is durable; later writes are refused
                self._fail(exc, [])

    def _prepare(self, commit: _Commit, pending: dict[str, int]) -> bytes:
        """Validate and check ``commit``, give it the next revision; its log frame
        (empty when it only checks)."""
        for op in commit.ops:
            validate_key(op.key)
            if not op.key.isascii():
                try:
                    op.key.encode()
                except UnicodeEncodeError:
                    raise InvalidRequestError("invalid path: not valid UTF-8") from None
        for op in commit.ops:
            if op.expect is not None:
                actual = pending[op.key] if op.key in pending else self._stored_revision(op.key)
                if actual != op.expect:
                    raise RevisionMismatchError(op.key, op.expect, actual)
        writes = [op for op in commit.ops if not isinstance(op, Check)]
        self._revision += 1
        commit.revision = self._revision
        commit.writes = writes
        for op in writes:
            pending[op.key] = commit.revision if isinstance(op, Put) else 0
        return wal.encode(commit.revision, writes) if writes else b""

    def _stored_revision(self, key: str) -> int:
        found = self._cache.lookup(key)
        if found is MISS:
            found = self._pending.lookup(key)
        if found is not MISS:
            return found.revision if found is not None else 0
        try:
            with open(self._file_for(key), "rb") as handle:
                return int.from_bytes(handle.read(_REVISION_BYTES), "big")
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise StorageError(f"read failed: {exc.strerror}") from exc

    def _append(self, frames: bytes) -> None:
        """Append to the log and fsync it: the one fsync a whole batch shares."""
        _write_all(self._wal_fd, frames)
        self._wal_size += len(frames)
        self._fsync(self._wal_fd)

    def _fail(self, exc: OSError, accepted: builtins.list[_Commit]) -> None:
        """After a failed log write or checkpoint nothing more is written until a
        restart, whose replay of the logs decides what was committed."""
        self._failed = StorageError(
            f"write failed: {exc.strerror or type(exc).__name__}; "
            "file storage refuses writes until restarted"
        )
        self._cache.clear()  # what the log holds is unknown
        for commit in accepted:
            commit.error = self._failed

    def _answer(self, batch: Sequence[_Commit | _CheckpointRequest]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, builtins.list[_Commit | _CheckpointRequest]] = {}
        for commit in batch:
            by_loop.setdefault(commit.loop, []).append(commit)
        for loop, commits in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the caller's loop has closed
                loop.call_soon_threadsafe(_resolve, commits)

    def _start_checkpoint(self) -> None:
        """Rotate the log and write the pending writes to the key files on a thread
        of its own; commits go on into the new log meanwhile."""
        self._wait_for_checkpoint()  # one at a time: this one may have to wait
        if self._failed is not None:
            return
        os.rename(self._root / _WAL, self._root / _WAL_OLD)
        fresh = os.open(self._root / _WAL, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        os.close(self._wal_fd)
        self._wal_fd, self._wal_size = fresh, 0
        _fsync_dir(self._root, self._fsync)  # both names durable before the new log is
        generation = self._pending.rotate()
        self._checkpointer = threading.Thread(
            target=self._checkpoint,
            args=(generation, self._revision),
            name=f"file-storage-checkpoint {self._root}",
            daemon=True,
        )
        self._checkpointer.start()

    def _wait_for_checkpoint(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.join()
            self._checkpointer = None

    def _checkpoint(self, generation: dict[str, LoggedWrite], revision: int) -> None:
        """On the checkpoint thread: make ``generation`` durable in the key files,
        then drop ``wal.old``, which held it."""
        try:
            self._make_durable(generation, revision)
            os.unlink(self._root / _WAL_OLD)
            _fsync_dir(self._root, self._fsync)
        except OSError as exc:  # the logs and the pending writes still hold it all
            self._fail(exc, [])
            return
        self._pending.flushed()

    def _checkpoint_now(self) -> None:
        """On the writer thread, once no checkpoint runs: every pending write to
        the key files, then empty the log."""
        self._make_durable(self._pending.rotate(), self._revision)
        os.ftruncate(self._wal_fd, 0)
        self._fsync(self._wal_fd)
        self._wal_size = 0
        self._pending.flushed()

    def _make_durable(self, generation: dict[str, LoggedWrite], revision: int) -> None:
        """Write ``generation`` to the key files, sync the filesystem once and record
        ``revision`` (the highest handed out: a delete may have removed its file)."""
        self._apply_all(generation)
        fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self._syncfs(fd)
        finally:
            os.close(fd)
        _write_atomically(
            self._root / _REVISION_FILE, revision.to_bytes(_REVISION_BYTES, "big"), self._fsync
        )

    # -- key files (writer thread, or __init__ before it starts) -----------------

    def _apply_all(self, final: dict[str, LoggedWrite]) -> None:
        """Write each key's last write (``final``, from :func:`_last_writes`) to its
        file: puts, then deletes.

        Puts only create folders and deletes only remove empty ones, so running
        the deletes after every put means no put finds its folder pruned.
        """
        for op, revision in final.values():
            if isinstance(op, Put):
                self._apply(op, revision)
        for op, revision in final.values():
            if isinstance(op, Delete):
                self._apply(op, revision)

    def _apply(self, op: Put | Delete, revision: int) -> None:
        """Write one op to its key file; durable through the log, not by itself."""
        target = self._file_for(op.key)
        if isinstance(op, Delete):
            try:
                target.unlink()
            except FileNotFoundError:
                return
            self._prune_empty(target.parent)
            return
        tmp = target.with_name(f".{target.name}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        try:
            fd = os.open(tmp, flags, 0o600)
        except FileNotFoundError:
            self._make_folders(target.parent)
            fd = os.open(tmp, flags, 0o600)
        try:
            _write_all(fd, revision.to_bytes(_REVISION_BYTES, "big") + op.value)
        finally:
            os.close(fd)
        os.replace(tmp, target)

    def _make_folders(self, folder: Path) -> None:
        # One level at a time: Path.mkdir(parents=True) ignores ``mode`` for parents.
        current = self._data_dir
        for part in folder.relative_to(self._data_dir).parts:
            current = current / part
            current.mkdir(mode=0o700, exist_ok=True)

    def _prune_empty(self, folder: Path) -> None:
        while folder != self._data_dir:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    # -- recovery (__init__) -------------------------------------------------------

    def _recover_logs(self) -> int:
        """Replay ``wal.old`` (a checkpoint cut short) and then the log over the key
        files, cut a torn tail; the highest revision they hold."""
        old = self._root / _WAL_OLD
        try:
            records, _valid = wal.decode(old.read_bytes())
            finish_checkpoint = True
        except FileNotFoundError:
            records, finish_checkpoint = [], False
        path = self._root / _WAL
        self._wal_fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        with open(path, "rb") as handle:
            data = handle.read()
        current, valid = wal.decode(data)
        if valid < len(data):
            os.ftruncate(self._wal_fd, valid)
            self._fsync(self._wal_fd)
        records += current
        self._apply_all(_last_writes((op, r.revision) for r in records for op in r.ops))
        self._wal_size = valid
        highest = max((record.revision for record in records), default=0)
        if finish_checkpoint:
            self._make_durable({}, max(highest, self._persisted_revision()))
            old.unlink()
            _fsync_dir(self._root, self._fsync)
        return highest

    def _replay_journal(self) -> None:
        journal = self._root / _JOURNAL
        try:
            record = json.loads(journal.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise StorageError(f"unreadable transaction journal in {self._root}") from exc
        revision = int(record["revision"])
        for item in record["ops"]:
            if "put" in item:
                self._apply(Put(item["put"], base64.b64decode(item["value"])), revision)
            else:
                self._apply(Delete(item["delete"]), revision)
        fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self._syncfs(fd)
        finally:
            os.close(fd)
        journal.unlink()
        _fsync_dir(self._root, self._fsync)

    def _persisted_revision(self) -> int:
        try:
            raw = (self._root / _REVISION_FILE).read_bytes()
        except FileNotFoundError:
            return 0
        return int.from_bytes(raw[:_REVISION_BYTES], "big")

    def _highest_revision(self) -> int:
        highest = 0
        for folder, _dirs, files in os.walk(self._data_dir):
            for name in files:
                if not name.startswith("_"):
                    continue
                with open(os.path.join(folder, name), "rb") as handle:
                    highest = max(highest, int.from_bytes(handle.read(_REVISION_BYTES), "big"))
        return highest
