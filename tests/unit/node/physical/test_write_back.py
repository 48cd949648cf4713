"""Write-back key files in the file backend: a commit is answered once its log
record is durable, the key files catch up at a checkpoint, and until then reads,
lists and revision checks see the logged writes over the files. A crash in the
middle of a checkpoint reopens to every acknowledged write."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from node.physical.file import FileBackend
from sdk.errors import RevisionMismatchError
from sdk.physical import Delete, Entry, Put


def key_files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root / "data")) for p in (root / "data").rglob("_*") if p.is_file()
    )


async def test_key_files_are_written_at_a_checkpoint_not_per_commit(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = FileBackend(root)
    try:
        first = await store.put("a/one", b"1")
        await store.commit([Put("a/two", b"2"), Put("b", b"3")])
        for i in range(20):
            await store.put("a/one", b"%d" % i)  # one key rewritten: one file at the end
        assert key_files(root) == []
        assert (root / "wal").stat().st_size > 0
        assert (await store.get("a/one") or Entry("", b"", 0)).value == b"19"
        with pytest.raises(RevisionMismatchError):
            await store.commit([Put("a/one", b"x", expect=first)])
        await store.checkpoint()
        assert key_files(root) == ["_b", "a/_one", "a/_two"]
        assert (root / "wal").stat().st_size == 0
        assert (root / "data" / "a" / "_one").read_bytes()[8:] == b"19"
        await store.commit([Delete("b"), Put("c/d", b"4")])  # open and writing still
    finally:
        await store.close()
    assert key_files(root) == ["a/_one", "a/_two", "c/_d"]
    assert (root / "wal").stat().st_size == 0


async def test_reads_and_lists_see_pending_writes_over_the_key_files(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = FileBackend(root)
    for key in ("a/1", "a/2", "b/c/d", "e", "g/h/i"):
        await store.put(key, key.encode())
    await store.close()  # all five in key files

    store = FileBackend(root)
    try:
        await store.commit([Delete("a/1"), Delete("b/c/d"), Put("f/g", b"fg"), Put("a/3", b"3")])
        await store.commit([Put("g/h/j", b"j"), Delete("g/h/i")])
        assert key_files(root) == ["_e", "a/_1", "a/_2", "b/c/_d", "g/h/_i"]  # unchanged

        assert await store.list("") == ["a/", "e", "f/", "g/"]  # "b/" holds no key now
        assert await store.list("a/") == ["2", "3"]
        assert await store.list("b/") == []
        assert await store.list("g/h/") == ["j"]
        assert await store.list("f") == ["/"]
        assert await store.list("a/3") == [""]
        assert await store.get("a/1") is None
        assert await store.get("b/c/d") is None
        found = await store.get("a/3")
        assert found is not None and found.value == b"3"
    finally:
        await store.close()

    reopened = FileBackend(root)
    try:
        assert await reopened.list("") == ["a/", "e", "f/", "g/"]
        assert key_files(root) == ["_e", "a/_2", "a/_3", "f/_g", "g/h/_j"]
    finally:
        await reopened.close()


async def test_pending_writes_answer_what_the_entry_cache_evicted(tmp_path: Path) -> None:
    store = FileBackend(tmp_path / "store", cached_entries=2)
    try:
        first = await store.put("a", b"1")
        b = await store.commit([Put("b", b"2"), Put("c", b"3"), Delete("d")])
        await store.put("e", b"4")  # "a" is long evicted; its file is not written
        with pytest.raises(RevisionMismatchError):
            await store.commit([Put("a", b"x", expect=0)])
        second = await store.commit([Put("a", b"y", expect=first)])
        await store.put("f", b"5")
        assert await store.get("a") == Entry("a", b"y", second)
        assert await store.get("d") is None
        assert await store.get("b") == Entry("b", b"2", b)  # evicted; in no file yet
    finally:
        await store.close()


class GatedCheckpointFsync:
    """Blocks the checkpoint thread's first fsync until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, fd: int) -> None:
        if threading.current_thread().name.startswith("file-storage-checkpoint"):
            self.entered.set()
            self.gate.wait()
        os.fsync(fd)


async def test_a_crash_during_a_checkpoint_reopens_to_every_acknowledged_write(
    tmp_path: Path,
) -> None:
    """The disk as a crash finds it while a checkpoint writes its key files:
    ``wal.old`` (the generation being written), the new log, some key files."""
    root, crashed = tmp_path / "store", tmp_path / "crashed"
    fsync = GatedCheckpointFsync()
    store = FileBackend(root, fsync=fsync, checkpoint_bytes=1000)
    acknowledged: dict[str, tuple[bytes, int]] = {}
    try:
        i = 0
        while not (root / "wal.old").exists():  # until a checkpoint has started
            key, value = f"k/{i % 5}", b"v%d" % i
            acknowledged[key] = (value, await store.put(key, value))
            i += 1
        await asyncio.to_thread(fsync.entered.wait)  # its key files are written
        for j in range(8):  # into the new log while the checkpoint is held
            key, value = f"k/{j % 3}", b"late%d" % j
            acknowledged[key] = (value, await store.put(key, value))
        removed = await store.commit([Delete("k/4")])
        acknowledged.pop("k/4", None)
        assert (root / "wal.old").exists()
        shutil.copytree(root, crashed, ignore=shutil.ignore_patterns("lock"))
    finally:
        fsync.gate.set()
        await store.close()

    reopened = FileBackend(crashed)
    try:
        for key, (value, revision) in acknowledged.items():
            assert await reopened.get(key) == Entry(key, value, revision), key
        assert await reopened.get("k/4") is None
        assert not (crashed / "wal.old").exists()
        assert await reopened.put("after", b"x") > removed
    finally:
        await reopened.close()


_keys = st.sampled_from(["a", "d/x", "d/y", "d/e/z", "f/g/h"])
_commit = st.lists(
    st.tuples(st.booleans(), _keys, st.binary(max_size=6)),
    min_size=1,
    max_size=3,
    unique_by=lambda t: t[1],
)


def _listing(model: dict[str, bytes], prefix: str) -> list[str]:
    children = set()
    for key in model:
        if key.startswith(prefix):
            child, slash, _ = key[len(prefix) :].partition("/")
            children.add(child + slash)
    return sorted(children)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    commits=st.lists(_commit, min_size=1, max_size=16),
    checkpoint_bytes=st.sampled_from([1, 96, 1 << 30]),
)
def test_reads_and_lists_match_the_commits_across_checkpoints_and_reopen(
    commits: list[list[tuple[bool, str, bytes]]], checkpoint_bytes: int
) -> None:
    """Whatever the checkpoints have written so far, every read and list answers
    the commits made, before and after a reopen."""

    async def run(root: Path) -> None:
        model: dict[str, bytes] = {}
        store = FileBackend(root, checkpoint_bytes=checkpoint_bytes)
        try:
            for ops in commits:
                await store.commit([Put(k, v) if put else Delete(k) for put, k, v in ops])
                for put, key, value in ops:
                    if put:
                        model[key] = value
                    else:
                        model.pop(key, None)
                await check(store, model)
        finally:
            await store.close()
        reopened = FileBackend(root)
        try:
            await check(reopened, model)
        finally:
            await reopened.close()

    async def check(store: FileBackend, model: dict[str, bytes]) -> None:
        for prefix in ("", "d/", "d/e/", "f/", "f/g/", "d/e", "a"):
            assert await store.list(prefix) == _listing(model, prefix), prefix
        for key in ("a", "d/x", "d/y", "d/e/z", "f/g/h"):
            found = await store.get(key)
            assert (found.value if found else None) == model.get(key), key

    with tempfile.TemporaryDirectory() as root:
        asyncio.run(run(Path(root) / "store"))
