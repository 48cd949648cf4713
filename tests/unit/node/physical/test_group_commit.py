"""Group commit in the file backend: concurrent writers share one fsync of the log,
nothing is acknowledged before that fsync, and whatever a crash leaves behind (a
killed process, a torn log tail, half-written key files) reopens to exactly the
acknowledged writes."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from node.physical.file import FileBackend
from sdk.errors import InvalidRequestError, RevisionMismatchError, StorageError
from sdk.physical import Delete, Entry, Put

ROOT = Path(__file__).resolve().parents[4]


class GatedFsync:
    """Counts fsyncs; the first one waits until the test opens the gate."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if not self.gate.is_set():
            self.entered.set()
            self.gate.wait()
        os.fsync(fd)


async def test_concurrent_writers_share_fsyncs_and_wait_for_them(tmp_path: Path) -> None:
    fsync = GatedFsync()
    store = FileBackend(tmp_path / "store", fsync=fsync)
    try:
        writes = [asyncio.create_task(store.put(f"k{i}", b"v%d" % i)) for i in range(32)]
        # The writer is now inside the first batch's fsync; every put has queued.
        assert await asyncio.to_thread(fsync.entered.wait, 60)
        await asyncio.sleep(0)
        assert not any(w.done() for w in writes)  # none acknowledged before its fsync

        fsync.gate.set()
        revisions = await asyncio.gather(*writes)

        assert fsync.calls <= 2  # the first batch, then everything queued behind it
        assert sorted(revisions) == list(range(min(revisions), min(revisions) + 32))
        for i, revision in enumerate(revisions):
            assert await store.get(f"k{i}") == Entry(f"k{i}", b"v%d" % i, revision)
    finally:
        fsync.gate.set()
        await store.close()


async def test_the_highest_revision_of_a_key_is_the_value_it_keeps(tmp_path: Path) -> None:
    store = FileBackend(tmp_path / "store")
    try:
        revisions = await asyncio.gather(*(store.put("same", b"%d" % i) for i in range(64)))
        assert len(set(revisions)) == 64
        last = max(range(64), key=lambda i: revisions[i])
        assert await store.get("same") == Entry("same", b"%d" % last, revisions[last])
    finally:
        await store.close()


async def test_checks_in_one_batch_see_the_writes_queued_before_them(tmp_path: Path) -> None:
    fsync = GatedFsync()
    store = FileBackend(tmp_path / "store", fsync=fsync)
    try:
        first = asyncio.create_task(store.put("held", b"x"))
        assert await asyncio.to_thread(fsync.entered.wait, 60)
        created = asyncio.create_task(store.commit([Put("k", b"1", expect=0)]))
        again = asyncio.create_task(store.commit([Put("k", b"2", expect=0)]))
        removed = asyncio.create_task(store.commit([Delete("k", expect=None)]))
        recreated = asyncio.create_task(store.commit([Put("k", b"3", expect=0)]))
        await asyncio.sleep(0)
        fsync.gate.set()

        await first
        revision = await created
        with pytest.raises(RevisionMismatchError):
            await again
        await removed
        final = await recreated
        assert final > revision
        assert await store.get("k") == Entry("k", b"3", final)
    finally:
        fsync.gate.set()
        await store.close()


async def test_a_checkpoint_empties_the_log_and_keeps_every_write(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = FileBackend(path, checkpoint_bytes=256)
    written = {}
    for i in range(40):
        written[f"d/k{i % 7}"] = (b"v%d" % i, await store.put(f"d/k{i % 7}", b"v%d" % i))
        assert (path / "wal").stat().st_size < 256 + 64
    newest = await store.put("newest", b"n")
    deleted_at = await store.commit([Delete("newest")])
    assert deleted_at > newest
    await store.close()
    assert (path / "wal").stat().st_size == 0  # close checkpoints

    reopened = FileBackend(path)
    try:
        for key, (value, revision) in written.items():
            assert await reopened.get(key) == Entry(key, value, revision)
        assert await reopened.put("newest", b"again") > deleted_at
    finally:
        await reopened.close()


async def test_a_bad_commit_fails_alone_and_the_writer_keeps_going(tmp_path: Path) -> None:
    store = FileBackend(tmp_path / "store")
    try:
        with pytest.raises(InvalidRequestError):
            await store.put("bad/\ud800", b"x")  # a lone surrogate has no UTF-8 form
        with pytest.raises(InvalidRequestError):
            await store.commit([Put("fine", b"1"), Put("a//b", b"2")])
        revision = await store.put("fine", b"ok")
        assert await store.get("fine") == Entry("fine", b"ok", revision)
    finally:
        await store.close()


async def test_a_failed_log_fsync_fails_its_batch_and_stops_writes_until_reopen(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    store = FileBackend(path)
    kept = await store.put("kept", b"k")
    await store.close()

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    store = FileBackend(path, fsync=failing)
    try:
        with pytest.raises(StorageError, match="Input/output error"):
            await store.put("lost", b"x")
        with pytest.raises(StorageError, match="until restarted"):
            await store.put("refused", b"y")
        assert await store.get("refused") is None
    finally:
        await store.close()

    reopened = FileBackend(path)
    try:
        assert await reopened.get("kept") == Entry("kept", b"k", kept)
        assert await reopened.get("refused") is None
        assert await reopened.put("again", b"z") > kept
    finally:
        await reopened.close()


# -- a torn log tail and half-written key files after a crash ------------------------

KEYS = ("a", "b", "c/d", "c/e")
commits = st.lists(
    st.lists(
        st.one_of(
            st.builds(Put, st.sampled_from(KEYS), st.binary(max_size=16)),
            st.builds(Delete, st.sampled_from(KEYS)),
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda op: op.key,
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits, st.data())
def test_reopening_after_a_crash_shows_exactly_the_logged_prefix(
    batches: list[list[Put | Delete]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_crash_and_reopen(Path(tmp), batches, data))


async def _crash_and_reopen(
    tmp: Path, batches: list[list[Put | Delete]], data: st.DataObject
) -> None:
    live, snapshot, crashed = tmp / "live", tmp / "snapshot", tmp / "crashed"
    store = FileBackend(live)
    await store.put("seed", b"s")
    await store.close()  # a checkpoint: the disk as the crash will find it, log empty
    shutil.copytree(live, snapshot)

    store = FileBackend(live)
    ends, states = [0], [{"seed": (b"s", 0)}]
    for ops in batches:
        revision = await store.commit(ops)
        state = dict(states[-1])
        for op in ops:
            if isinstance(op, Put):
                state[op.key] = (op.value, revision)
            else:
                state.pop(op.key, None)
        states.append(state)
        ends.append((live / "wal").stat().st_size)
    log = (live / "wal").read_bytes()
    await store.close()

    cut = data.draw(st.integers(0, len(log)), label="cut")
    garbage = data.draw(st.binary(max_size=24), label="garbage")
    whole = max(i for i, end in enumerate(ends) if end <= cut)
    shutil.copytree(snapshot, crashed)
    (crashed / "wal").write_bytes(log[:cut] + garbage)
    # Key files the logged writes touched may have reached the disk torn.
    touched = sorted({op.key for ops in batches[:whole] for op in ops})
    for key in data.draw(
        st.lists(st.sampled_from(touched), unique=True) if touched else st.just([])
    ):
        folder, _, leaf = key.rpartition("/")
        target = crashed / "data" / folder / f"_{leaf}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"\x00\x00\x00")

    reopened = FileBackend(crashed)
    try:
        expected = states[whole]
        for key in ("seed", *KEYS):
            entry = await reopened.get(key)
            if key not in expected:
                assert entry is None, key
            elif key != "seed":
                assert entry == Entry(key, *expected[key]), key
        top = sorted({k.split("/")[0] + ("/" if "/" in k else "") for k in expected})
        assert await reopened.list("") == top
        assert (crashed / "wal").stat().st_size == (ends[whole] if whole else 0)
        assert await reopened.put("after", b"x") > max((r for _, r in expected.values()), default=0)
    finally:
        await reopened.close()


# -- kill -9 of a process under load -------------------------------------------------

_WRITER = """
import asyncio, sys
from node.physical.file import FileBackend

async def writer(store, i):
    n = 0
    while True:
        key, value = f"w{i}/k{n % 13}", f"{i}:{n}".encode()
        revision = await store.put(key, value)
        print(key, value.decode(), revision, flush=True)
        n += 1

async def main():
    store = FileBackend(sys.argv[1], checkpoint_bytes=8192)
    await asyncio.gather(*(writer(store, i) for i in range(16)))

asyncio.run(main())
"""


def test_every_acknowledged_write_survives_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, env=env, cwd=ROOT
    )
    assert proc.stdout is not None
    acked: list[str] = []
    try:
        while len(acked) < 1500:
            line = proc.stdout.readline().decode()
            assert line, "the writer process exited"
            acked.append(line)
        os.kill(proc.pid, signal.SIGKILL)
        acked += proc.stdout.read().decode().splitlines()  # printed before the kill
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()

    latest: dict[str, tuple[int, int]] = {}  # key -> (n, revision) of its last ack
    last_n: dict[int, int] = {}  # writer -> its last acknowledged n
    for line in acked:
        parts = line.split()
        if len(parts) != 3:
            continue  # the kill cut the last line short
        key, value, revision = parts
        writer, n = map(int, value.split(":"))
        latest[key] = max(latest.get(key, (-1, 0)), (n, int(revision)))
        last_n[writer] = max(last_n.get(writer, -1), n)

    async def check() -> None:
        store = FileBackend(path)
        try:
            for key, (n, revision) in latest.items():
                entry = await store.get(key)
                assert entry is not None, key
                writer, stored_n = map(int, entry.value.decode().split(":"))
                # The acknowledged value, or the one write of that writer in flight.
                assert stored_n == n or stored_n == last_n[writer] + 1, (key, entry)
                assert entry.revision >= revision
        finally:
            await store.close()

    asyncio.run(check())


_nested_keys = st.sampled_from(["a", "d/x", "d/y", "d/e/z", "f/g/h"])
_batch_ops = st.lists(
    st.tuples(st.booleans(), _nested_keys, st.binary(max_size=6)), min_size=1, max_size=3
)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(_batch_ops, min_size=1, max_size=24))
def test_concurrent_commits_leave_each_keys_last_write_in_its_file(
    commits: list[list[tuple[bool, str, bytes]]],
) -> None:
    """Commits sent at once share batches, whose key files are written on several
    threads (each key's last write; puts, then deletes that prune folders). Every
    read, at once and after a reopen, answers the highest revision's write."""

    async def run(root: Path) -> None:
        store = FileBackend(root)
        try:
            sent = [
                [Put(key, value) if put else Delete(key) for put, key, value in ops]
                for ops in commits
            ]
            revisions = await asyncio.gather(*(store.commit(ops) for ops in sent))
            model: dict[str, tuple[bytes, int]] = {}
            for revision, ops in sorted(zip(revisions, sent, strict=True), key=lambda p: p[0]):
                for op in ops:
                    if isinstance(op, Put):
                        model[op.key] = (op.value, revision)
                    else:
                        model.pop(op.key, None)
            expected = {key: Entry(key, *found) for key, found in model.items()}
            keys = {key for ops in commits for _, key, _ in ops}
            assert {k: await store.get(k) for k in keys} == {k: expected.get(k) for k in keys}
        finally:
            await store.close()
        reopened = FileBackend(root)  # no cache: the key files themselves
        try:
            assert {k: await reopened.get(k) for k in keys} == {k: expected.get(k) for k in keys}
        finally:
            await reopened.close()

    with tempfile.TemporaryDirectory() as root:
        asyncio.run(run(Path(root) / "store"))
