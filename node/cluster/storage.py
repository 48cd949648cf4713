"""The physical backend a Raft node's core sees, whatever state the replica is in.

* **Replica running** (unsealed): every call goes to it.
* **Sealed, data on disk**: reads come from the node's own files
  (``RaftDriver.read_local``), so ``sys/seal-status`` and unseal find the seal
  config and the encrypted root key without networking; writes are refused.
* **Joining**: the seal config and encrypted root key the leader handed out
  are layered over the (empty) local view until the replica has caught up.
* **Initialising**: ``sys/init`` needs the new root key before the replica
  can start (its secret derives from that key), so init's writes are staged
  in memory and committed as one transaction once the replica is bootstrapped.
"""

from __future__ import annotations

from collections.abc import Sequence

from node.cluster.ports import LocalView, RaftDriver, Replica
from node.physical.inmem import InmemBackend
from sdk.errors import SealedError
from sdk.physical import Delete, Entry, Put, TxnOp, children_of, validate_key

__all__ = ["RaftStorage"]


class RaftStorage:
    """``PhysicalBackend`` over the replica, the local files or a staging area."""

    def __init__(self, driver: RaftDriver) -> None:
        self.driver = driver
        self.replica: Replica | None = None
        self._local: LocalView | None = None
        self._overlay: dict[str, bytes] = {}
        self._staging: InmemBackend | None = None
        self._staged_keys: set[str] = set()

    # -- modes -------------------------------------------------------------------

    def attach(self, replica: Replica) -> None:
        self.replica = replica
        self._local = None
        self._overlay.clear()

    async def detach(self) -> None:
        """Stop the replica; later reads come from the files it left."""
        replica, self.replica = self.replica, None
        self._local = None
        if replica is not None:
            await replica.close()

    def set_overlay(self, values: dict[str, bytes]) -> None:
        self._overlay = dict(values)

    def begin_staging(self) -> None:
        self._staging = InmemBackend()
        self._staged_keys = set()

    def abort_staging(self) -> None:
        self._staging = None
        self._staged_keys = set()

    async def flush_staging(self) -> None:
        """Commit everything staged through the (now attached) replica."""
        staging, self._staging = self._staging, None
        assert staging is not None and self.replica is not None
        ops: list[TxnOp] = []
        for key in sorted(self._staged_keys):
            entry = await staging.get(key)
            if entry is not None:
                ops.append(Put(key, entry.value, expect=0))
        self._staged_keys = set()
        if ops:
            await self.replica.commit(ops)

    # -- PhysicalBackend -----------------------------------------------------------

    async def get(self, key: str) -> Entry | None:
        if self.replica is not None:
            return await self.replica.get(key)  # which checks the key itself
        validate_key(key)
        if self._staging is not None:
            return await self._staging.get(key)
        if key in self._overlay:
            return Entry(key, self._overlay[key], 1)
        found = (await self._local_view()).get(key)
        return Entry(key, found[0], found[1]) if found else None

    async def list(self, prefix: str) -> list[str]:
        if self.replica is not None:
            return await self.replica.list(prefix)
        if self._staging is not None:
            return await self._staging.list(prefix)
        local = (await self._local_view()).list(prefix)
        extra = [key for key in self._overlay if key.startswith(prefix)]
        return sorted(set(local) | set(children_of(prefix, extra)))

    async def put(self, key: str, value: bytes) -> int:
        return await self.commit([Put(key, value)])

    async def delete(self, key: str) -> None:
        await self.commit([Delete(key)])

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        if self.replica is not None:
            return await self.replica.commit(ops)
        if self._staging is not None:
            revision = await self._staging.commit(ops)
            self._staged_keys.update(op.key for op in ops)
            return revision
        raise SealedError()

    async def close(self) -> None:
        await self.detach()

    async def _local_view(self) -> LocalView:
        if self._local is None:
            self._local = await self.driver.read_local()
        return self._local
