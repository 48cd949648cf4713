"""The pysyncobj replica: every regular log entry is ``apply(blob: bytes)``.

Everything replicated goes through :meth:`ReplicatedStore.apply` as an
explicitly encoded :mod:`consensus.commands` blob (one command, or a batch
of transactions that share the entry). The vendored engine stores it as its
one-byte entry type followed by the blob itself (upstream pickled a method id
and arguments around it), and hands it back through ``applyCommandPayload``.

``apply`` runs on the Raft thread, in log order, on every node. A write's
revision derives from the index of the entry being applied (plus the state's
revision offset, see :mod:`consensus.state`); the library does not pass the
index in, but it is always ``raftLastApplied + 1`` at that moment (it
increments after the call). Listeners are called on the Raft thread and
must only hand work off (a queue, ``loop.call_soon_threadsafe``): apply never
touches an event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from consensus._vendor.pysyncobj import SyncObj, SyncObjConf
from consensus.commands import (
    Batch,
    Command,
    CommandError,
    EntryResult,
    Rejected,
    decode_command,
)
from consensus.state import ChangeSet, KVState

__all__ = ["Listener", "ReplicatedStore"]

log = logging.getLogger(__name__)

Listener = Callable[[ChangeSet], None]

#: Own commands kept for :meth:`ReplicatedStore.apply` (entries in flight on this
#: node; one that never commits is dropped when this many newer ones came).
_PROPOSED_MAX = 16
#: Bigger entries (restores) are decoded again rather than held.
_PROPOSED_MAX_BYTES = 1024 * 1024


class ReplicatedStore(SyncObj):  # type: ignore[misc]  # pysyncobj is untyped
    def __init__(
        self,
        self_address: str | None,
        peer_addresses: list[str],
        conf: SyncObjConf,
        state: KVState,
        transport_class: Callable[..., Any],
    ) -> None:
        self._kv = state
        self._listeners: list[Listener] = []
        self._proposed: dict[bytes, Command | Batch] = {}
        self._proposed_lock = threading.Lock()
        super().__init__(self_address, peer_addresses, conf, transportClass=transport_class)

    @property
    def kv(self) -> KVState:
        return self._kv

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def notify(self, changes: ChangeSet) -> None:
        """Tell listeners about ``changes`` (on the Raft thread)."""
        for listener in self._listeners:
            try:
                listener(changes)
            except Exception:
                log.exception("a change listener failed")

    def submit(
        self,
        blob: bytes,
        callback: Callable[[Any, int], None],
        decoded: Command | Batch | None = None,
    ) -> None:
        """Replicate ``blob`` as one log entry; ``callback(result, FAIL_REASON)``.

        ``decoded`` is what ``decode_command(blob)`` gives (the caller built
        ``blob`` from it, :func:`consensus.commands.is_canonical`): when the
        entry is applied here it is used instead of decoding the bytes again.
        Any entry with the same bytes decodes to the same command, so which
        submission the entry came from does not matter.
        """
        if decoded is not None and len(blob) <= _PROPOSED_MAX_BYTES:
            with self._proposed_lock:
                self._proposed[blob] = decoded
                while len(self._proposed) > _PROPOSED_MAX:
                    del self._proposed[next(iter(self._proposed))]
        self.submitCommand(blob, callback)

    def applyCommandPayload(self, payload: bytes) -> EntryResult:
        return self.apply(payload)

    def apply(self, blob: bytes) -> EntryResult:
        index = self.raftLastApplied + 1
        command: Command | Batch | Rejected | None = None
        if self._proposed:
            with self._proposed_lock:
                command = self._proposed.pop(blob, None)
        if command is None:
            try:
                command = decode_command(blob)
            except (CommandError, TypeError) as exc:
                command = Rejected(str(exc))
        result, changes = self._kv.apply(index, command)
        if changes is not None:
            self.notify(changes)
        # Handed to this node's own callback only (a follower's forwarded command
        # is answered by its own replica's apply), so never encoded.
        return result
