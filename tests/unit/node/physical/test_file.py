"""File-backend behaviour beyond the shared conformance suite: durability,
exclusive locking, log and legacy-journal replay and on-disk hygiene."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from node.physical.file import FileBackend
from sdk.errors import InvalidRequestError, StorageError
from sdk.physical import Delete, Entry, Put, validate_key


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
async def backend(store_path: Path) -> AsyncIterator[FileBackend]:
    store = FileBackend(store_path)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def umask_022() -> Iterator[None]:
    """A permissive umask, so the modes asserted below come from the code."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


async def reopen(store: FileBackend, path: Path) -> FileBackend:
    await store.close()
    return FileBackend(path)


def all_paths(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


def write_journal(path: Path, revision: int, ops: list[Put | Delete]) -> None:
    """A journal exactly as ``FileBackend._write_journal`` leaves it on disk."""
    record = {
        "revision": revision,
        "ops": [
            {"put": op.key, "value": base64.b64encode(op.value).decode()}
            if isinstance(op, Put)
            else {"delete": op.key}
            for op in ops
        ],
    }
    (path / "txn.journal").write_bytes(json.dumps(record).encode())


# -- durability ------------------------------------------------------------------


async def test_data_survives_close_and_reopen(backend: FileBackend, store_path: Path) -> None:
    written = {
        "plain": b"value",
        "binary": bytes(range(256)),
        "empty": b"",
        "nested/deeper/key": b"nested",
        "nested/sibling": b"sibling",
        "ünï cødé/%_x": b"odd",
    }
    revisions = {key: await backend.put(key, value) for key, value in written.items()}
    await backend.delete("nested/sibling")

    reopened = await reopen(backend, store_path)
    try:
        for key, value in written.items():
            if key == "nested/sibling":
                assert await reopened.get(key) is None
            else:
                assert await reopened.get(key) == Entry(key, value, revisions[key])
        assert await reopened.list("") == ["binary", "empty", "nested/", "plain", "ünï cødé/"]
        assert await reopened.list("nested/") == ["deeper/"]
    finally:
        await reopened.close()


async def test_revision_counter_continues_after_reopen(
    backend: FileBackend, store_path: Path
) -> None:
    await backend.put("a", b"1")
    highest = await backend.put("b", b"2")

    reopened = await reopen(backend, store_path)
    try:
        assert await reopened.put("c", b"3") > highest
    finally:
        await reopened.close()


async def test_deleting_the_newest_key_does_not_rewind_the_counter_across_reopen(
    backend: FileBackend, store_path: Path
) -> None:
    await backend.put("a", b"1")
    newest = await backend.put("b", b"2")
    deleted_at = await backend.commit([Delete("b")])
    assert deleted_at > newest

    reopened = await reopen(backend, store_path)
    try:
        # Reusing ``newest`` would let a stale ``expect=newest`` succeed (ABA).
        recreated = await reopened.put("b", b"again")
        assert recreated > deleted_at
    finally:
        await reopened.close()


async def test_emptied_store_keeps_its_counter_across_reopen(
    backend: FileBackend, store_path: Path
) -> None:
    issued = await backend.commit([Put("a", b"1"), Put("b/c", b"2")])
    await backend.commit([Delete("a"), Delete("b/c")])
    assert await backend.list("") == []

    reopened = await reopen(backend, store_path)
    try:
        assert await reopened.put("a", b"new") > issued
    finally:
        await reopened.close()


# -- locking ---------------------------------------------------------------------


async def test_second_backend_on_the_same_path_is_refused(
    backend: FileBackend, store_path: Path
) -> None:
    with pytest.raises(StorageError):
        FileBackend(store_path)

    # The failed attempt must not have broken the first one.
    revision = await backend.put("still", b"works")
    assert await backend.get("still") == Entry("still", b"works", revision)


async def test_path_is_free_again_after_close(backend: FileBackend, store_path: Path) -> None:
    await backend.put("key", b"v")
    await backend.close()

    second = FileBackend(store_path)
    try:
        assert (await second.get("key")) is not None
        with pytest.raises(StorageError):
            FileBackend(store_path)
    finally:
        await second.close()


async def test_close_twice_does_not_close_an_unrelated_descriptor(
    backend: FileBackend, tmp_path: Path
) -> None:
    lock_fd = backend._lock_fd
    await backend.close()
    other = os.open(tmp_path / "unrelated", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if other != lock_fd:  # make the old number refer to the unrelated file
            os.dup2(other, lock_fd)
            os.close(other)
            other = lock_fd
        await backend.close()
        os.fstat(other)  # raises EBADF if the second close() closed it
    finally:
        os.close(other)


async def test_unopenable_storage_raises_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_bytes(b"")

    with pytest.raises(StorageError):
        FileBackend(blocker / "store")


# -- journal replay ----------------------------------------------------------------


async def test_journal_left_by_a_crash_is_replayed_on_open(
    backend: FileBackend, store_path: Path
) -> None:
    before = await backend.put("a", b"old a")
    await backend.put("b", b"old b")
    await backend.put("untouched", b"u")
    await backend.close()
    crashed_at = before + 10
    write_journal(
        store_path,
        crashed_at,
        [Put("a", b"new a"), Put("c/d", bytes(range(256))), Delete("b")],
    )

    reopened = FileBackend(store_path)
    try:
        assert not (store_path / "txn.journal").exists()
        assert await reopened.get("a") == Entry("a", b"new a", crashed_at)
        assert await reopened.get("c/d") == Entry("c/d", bytes(range(256)), crashed_at)
        assert await reopened.get("b") is None
        assert (await reopened.get("untouched")) is not None
        assert await reopened.list("") == ["a", "c/", "untouched"]
        assert await reopened.put("next", b"x") > crashed_at
    finally:
        await reopened.close()


async def test_half_applied_journal_is_completed_on_open(
    backend: FileBackend, store_path: Path
) -> None:
    await backend.put("b", b"old b")
    # The crash came after the journal and the first write reached the disk.
    revision = await backend.put("a", b"new a")
    await backend.close()
    write_journal(store_path, revision, [Put("a", b"new a"), Delete("b"), Put("e", b"e")])

    reopened = FileBackend(store_path)
    try:
        assert await reopened.get("a") == Entry("a", b"new a", revision)
        assert await reopened.get("b") is None
        assert await reopened.get("e") == Entry("e", b"e", revision)
        assert not (store_path / "txn.journal").exists()
    finally:
        await reopened.close()


async def test_a_checkpoint_that_fails_is_completed_on_reopen(
    backend: FileBackend, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint fails writing the key files: every acknowledged write is still
    read, later writes are refused, and a reopen completes it from ``wal.old``."""
    gone = await backend.put("gone", b"x")
    await backend.close()  # "gone" is in its key file
    store = FileBackend(store_path, checkpoint_bytes=1)  # every batch starts one

    def crash(*args: object) -> None:
        raise OSError(5, "simulated crash")

    monkeypatch.setattr(store, "_apply", crash)
    x = await store.commit([Put("x", b"1"), Put("y/z", b"2"), Delete("gone")])
    assert x > gone
    await asyncio.to_thread(store._wait_for_checkpoint)
    assert (store_path / "wal.old").exists()
    assert await store.get("x") == Entry("x", b"1", x)
    assert await store.get("gone") is None
    assert await store.list("") == ["x", "y/"]
    with pytest.raises(StorageError, match="until restarted"):
        await store.put("later", b"refused")
    await store.close()
    monkeypatch.undo()

    reopened = FileBackend(store_path)
    try:
        assert not (store_path / "wal.old").exists()
        assert await reopened.get("x") == Entry("x", b"1", x)
        assert await reopened.get("y/z") == Entry("y/z", b"2", x)
        assert await reopened.get("gone") is None
        assert await reopened.get("later") is None
        assert await reopened.put("after", b"a") > x
    finally:
        await reopened.close()


async def test_single_key_writes_leave_no_journal(backend: FileBackend, store_path: Path) -> None:
    await backend.put("a", b"1")
    await backend.commit([Put("b", b"2"), Put("c", b"3"), Delete("a")])

    assert not (store_path / "txn.journal").exists()


async def test_corrupt_journal_refuses_to_open_and_releases_the_lock(
    backend: FileBackend, store_path: Path
) -> None:
    await backend.put("key", b"v")
    await backend.close()
    (store_path / "txn.journal").write_bytes(b"{not json")

    with pytest.raises(StorageError):
        FileBackend(store_path)

    (store_path / "txn.journal").unlink()
    reopened = FileBackend(store_path)  # the failed open must not keep the lock
    try:
        assert (await reopened.get("key")) is not None
    finally:
        await reopened.close()


# -- on-disk hygiene -----------------------------------------------------------------


async def test_no_temporary_files_are_left_behind(backend: FileBackend, store_path: Path) -> None:
    for i in range(5):
        await backend.put(f"k{i}", b"v" * i)
        await backend.put(f"dir/k{i}", b"v")
    await backend.commit([Put("t/1", b"1"), Put("t/2", b"2"), Delete("k0")])
    await backend.delete("k1")
    await backend.commit([Delete("dir/k0"), Put("k1", b"back")])

    leftovers = [
        p for p in all_paths(store_path) if p.name.endswith(".tmp") or p.name.startswith(".")
    ]
    assert leftovers == []
    assert not (store_path / "txn.journal").exists()


async def test_stray_temporary_file_from_a_crash_is_ignored(
    backend: FileBackend, store_path: Path
) -> None:
    revision = await backend.put("dir/key", b"committed")
    await backend.close()
    # A crash between writing the temporary file and renaming it over the key.
    (store_path / "data" / "dir" / "._key.tmp").write_bytes(
        (revision + 100).to_bytes(8, "big") + b"torn"
    )
    (store_path / "data" / "._other.tmp").write_bytes((revision + 100).to_bytes(8, "big"))

    reopened = FileBackend(store_path)
    try:
        assert await reopened.get("dir/key") == Entry("dir/key", b"committed", revision)
        assert await reopened.list("") == ["dir/"]
        assert await reopened.list("dir/") == ["key"]
        assert await reopened.get("other") is None
    finally:
        await reopened.close()


async def test_a_folder_holding_only_stray_temporary_files_lists_as_empty(
    backend: FileBackend, store_path: Path
) -> None:
    await backend.put("kept/key", b"v")
    await backend.put("gone/deep/key", b"v")
    await backend.delete("gone/deep/key")
    await backend.close()
    # A crash left a temporary file where a key of "gone/" was being written,
    # and another one level deeper: neither folder holds a key.
    stray = store_path / "data" / "gone"
    (stray / "deep").mkdir(parents=True, exist_ok=True)
    (stray / "._key.tmp").write_bytes((99).to_bytes(8, "big") + b"torn")
    (stray / "deep" / "._key.tmp").write_bytes((99).to_bytes(8, "big") + b"torn")

    reopened = FileBackend(store_path)
    try:
        assert await reopened.list("") == ["kept/"]
        assert await reopened.list("gone/") == []
        await reopened.put("gone/deep/new", b"v")  # a real key: the folder lists again
        assert await reopened.list("") == ["gone/", "kept/"]
    finally:
        await reopened.close()


async def test_empty_folders_are_pruned_on_delete(backend: FileBackend, store_path: Path) -> None:
    await backend.put("a/b/c/key", b"v")
    await backend.put("a/sibling", b"v")
    await backend.close()  # a checkpoint: the key files are written
    backend = FileBackend(store_path)

    await backend.delete("a/b/c/key")
    await backend.close()

    assert not (store_path / "data" / "a" / "b").exists()
    assert (store_path / "data" / "a").is_dir()


@pytest.mark.usefixtures("umask_022")
async def test_files_are_0600_and_directories_0700(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    backend = FileBackend(store_path)
    try:
        await backend.put("top", b"v")
        await backend.put("one/two/three/leaf", b"v")
        await backend.commit([Put("x/y", b"1"), Put("x/z/w", b"2"), Delete("top")])
        await backend.put("top", b"again")
    finally:
        await backend.close()

    files = [p for p in all_paths(store_path) if p.is_file()]
    folders = [store_path, *(p for p in all_paths(store_path) if p.is_dir())]
    assert len(files) >= 5
    assert len(folders) >= 7
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for path in folders:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


async def test_key_files_hold_revision_then_value(backend: FileBackend, store_path: Path) -> None:
    revision = await backend.put("dir/key", b"payload")
    await backend.close()  # a checkpoint: the key files are written

    files = [p for p in all_paths(store_path / "data") if p.is_file()]

    assert len(files) == 1
    assert files[0].read_bytes() == revision.to_bytes(8, "big") + b"payload"
    assert b"payload" not in (store_path / "lock").read_bytes()


@pytest.mark.parametrize(
    "key", ["logical/uuid-1234/a//b", "logical/uuid-1234/../b", "logical/uuid-1234/a\x00"]
)
def test_an_invalid_key_is_refused_without_quoting_it(key: str) -> None:
    """The key holds internal ids (issue 14, item 7): the 400 says what is wrong, not where."""
    with pytest.raises(InvalidRequestError) as caught:
        validate_key(key)
    assert "uuid-1234" not in str(caught.value)
    assert str(caught.value).startswith("invalid path")
