"""The replicated key-value state, free of any Raft machinery.

Every replica feeds the same commands at the same log indexes through
:meth:`KVState.apply`, so everything here must be deterministic: the revision
of a write is the log index of its entry (monotonic, never reused), and the
idempotency window is a fixed count of command ids, not a clock.

Reads come from the event loop while the Raft thread applies, so the data and
its sorted key list change together under one lock.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass

from consensus.commands import (
    Applied,
    Command,
    MemberChange,
    Mismatch,
    Rejected,
    Restore,
    Result,
    Txn,
)
from node.errors import InvalidRequestError
from node.physical.base import Check, Delete, Put, children_of, validate_key

__all__ = ["IDEMPOTENCY_WINDOW", "ChangeSet", "KVState", "StateImage"]

#: Command ids remembered for retries. Part of the replicated semantics, so a
#: constant of the format rather than a per-node setting.
IDEMPOTENCY_WINDOW = 50_000


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Keys changed by the entry at ``index``; ``reset`` means "all keys"."""

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


class KVState:
    """key -> (ciphertext, revision), the applied index and the id window."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, tuple[bytes, int]] = {}
        self._keys: list[str] = []
        self._applied = 0
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._members: dict[str, str] = {}

    # -- reads (any thread) ------------------------------------------------

    @property
    def applied_index(self) -> int:
        return self._applied

    def get(self, key: str) -> tuple[bytes, int] | None:
        with self._lock:
            return self._data.get(key)

    def list(self, prefix: str) -> list[str]:
        with self._lock:
            start = bisect.bisect_left(self._keys, prefix)
            matched = []
            for key in self._keys[start:]:
                if not key.startswith(prefix):
                    break
                matched.append(key)
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

    def apply(self, index: int, command: Command | Rejected) -> tuple[Result, ChangeSet | None]:
        """Apply the entry at ``index``; a replayed index or a known id is a no-op."""
        with self._lock:
            if index <= self._applied:
                # Never apply an index twice, whatever the library replays.
                known = self._results.get(command.id) if not isinstance(command, Rejected) else None
                return known or Rejected(f"index {index} already applied"), None
            self._applied = index
            if isinstance(command, Rejected):
                return command, None
            known = self._results.get(command.id)
            if known is not None:
                return known, None
            result, changes = self._apply_new(index, command)
            self._results[command.id] = result
            while len(self._results) > IDEMPOTENCY_WINDOW:
                self._results.popitem(last=False)
            return result, changes

    def _apply_new(self, index: int, command: Command) -> tuple[Result, ChangeSet | None]:
        if isinstance(command, MemberChange):
            if command.address is None:
                self._members.pop(command.node_id, None)
            else:
                self._members[command.node_id] = command.address
            return Applied(index), None
        if isinstance(command, Restore):
            return self._restore(index, command)
        return self._txn(index, command)

    def _txn(self, index: int, command: Txn) -> tuple[Result, ChangeSet | None]:
        try:
            for op in command.ops:
                validate_key(op.key)
        except InvalidRequestError as exc:
            return Rejected(str(exc)), None
        for op in command.ops:
            if op.expect is None:
                continue
            current = self._data.get(op.key)
            actual = current[1] if current else 0
            if actual != op.expect:
                return Mismatch(op.key, op.expect, actual), None
        changed: list[str] = []
        for op in command.ops:
            if isinstance(op, Put):
                if op.key not in self._data:
                    bisect.insort(self._keys, op.key)
                self._data[op.key] = (op.value, index)
                changed.append(op.key)
            elif isinstance(op, Delete) and op.key in self._data:
                del self._data[op.key]
                self._keys.pop(bisect.bisect_left(self._keys, op.key))
                changed.append(op.key)
            elif isinstance(op, Check):
                continue
        return Applied(index), ChangeSet(index, tuple(dict.fromkeys(changed))) if changed else None

    def _restore(self, index: int, command: Restore) -> tuple[Result, ChangeSet | None]:
        try:
            for key, _ in command.items:
                validate_key(key)
        except InvalidRequestError as exc:
            return Rejected(str(exc)), None
        # Restored keys take this entry's index as their revision: revisions
        # from another cluster's history could run ahead of our log and go
        # backwards on the next write.
        self._data = {key: (value, index) for key, value in command.items}
        self._keys = sorted(self._data)
        return Applied(index), ChangeSet(index, (), reset=True)

    # -- images (dumps, exports, snapshot installs) ----------------------------

    def capture(self) -> StateImage:
        """A consistent copy; cheap because values are immutable and shared."""
        with self._lock:
            return StateImage(
                self._applied, dict(self._data), list(self._results.items()), dict(self._members)
            )

    def load(self, image: StateImage) -> None:
        """Replace everything with ``image`` (a dump or an installed snapshot)."""
        results: OrderedDict[str, Result] = OrderedDict(image.results)
        while len(results) > IDEMPOTENCY_WINDOW:
            results.popitem(last=False)
        with self._lock:
            self._data = dict(image.data)
            self._keys = sorted(self._data)
            self._applied = image.applied
            self._results = results
            self._members = dict(image.members)
