"""Crash-safe file physical backend.

Each key is one file holding an 8-byte revision and the ciphertext. Writes go
to a temporary file that is fsynced and renamed over the target, then the
directory is fsynced, so a crash leaves either the old or the new value.
A transaction touching several keys is first written whole to a journal
(fsynced); it is replayed on open if the process died half-way.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, unquote

from sdk.errors import InvalidRequestError, RevisionMismatchError, StorageError
from sdk.physical import Check, Delete, Entry, Put, TxnOp, validate_key

__all__ = ["FileBackend"]

_REVISION_BYTES = 8
_JOURNAL = "txn.journal"
#: Highest revision handed out, persisted before a commit that deletes keys
#: (a delete can remove the file holding the highest revision).
_REVISION_FILE = "revision"


def _encode_segment(segment: str) -> str:
    # "_" is escaped so a leaf file ("_" + name) never collides with a folder.
    return quote(segment, safe="").replace("_", "%5F")


def _write_atomically(target: Path, payload: bytes) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    _fsync_dir(target.parent)


def _has_entries(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return any(True for _ in entries)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileBackend:
    """Stores every key as a file under ``<path>/data``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._root = Path(path)
        self._data_dir = self._root / "data"
        self._lock = threading.Lock()
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
            self._revision = max(self._persisted_revision(), self._highest_revision())
        except OSError as exc:
            self._release_lock()
            raise StorageError(f"cannot open file storage at {self._root}: {exc}") from exc
        except BaseException:
            self._release_lock()
            raise

    # -- protocol -----------------------------------------------------------

    async def get(self, key: str) -> Entry | None:
        return await asyncio.to_thread(self._get, key)

    async def put(self, key: str, value: bytes) -> int:
        return await asyncio.to_thread(self._commit, [Put(key, value)])

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._commit, [Delete(key)])

    async def list(self, prefix: str) -> list[str]:
        return await asyncio.to_thread(self._list, prefix)

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        return await asyncio.to_thread(self._commit, list(ops))

    async def close(self) -> None:
        self._release_lock()

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, -1
        if fd < 0:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)

    # -- blocking implementation (runs in a worker thread) -------------------

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
        *folders, stem = prefix.split("/")
        if folders:
            try:
                validate_key("/".join(folders))
            except InvalidRequestError:
                return []  # no valid key lies below such a prefix
        folder = self._data_dir.joinpath(*(_encode_segment(f) for f in folders))
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found: set[str] = set()
        for name in names:
            if name.startswith("._"):
                continue  # a temporary file (folder names never contain "_")
            if name.startswith("_"):
                child = unquote(name[1:])
            elif _has_entries(folder / name):
                child = unquote(name) + "/"
            else:
                continue
            if child.startswith(stem):
                found.add(child[len(stem) :] if stem else child)
        return sorted(found)

    def _commit(self, ops: Sequence[TxnOp]) -> int:
        with self._lock:
            # A journal left by a commit that failed part-way is finished first,
            # so the next multi-key commit cannot overwrite it.
            if (self._root / _JOURNAL).exists():
                self._replay_journal()
            for op in ops:
                validate_key(op.key)
            for op in ops:
                if op.expect is not None:
                    current = self._get(op.key)
                    actual = current.revision if current else 0
                    if actual != op.expect:
                        raise RevisionMismatchError(op.key, op.expect, actual)
            writes = [op for op in ops if not isinstance(op, Check)]
            revision = self._revision + 1
            # Consumed even if a write below fails: part of it may be on disk.
            self._revision = revision
            try:
                if any(isinstance(op, Delete) for op in writes):
                    _write_atomically(
                        self._root / _REVISION_FILE, revision.to_bytes(_REVISION_BYTES, "big")
                    )
                if len(writes) > 1:
                    self._write_journal(writes, revision)
                for op in writes:
                    self._apply(op, revision)
                if len(writes) > 1:
                    (self._root / _JOURNAL).unlink()
                    _fsync_dir(self._root)
            except OSError as exc:
                raise StorageError(f"write failed: {exc.strerror}") from exc
            return revision

    def _apply(self, op: Put | Delete, revision: int) -> None:
        target = self._file_for(op.key)
        if isinstance(op, Put):
            self._make_folders(target.parent)
            _write_atomically(target, revision.to_bytes(_REVISION_BYTES, "big") + op.value)
            return
        try:
            target.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(target.parent)
        self._prune_empty(target.parent)

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

    def _write_journal(self, writes: Sequence[Put | Delete], revision: int) -> None:
        record = {
            "revision": revision,
            "ops": [
                {"put": op.key, "value": base64.b64encode(op.value).decode()}
                if isinstance(op, Put)
                else {"delete": op.key}
                for op in writes
            ],
        }
        _write_atomically(self._root / _JOURNAL, json.dumps(record).encode())

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
        journal.unlink()
        _fsync_dir(self._root)

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
