"""DurableJournal: pysyncobj's journal interface, on disk, crash-tolerant."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from consensus.journal import RESERVE_BYTES, RESERVE_LOW, DurableJournal


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal"


def filled(path: Path, count: int = 5) -> DurableJournal:
    journal = DurableJournal(path)
    for index in range(1, count + 1):
        journal.add(b"cmd-%d" % index, index, 1 + index // 3)
    return journal


def stored(path: Path) -> list[tuple[bytes, int, int]]:
    """The entries a fresh open finds (and closes again)."""
    journal = DurableJournal(path)
    try:
        return list(journal[:])
    finally:
        journal._destroy()


def test_entries_survive_a_reopen(path: Path) -> None:
    journal = filled(path)
    journal.sync()
    journal._destroy()

    again = DurableJournal(path)

    assert len(again) == 5
    assert again[0] == (b"cmd-1", 1, 1)
    assert again[-1] == (b"cmd-5", 5, 2)
    assert again[1:3] == [(b"cmd-2", 2, 1), (b"cmd-3", 3, 2)]
    again._destroy()


def test_sync_reports_whether_there_was_anything_to_sync(path: Path) -> None:
    journal = DurableJournal(path)
    assert journal.sync() is False
    journal.add(b"x", 1, 0)
    assert journal.dirty
    assert journal.sync() is True
    assert journal.sync() is False
    journal._destroy()


def test_a_torn_tail_is_cut_on_open(path: Path) -> None:
    journal = filled(path)
    journal._destroy()
    size = path.stat().st_size
    with open(path, "r+b") as raw:  # a crash in the middle of the last append
        raw.truncate(size - 3)
    with open(path, "ab") as raw:
        raw.write(b"\x07garbage")

    again = DurableJournal(path)

    assert [entry[1] for entry in again] == [1, 2, 3, 4]
    again.add(b"cmd-5b", 5, 2)
    again._destroy()
    assert stored(path)[-1][0] == b"cmd-5b"


def test_a_flipped_bit_ends_the_log_there(path: Path) -> None:
    journal = filled(path)
    journal._destroy()
    data = bytearray(path.read_bytes())
    data[data.index(b"cmd-3")] ^= 0x01
    path.write_bytes(bytes(data))

    assert [entry[1] for entry in stored(path)] == [1, 2]


def test_delete_from_and_clear_truncate_the_file(path: Path) -> None:
    journal = filled(path)
    journal.deleteEntriesFrom(2)  # positions, as pysyncobj passes them
    journal.add(b"other", 3, 5)
    journal._destroy()

    again = DurableJournal(path)
    assert [entry[1:] for entry in again] == [(1, 1), (2, 1), (3, 5)]
    again.clear()
    again.add(b"fresh", 9, 6)
    again._destroy()
    assert [entry[1] for entry in stored(path)] == [9]


def test_compaction_rewrites_into_a_new_file(path: Path) -> None:
    journal = filled(path, 8)
    inode = path.stat().st_ino

    journal.deleteEntriesTo(5)

    assert [entry[1] for entry in journal] == [6, 7, 8]
    assert path.stat().st_ino != inode, "never rewritten in place"
    journal.add(b"cmd-9", 9, 3)
    journal._destroy()
    assert [entry[1] for entry in stored(path)] == [6, 7, 8, 9]
    assert not path.with_name("journal.compact").exists()


def test_term_and_vote_are_stored_at_once_commit_index_lazily(path: Path) -> None:
    journal = filled(path)
    meta = path.with_name("journal.meta")

    journal.setCurrentTerm(4, "10.0.0.1:8201")
    assert json.loads(meta.read_bytes()) == {"term": 4, "voted_for": "10.0.0.1:8201"}

    journal.setRaftCommitIndex(5)
    assert "commit_index" not in json.loads(meta.read_bytes())
    journal.onOneSecondTimer()
    assert json.loads(meta.read_bytes())["commit_index"] == 5
    journal._destroy()

    again = DurableJournal(path)
    assert (again.getCurrentTerm(), again.getVotedForNodeId(), again.getRaftCommitIndex()) == (
        4,
        "10.0.0.1:8201",
        5,
    )
    again._destroy()


def test_commit_index_is_never_past_the_log(path: Path) -> None:
    journal = filled(path, 3)
    journal.setRaftCommitIndex(10)
    journal._destroy()

    again = DurableJournal(path)
    assert again.getRaftCommitIndex() == 3
    again._destroy()


def test_log_helpers(path: Path) -> None:
    journal = filled(path)
    journal.deleteEntriesTo(2)

    assert (journal.first_index(), journal.last_index()) == (3, 5)
    assert journal.term_at(3) == 2
    assert journal.term_at(2) is None
    assert journal.term_at(6) is None
    assert journal.position_of((b"cmd-4", 4, 2)) == 1
    assert journal.position_of((b"cmd-4", 4, 3)) is None
    journal._destroy()


def test_files_are_private(path: Path, umask_022: None) -> None:
    journal = filled(path)
    journal.setCurrentTerm(1, None)
    journal.deleteEntriesTo(1)
    journal._destroy()

    for name in ("journal", "journal.meta"):
        assert stat.S_IMODE((path.parent / name).stat().st_mode) == 0o600, name


def test_a_foreign_file_is_refused(path: Path) -> None:
    path.write_bytes(b"PYSYNCOBJ\x00\x00\x00")

    with pytest.raises(ValueError, match="not a Coffer raft journal"):
        DurableJournal(path)


def test_a_format_1_journal_with_pickled_entries_is_refused_not_read(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    path.write_bytes(b"CFRJRNL1" + b"\x00" * 40)

    with pytest.raises(ValueError, match="format 1"):
        DurableJournal(path)


# -- written ahead as zeros ------------------------------------------------------------------


def test_appends_overwrite_zeros_written_ahead_and_a_reopen_keeps_them(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = filled(path, 2)
    assert journal.reserve() is True
    size = path.stat().st_size
    assert size == journal.size_bytes + RESERVE_BYTES
    assert journal.reserve() is False, "enough is left"

    journal.add(b"cmd-3", 3, 2)
    journal.sync()
    assert path.stat().st_size == size, "the append wrote into the zeros"
    journal._destroy()

    with caplog.at_level(logging.WARNING, logger="consensus.journal"):
        again = DurableJournal(path)
    assert [entry[1] for entry in again] == [1, 2, 3]
    assert "torn" not in caplog.text, "zeros are free space, not a torn record"
    assert path.stat().st_size == size
    again.add(b"cmd-4", 4, 2)
    again._destroy()
    assert [entry[1] for entry in stored(path)] == [1, 2, 3, 4]


def test_a_record_torn_inside_the_zeros_is_cut(path: Path) -> None:
    journal = filled(path, 3)
    journal.reserve()
    end = journal.size_bytes
    journal._destroy()
    with open(path, "r+b") as raw:  # a crash half-way through the next record
        raw.seek(end)
        raw.write(b"\x09\x00\x00\x00partial")

    again = DurableJournal(path)
    assert [entry[1] for entry in again] == [1, 2, 3]
    assert path.stat().st_size == end
    again._destroy()


def test_more_zeros_are_written_once_few_are_left(path: Path) -> None:
    journal = DurableJournal(path)
    journal.reserve()
    first = path.stat().st_size
    big = b"x" * (RESERVE_BYTES - RESERVE_LOW + 1)
    journal.add(big, 1, 1)
    assert path.stat().st_size == first
    assert journal.reserve() is True
    assert path.stat().st_size == first + RESERVE_BYTES
    journal.add(b"y" * (2 * RESERVE_BYTES), 2, 1)  # more than is reserved: the file grows
    journal._destroy()
    assert [len(entry[0]) for entry in stored(path)] == [len(big), 2 * RESERVE_BYTES]


def test_compaction_and_truncation_start_from_their_new_end(path: Path) -> None:
    journal = filled(path, 6)
    journal.reserve()
    journal.deleteEntriesFrom(4)
    assert path.stat().st_size == journal.size_bytes
    journal.reserve()
    journal.deleteEntriesTo(2)
    assert path.stat().st_size == journal.size_bytes
    assert journal.reserve() is True
    journal.add(b"cmd-5b", 5, 3)
    journal._destroy()
    assert [entry[1] for entry in stored(path)] == [3, 4, 5]


def _full_for_zeros() -> Callable[..., None]:
    """``write_all`` on a disk with no room for the zeros written ahead (ENOSPC)."""
    from consensus import journal as module

    real = module.write_all

    def full(fd: int, payload: bytes, offset: int | None = None) -> None:
        if payload is module._ZEROS:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, payload, offset)

    return full


def test_a_full_disk_when_writing_ahead_is_not_fatal(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consensus import journal as module

    real, full = module.write_all, _full_for_zeros()
    journal = filled(path, 2)
    monkeypatch.setattr(module, "write_all", full)
    assert journal.reserve() is False
    assert journal.broken is None
    assert journal.reserve() is False, "no retry until more was appended"
    journal.add(b"cmd-3", 3, 2)
    assert journal.sync() is True
    monkeypatch.setattr(module, "write_all", real)
    journal.add(b"x" * RESERVE_BYTES, 4, 2)
    assert journal.reserve() is True, "tried again once a reserve's worth was appended"
    journal._destroy()
    assert [entry[1] for entry in stored(path)] == [1, 2, 3, 4]


def test_after_a_full_disk_a_compaction_tries_writing_ahead_again(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait after a failed write-ahead is counted in the file's offsets, which a
    compaction starts again (and frees space)."""
    from consensus import journal as module

    real, full = module.write_all, _full_for_zeros()
    journal = filled(path, 4)
    journal.add(b"x" * RESERVE_BYTES, 5, 2)
    monkeypatch.setattr(module, "write_all", full)
    assert journal.reserve() is False
    monkeypatch.setattr(module, "write_all", real)
    journal.deleteEntriesTo(5)
    assert journal.reserve() is True
    journal._destroy()


def test_a_broken_journal_writes_nothing_ahead(path: Path) -> None:
    journal = filled(path, 2)
    size = path.stat().st_size
    journal.broken = OSError(errno.EIO, "Input/output error")  # a failed sync before
    assert journal.reserve() is False
    assert path.stat().st_size == size
    journal.broken = None
    journal._destroy()


_COMMANDS = st.lists(st.binary(max_size=300), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    commands=_COMMANDS,
    reserve_after=st.integers(min_value=0, max_value=12),
    damage_at=st.floats(min_value=0.0, max_value=1.0),
    damage=st.one_of(st.none(), st.binary(min_size=1, max_size=64)),
)
def test_a_reopen_keeps_exactly_the_records_before_the_first_damaged_byte(
    tmp_path_factory: pytest.TempPathFactory,
    commands: list[bytes],
    reserve_after: int,
    damage_at: float,
    damage: bytes | None,
) -> None:
    """Whatever a crash leaves (a cut, or garbage over any bytes, zeros ahead or
    not), a reopen finds the records that end before the first damaged byte."""
    path = tmp_path_factory.mktemp("j") / "journal"
    journal = DurableJournal(path)
    for index, command in enumerate(commands, start=1):
        journal.add(command, index, 1)
        if index == reserve_after:
            journal.reserve()
    offsets = [*journal._offsets, journal.size_bytes]
    journal._destroy()
    data = path.read_bytes()
    first_bad = 8 + round(damage_at * (len(data) - 8))  # never the magic
    if damage is None:
        data = data[:first_bad]
    else:
        # every patched byte differs from the one it replaces (d | 1 is never 0)
        old = data[first_bad : first_bad + len(damage)]
        patch = bytes(o ^ (d | 1) for o, d in zip(old, damage, strict=False))
        data = data[:first_bad] + patch + data[first_bad + len(patch) :]
        if not patch:  # garbage past the end
            data += damage
    path.write_bytes(data)

    kept = sum(1 for end in offsets[1:] if end <= first_bad)
    again = DurableJournal(path)
    assert list(again[:]) == [(c, i, 1) for i, c in enumerate(commands[:kept], start=1)]
    again.add(b"next", kept + 1, 1)
    again._destroy()
    assert [entry[1] for entry in stored(path)] == [*range(1, kept + 1), kept + 1]


def test_written_at_sync_records_reach_the_file_in_the_sync(path: Path) -> None:
    journal = DurableJournal(path)
    journal.write_at_sync = True
    size = path.stat().st_size
    journal.add(b"one", 1, 1)
    journal.add(b"two", 2, 1)

    assert path.stat().st_size == size  # nothing written yet
    assert journal[:] == [(b"one", 1, 1), (b"two", 2, 1)]  # the engine reads memory
    assert journal.durableIndex() == 0
    assert journal.sync()
    assert journal.durableIndex() == 2
    assert stored(path) == [(b"one", 1, 1), (b"two", 2, 1)]
    journal._destroy()


_ADD = st.tuples(st.just("add"), st.binary(max_size=200))
_OPERATIONS = st.lists(
    st.one_of(
        _ADD,
        _ADD,
        _ADD,
        st.tuples(st.just("sync"), st.none()),
        st.tuples(st.just("reserve"), st.none()),
        st.tuples(st.just("delete_from"), st.integers(min_value=0, max_value=12)),
        st.tuples(st.just("delete_to"), st.integers(min_value=0, max_value=12)),
    ),
    max_size=30,
)


@pytest.mark.parametrize("write_at_sync", [True, False], ids=["at-sync", "at-add"])
@settings(max_examples=100, deadline=None)
@given(operations=_OPERATIONS)
@example(operations=[("add", b"a"), ("add", b"b"), ("delete_from", 1), ("add", b"c")])
@example(operations=[("add", b"a"), ("sync", None), ("add", b"b"), ("delete_to", 1)])
def test_after_a_sync_the_file_holds_exactly_the_entries_in_memory(
    tmp_path_factory: pytest.TempPathFactory,
    operations: list[tuple[str, object]],
    write_at_sync: bool,
) -> None:
    """Appends, truncations, compactions and zeros written ahead, in any order,
    with records written at once or at the sync: a sync leaves the file equal to
    what the engine sees."""
    path = tmp_path_factory.mktemp("j") / "journal"
    journal = DurableJournal(path)
    journal.write_at_sync = write_at_sync
    index = 0
    for operation, argument in operations:
        if operation == "add":
            assert isinstance(argument, bytes)
            index += 1
            journal.add(argument, index, 1)
        elif operation == "sync":
            journal.sync()
        elif operation == "reserve":
            journal.reserve()
        elif operation == "delete_from" and len(journal):
            assert isinstance(argument, int)
            journal.deleteEntriesFrom(min(argument, len(journal)))
            index = journal[-1][1] if len(journal) else index
        elif operation == "delete_to" and len(journal):
            assert isinstance(argument, int)
            journal.deleteEntriesTo(min(argument, len(journal)))
    in_memory = list(journal[:])
    journal.sync()
    journal._destroy()
    assert stored(path) == in_memory
