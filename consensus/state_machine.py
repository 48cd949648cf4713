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
from collections.abc import Callable
from typing import Any

from consensus._vendor.pysyncobj import SyncObj, SyncObjConf
from consensus.commands import (
    Batch,
    Command,
    CommandError,
    Rejected,
    decode_command,
    encode_result,
)
from consensus.state import ChangeSet, KVState

__all__ = ["Listener", "ReplicatedStore"]

log = logging.getLogger(__name__)

Listener = Callable[[ChangeSet], None]


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

    def submit(self, blob: bytes, callback: Callable[[Any, int], None]) -> None:
        """Replicate ``blob`` as one log entry; ``callback(result, FAIL_REASON)``."""
        self.submitCommand(blob, callback)

    def applyCommandPayload(self, payload: bytes) -> bytes:
        return self.apply(payload)

    def apply(self, blob: bytes) -> bytes:
        index = self.raftLastApplied + 1
        command: Command | Batch | Rejected
        try:
            command = decode_command(blob)
        except (CommandError, TypeError) as exc:
            command = Rejected(str(exc))
        result, changes = self._kv.apply(index, command)
        if changes is not None:
            self.notify(changes)
        return encode_result(result)
