"""The secondary's side: one connection to the primary, applying what arrives.

Runs on the secondary's active node. Received ciphertext is written as raw
physical writes into this cluster's own Raft log, in one transaction with the
new WAL position (``core/replication/<kind>/position``), so the standbys get
it, a restart resumes from exactly what was applied, and the writes reach
caches and mounts through ``Core.replicated`` like any applied entry. A
performance secondary never lets the stream touch its own local data
(tokens, local mounts): its keys are classified with its own mounts too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from node.replication import merkle
from node.replication.classify import AUDIT_TABLE, DataClass, Kind, classify, merge_table
from node.replication.frames import FrameError, unb64
from node.replication.live import ClientStatus, walk
from node.replication.ports import Channel, expect_type
from node.replication.state import Bundle, position_key
from sdk import jsoncodec
from sdk.certs import RaftTLS
from sdk.errors import CofferError
from sdk.physical import Delete, Put, TxnOp

if TYPE_CHECKING:
    from node.replication.manager import Replication

__all__ = ["fetch_bootstrap", "run_secondary", "secondary_tls"]

log = logging.getLogger("coffer.replication")

_RETRY = 1.0
_CHUNK = 500


def secondary_tls(bundle: Bundle) -> RaftTLS:
    return RaftTLS(bundle.ca_pem.encode(), bundle.cert_pem.encode(), bundle.key_pem.encode())


async def fetch_bootstrap(repl: Replication, bundle: Bundle) -> dict[str, Any]:
    """The primary's seal keys and this secondary's state, over the replication channel."""
    assert repl.transport is not None
    try:
        link = await repl.transport.dial(bundle.primary_cluster_addr, secondary_tls(bundle), 10.0)
    except (OSError, TimeoutError) as exc:
        raise CofferError(
            f"could not reach the primary's replication address {bundle.primary_cluster_addr}"
        ) from exc
    channel = Channel(link)
    try:
        await channel.send(
            {
                "type": "hello",
                "kind": bundle.kind.value,
                "secondary_id": bundle.secondary_id,
                "bootstrap": True,
                "bundle": bundle.to_json(),
            }
        )
        answer = await channel.receive_within(10.0)
        if expect_type(answer, "bootstrap", "refused") == "refused":
            raise CofferError(f"the primary refused this secondary: {answer.get('reason')}")
        return answer
    finally:
        await channel.close()


async def run_secondary(repl: Replication, kind: Kind, status: ClientStatus) -> None:
    """Keep a connection to the primary for as long as this node is active."""
    while True:
        bundle = repl.states[kind].bundle
        if bundle is None or repl.transport is None:
            return
        try:
            link = await repl.transport.dial(
                bundle.primary_cluster_addr, secondary_tls(bundle), 5.0
            )
        except (OSError, TimeoutError) as exc:
            status.connection_state, status.state = "disconnected", "idle"
            status.error = type(exc).__name__
            await asyncio.sleep(_RETRY)
            continue
        channel = Channel(link)
        try:
            await _session(repl, kind, bundle, channel, status)
        except (ConnectionError, FrameError, TimeoutError, ValueError, OSError, CofferError) as exc:
            log.info(
                "replication connection lost",
                extra={"event": "replication.disconnected", "error": type(exc).__name__},
            )
            status.error = type(exc).__name__
        finally:
            status.connection_state, status.state = "disconnected", "idle"
            with contextlib.suppress(Exception):
                await channel.close()
        await asyncio.sleep(_RETRY)


async def _position(repl: Replication, kind: Kind) -> int:
    entry = await repl.physical.get(position_key(kind))
    try:
        return int(entry.value) if entry is not None else 0
    except ValueError:
        return 0


async def _session(
    repl: Replication, kind: Kind, bundle: Bundle, channel: Channel, status: ClientStatus
) -> None:
    position = await _position(repl, kind)
    status.last_remote_wal = position
    await channel.send(
        {
            "type": "hello",
            "kind": kind.value,
            "secondary_id": bundle.secondary_id,
            "last_wal": position,
        }
    )
    status.connection_state = "ready"
    if position == 0:
        status.state = "bootstrapping"  # nothing applied yet: the first sync comes next
    while True:
        message = await channel.receive_within(30.0)
        status.last_heartbeat = time.time()
        kind_of = expect_type(message, "wals", "heartbeat", "sync", "refused")
        if kind_of == "refused":
            raise CofferError(f"the primary refused this secondary: {message.get('reason')}")
        if kind_of == "heartbeat":
            # The primary sends these only while streaming: a secondary that resumed
            # already caught up is streaming as much as one that just got WALs.
            status.state = "stream-wals"
            await channel.send({"type": "ack", "index": status.last_remote_wal})
        elif kind_of == "wals":
            status.state = "stream-wals"
            await _apply_wals(repl, kind, message, status)
            await channel.send({"type": "ack", "index": status.last_remote_wal})
        else:
            await _sync(repl, kind, channel, message, status)
            await channel.send({"type": "ack", "index": status.last_remote_wal})


def _mine(repl: Replication, kind: Kind, key: str) -> DataClass | None:
    """This secondary's class of its own ``key``: None when the stream may not touch it."""
    verdict = classify(key, repl.mount_index())
    if verdict.cls is DataClass.IGNORED:
        return None
    if kind is Kind.PERFORMANCE and verdict.cls is DataClass.LOCAL:
        return None
    return verdict.cls


async def _incoming_op(repl: Replication, kind: Kind, key: str, raw: Any) -> TxnOp | None:
    if not isinstance(key, str):
        raise FrameError("a key must be a string")
    mine = _mine(repl, kind, key)
    if mine is None:
        return None
    if raw is None:
        return Delete(key)
    value = unb64(raw)
    if kind is Kind.PERFORMANCE and mine is DataClass.TABLE:
        value = await _merge(repl, key, value)
    return Put(key, value)


async def _merge(repl: Replication, key: str, value: bytes) -> bytes:
    """The primary's table with this secondary's own local entries kept."""
    incoming = jsoncodec.loads(repl.barrier.decrypt_entry(key, value))
    current = await repl.barrier.get(key)
    mine = jsoncodec.loads(current.value) if current is not None else []
    if key.endswith(AUDIT_TABLE):
        merged = [*incoming, *(e for e in mine if e.get("local"))]
    else:
        merged = merge_table(incoming, mine)
    return repl.barrier.encrypt_entry(key, jsoncodec.dumps(merged))


async def _apply_wals(
    repl: Replication, kind: Kind, message: dict[str, Any], status: ClientStatus
) -> None:
    wals = message.get("wals")
    if not isinstance(wals, list) or not wals:
        raise FrameError("wals must be a non-empty list")
    ops: list[TxnOp] = []
    last = status.last_remote_wal
    for wal in wals:
        index = int(wal["i"])
        if index <= last:
            continue
        for key, raw in wal["ops"]:
            op = await _incoming_op(repl, kind, key, raw)
            if op is not None:
                ops.append(op)
        last = index
    if last == status.last_remote_wal:
        return
    ops.append(Put(position_key(kind), str(last).encode()))
    await repl.physical.commit(ops)
    status.last_remote_wal = last


async def my_view(repl: Replication, kind: Kind) -> dict[str, bytes]:
    """This secondary's keys that a sync compares (its replicated ones, no tables)."""
    out: dict[str, bytes] = {}
    for key in await walk(repl.physical, ""):
        mine = _mine(repl, kind, key)
        if mine is None or mine is DataClass.TABLE:
            continue
        entry = await repl.physical.get(key)
        if entry is not None:
            out[key] = entry.value
    return out


async def _commit_chunks(repl: Replication, ops: list[TxnOp]) -> None:
    for start in range(0, len(ops), _CHUNK):
        await repl.physical.commit(ops[start : start + _CHUNK])


async def _sync(
    repl: Replication,
    kind: Kind,
    channel: Channel,
    message: dict[str, Any],
    status: ClientStatus,
) -> None:
    status.state = "merkle-diff"
    resumed_from = status.last_remote_wal
    target = int(message["index"])
    tables = message.get("tables") or {}
    table_ops = [op for k, v in tables.items() if (op := await _incoming_op(repl, kind, k, v))]
    await _commit_chunks(repl, table_ops)
    mine = await my_view(repl, kind)
    theirs_hashes = message.get("buckets")
    if not isinstance(theirs_hashes, list):
        raise FrameError("buckets must be a list")
    wanted = merkle.differing(merkle.buckets(mine), [str(h) for h in theirs_hashes])
    await channel.send({"type": "need", "buckets": wanted})
    status.state = "merkle-sync"
    status.sync_total_keys, status.sync_progress = len(wanted), 0
    while True:
        frame = await channel.receive_within(60.0)
        if expect_type(frame, "bucket", "synced") == "synced":
            break
        bucket = int(frame["i"])
        theirs = {str(k): unb64(v) for k, v in (frame.get("entries") or {}).items()}
        own = {k: v for k, v in mine.items() if merkle.bucket_of(k) == bucket}
        puts, deletes = merkle.plan(theirs, own)
        ops: list[TxnOp] = [Put(k, v) for k, v in puts.items() if _mine(repl, kind, k)]
        ops += [Delete(k) for k in deletes]
        await _commit_chunks(repl, ops)
        status.sync_progress += 1
    await repl.physical.commit([Put(position_key(kind), str(target).encode())])
    status.last_remote_wal = target
    status.merkle_root = merkle.root(merkle.buckets(await my_view(repl, kind)))
    status.state = "stream-wals"
    log.info(
        "synced with the primary (merkle-diff, merkle-sync), streaming from here",
        extra={
            "event": "replication.synced",
            "kind": kind.value,
            "from_wal": resumed_from,
            "to_wal": target,
            "buckets": len(wanted),
        },
    )
