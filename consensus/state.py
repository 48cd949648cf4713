"""The replicated key-value state, free of any Raft machinery.

Every replica feeds the same commands at the same log indexes through
:meth:`KVState.apply`, so everything here must be deterministic: revisions
are monotonic and never reused, and the idempotency window is a fixed count
of command ids, not a clock.

**Revisions are logical indexes.** A write's revision is its entry's log
index plus ``offset``, the number of extra revisions earlier batches used: a
:class:`~consensus.commands.Batch` of n transactions at index i with offset o
gives them o+i, o+i+1, ... o+i+n-1 (one each, in order, as n separate entries
would), and leaves offset o+n-1. Without batches the offset stays 0 and a
revision is exactly the log index. The offset is replicated state (it is in
every dump), so every replica gives a write the same revision. ``RaftBackend``
reports the applied position and change notifications in the same logical
space (``log index + offset``), so waiting for a write's revision still means
waiting until the entry that carries it is applied.

Reads come from the event loop while the Raft thread applies, so the data and
its sorted keys (:class:`sdk.sorted_keys.SortedKeys`, brought up to date by the
next ``list`` rather than by every write) change together under one lock.

A :class:`~consensus.commands.Batch` entry applies its transactions in order,
each on its own (a mismatch in one leaves the others applied), each
remembered under its own id and with its own revision.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from consensus.commands import (
    Applied,
    Batch,
    BatchResult,
    Command,
    EntryResult,
    MemberChange,
    Mismatch,
    Rejected,
    Restore,
    Result,
    Txn,
)
from sdk.errors import InvalidRequestError
from sdk.physical import Delete, Put, children_of, validate_key
from sdk.sorted_keys import SortedKeys

__all__ = ["IDEMPOTENCY_WINDOW", "ChangeSet", "KVState", "StateImage"]

#: Command ids remembered for retries. Part of the replicated semantics, so a
#: constant of the format rather than a per-node setting.
IDEMPOTENCY_WINDOW = 50_000


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Keys changed by one entry; ``index`` is the logical index once it is applied
    (its last revision); ``reset`` means "all keys"."""

    index: int
    keys: tuple[str, ...]
    reset: bool = False


@dataclass(frozen=True, slots=True)
class StateImage:
    """A point-in-time copy of the state, for dumps and exports."""

    applied: int
    data: dict[str, tuple[bytes, int]]
    results: list[tuple[str, Result]]
    members: dict[str, str]
    #: Revisions handed out beyond log indexes (see the module docstring).
    offset: int = 0


class KVState:
    """key -> (ciphertext, revision), the applied index and the id window."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, tuple[bytes, int]] = {}
        self._keys = SortedKeys()
        self._applied = 0
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._members: dict[str, str] = {}
        self._offset = 0

    # -- reads (any thread) ------------------------------------------------

    @property
    def applied_index(self) -> int:
        """The last log index applied (Raft's numbering)."""
        return self._applied

    @property
    def offset(self) -> int:
        """Add to a log index applied here to get its logical index."""
        return self._offset

    def get(self, key: str) -> tuple[bytes, int] | None:
        with self._lock:
            return self._data.get(key)

    def list(self, prefix: str) -> list[str]:
        with self._lock:
            matched = self._keys.starting_with(prefix)
        return children_of(prefix, matched)

    def result_for(self, command_id: str) -> Result | None:
        with self._lock:
            return self._results.get(command_id)

    def members(self) -> dict[str, str]:
        with self._lock:
            return dict(self._members)

    def __len__(self) -> int:
        return len(self._data)

    # -- writes (the Raft thread only) ---------------------------------------

    def apply(
        self, index: int, command: Command | Batch | Rejected
    ) -> tuple[EntryResult, ChangeSet | None]:
        """Apply the entry at ``index``; a replayed index or a known id is a no-op."""
        with self._lock:
            if index <= self._applied:
                # Never apply an index twice, whatever the library replays.
                return self._replayed(index, command), None
            self._applied = index
            if isinstance(command, Rejected):
                return command, None
            if isinstance(command, Batch):
                return self._batch(index, command)
            return self._once(index + self._offset, command)

    def _replayed(self, index: int, command: Command | Batch | Rejected) -> EntryResult:
        stale = Rejected(f"index {index} already applied")
        if isinstance(command, Rejected):
            return stale
        if isinstance(command, Batch):
            return BatchResult(
                tuple(
                    (None if isinstance(inner, Rejected) else self._results.get(inner.id)) or stale
                    for inner in command.commands
                )
            )
        return self._results.get(command.id) or stale

    def _batch(self, index: int, batch: Batch) -> tuple[BatchResult, ChangeSet | None]:
        first = index + self._offset
        results: list[Result] = []
        #: The keys changed by the whole entry, in order, each once.
        changed: dict[str, None] = {}
        known_results = self._results
        for position, inner in enumerate(batch.commands):
            if isinstance(inner, Rejected):
                results.append(inner)
                continue
            result = known_results.get(inner.id)
            if result is None:
                # A batch holds transactions: each adds its keys to the entry's
                # set directly (no change set per transaction).
                if type(inner) is Txn:
                    result = self._txn(first + position, inner, changed)
                else:
                    result, changes = self._apply_new(first + position, inner)
                    if changes is not None:
                        changed.update(dict.fromkeys(changes.keys))
                self._remember(inner.id, result)
            results.append(result)
        self._offset += len(batch.commands) - 1
        last = first + len(batch.commands) - 1
        return BatchResult(tuple(results)), ChangeSet(last, tuple(changed)) if changed else None

    def _once(self, revision: int, command: Command) -> tuple[Result, ChangeSet | None]:
        """Apply one command at ``revision`` unless its id is known; remember its result."""
        known = self._results.get(command.id)
        if known is not None:
            return known, None
        result, changed = self._apply_new(revision, command)
        self._remember(command.id, result)
        return result, changed

    def _remember(self, command_id: str, result: Result) -> None:
        results = self._results
        results[command_id] = result
        if len(results) > IDEMPOTENCY_WINDOW:
            results.popitem(last=False)

    def _apply_new(self, revision: int, command: Command) -> tuple[Result, ChangeSet | None]:
        if isinstance(command, MemberChange):
            if command.address is None:
                self._members.pop(command.node_id, None)
            else:
                self._members[command.node_id] = command.address
            return Applied(revision), None
        if isinstance(command, Restore):
            return self._restore(revision, command)
        changed: dict[str, None] = {}
        result = self._txn(revision, command, changed)
        return result, ChangeSet(revision, tuple(changed)) if changed else None

    def _txn(self, revision: int, command: Txn, changed: dict[str, None]) -> Result:
        """Apply ``command``, adding the keys it changed to ``changed``."""
        try:
            for op in command.ops:
                validate_key(op.key)
        except InvalidRequestError as exc:
            return Rejected(str(exc))
        data = self._data
        for op in command.ops:
            if op.expect is None:
                continue
            current = data.get(op.key)
            actual = current[1] if current else 0
            if actual != op.expect:
                return Mismatch(op.key, op.expect, actual)
        for op in command.ops:
            key = op.key
            if isinstance(op, Put):
                if key not in data:
                    self._keys.add(key)
                data[key] = (op.value, revision)
                changed[key] = None
            elif isinstance(op, Delete) and key in data:
                del data[key]
                self._keys.discard(key)
                changed[key] = None
        return Applied(revision)

    def _restore(self, revision: int, command: Restore) -> tuple[Result, ChangeSet | None]:
        try:
            for key, _ in command.items:
                validate_key(key)
        except InvalidRequestError as exc:
            return Rejected(str(exc)), None
        # Restored keys take this entry's revision: revisions from another
        # cluster's history could run ahead of ours and go backwards on the
        # next write.
        self._data = {key: (value, revision) for key, value in command.items}
        self._keys = SortedKeys(self._data)
        return Applied(revision), ChangeSet(revision, (), reset=True)

    # -- images (dumps, exports, snapshot installs) ----------------------------

    def capture(self) -> StateImage:
        """A consistent copy; cheap because values are immutable and shared."""
        with self._lock:
            return StateImage(
                self._applied,
                dict(self._data),
                list(self._results.items()),
                dict(self._members),
                self._offset,
            )

    def load(self, image: StateImage) -> None:
        """Replace everything with ``image`` (a dump or an installed snapshot)."""
        results: OrderedDict[str, Result] = OrderedDict(image.results)
        while len(results) > IDEMPOTENCY_WINDOW:
            results.popitem(last=False)
        with self._lock:
            self._data = dict(image.data)
            self._keys = SortedKeys(self._data)
            self._applied = image.applied
            self._results = results
            self._members = dict(image.members)
            self._offset = image.offset
