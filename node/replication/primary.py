"""The primary's side of one secondary's connection: resume, or sync, then stream.

Runs on the primary's active node, one task per connected secondary. What a
secondary gets is decided per key by ``classify`` (its kind, its paths
filter); mount and audit tables sent to a performance secondary are
re-encrypted without their local and filtered entries. Nothing here waits on
the primary's writes: the session reads the WAL ring, and a session that
fell behind the ring syncs instead.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from node.logical.response import Response
from node.replication import merkle
from node.replication.classify import (
    AUDIT_TABLE,
    DataClass,
    Kind,
    PathsFilter,
    classify,
    filter_table,
    sends,
)
from node.replication.forwarding import error_to, login_link_from, request_from, response_to
from node.replication.frames import FrameError
from node.replication.live import Live, SecondaryLink, walk
from node.replication.ports import Channel, Link, expect_type
from node.replication.state import Bundle, KindState
from node.replication.wal import Wal
from sdk import jsoncodec
from sdk.errors import CofferError, InvalidRequestError

if TYPE_CHECKING:
    from node.replication.manager import Replication

__all__ = ["serve_link"]

log = logging.getLogger("coffer.replication")

HEARTBEAT = 1.0
_BATCH = 256


async def serve_link(repl: Replication, live: Live, link: Link) -> None:
    channel = Channel(link)
    record: SecondaryLink | None = None
    try:
        hello = await channel.receive_within(10.0)
        expect_type(hello, "hello", "forward", "identity-link", "dynamic-filter")
        kind = Kind(str(hello.get("kind")))
        secondary_id = str(hello.get("secondary_id"))
        if secondary_id != link.peer_id or not repl.allowed(kind, secondary_id):
            await channel.send({"type": "refused", "reason": "unknown or revoked secondary"})
            return
        if hello.get("bootstrap"):
            await _bootstrap(repl, channel, kind, hello)
            return
        if hello["type"] == "forward":
            await _forwarded(repl, channel, hello)
            return
        if hello["type"] == "identity-link":
            await _identity_link(repl, channel, hello)
            return
        if hello["type"] == "dynamic-filter":
            await _dynamic_filter(repl, channel, kind, secondary_id)
            return
        record = SecondaryLink(secondary_id, kind, last_heartbeat=time.time())
        live.links[f"{kind.value}/{secondary_id}"] = record
        await _session(repl, live, channel, record, int(hello.get("last_wal", 0)))
    except (
        ConnectionError,
        FrameError,
        TimeoutError,
        ValueError,
        KeyError,
        TypeError,
        OSError,
    ) as exc:
        log.info(
            "replication link closed",
            extra={"event": "replication.link_closed", "error": type(exc).__name__},
        )
    finally:
        if record is not None and record.connection_status != "revoked":
            record.connection_status = "disconnected"
        with contextlib.suppress(Exception):
            await channel.close()


async def _bootstrap(
    repl: Replication, channel: Channel, kind: Kind, hello: dict[str, Any]
) -> None:
    bundle = Bundle.from_json(hello["bundle"])
    state = KindState(kind, mode="secondary", cluster_id=bundle.cluster_id, bundle=bundle)
    boot = await repl.bootstrap_for(kind, bundle.secondary_id)
    boot["state"] = base64.b64encode(repl.encrypt_state_for(state)).decode()
    await channel.send(boot)


async def _forwarded(repl: Replication, channel: Channel, hello: dict[str, Any]) -> None:
    handler = repl.forwarded_handler
    if handler is None:
        await channel.send(error_to(CofferError("forwarding is not available")))
        return
    try:
        response, index = await handler(request_from(hello["request"]))
    except CofferError as error:
        await channel.send(error_to(error))
        return
    await channel.send(response_to(response, index))


async def _identity_link(repl: Replication, channel: Channel, hello: dict[str, Any]) -> None:
    """A login on a performance secondary: find or create its entity and alias here."""
    handler = repl.identity_link_handler
    if handler is None:
        await channel.send(error_to(CofferError("identity linking is not available")))
        return
    namespace_id, accessor, login = login_link_from(hello.get("link"))
    try:
        entity_id, index = await handler(namespace_id, accessor, login)
    except CofferError as error:
        await channel.send(error_to(error))
        return
    await channel.send(response_to(Response(data={"entity_id": entity_id}), index))


async def _dynamic_filter(
    repl: Replication, channel: Channel, kind: Kind, secondary_id: str
) -> None:
    """What the asking secondary's filter excludes (its id is its certificate's)."""
    try:
        if kind is not Kind.PERFORMANCE:
            raise InvalidRequestError("dynamic filters are for performance secondaries")
        answer: dict[str, Any] = {"type": "dynamic-filter", **repl.dynamic_filter(secondary_id)}
    except CofferError as error:
        answer = error_to(error)
    await channel.send(answer)


async def _session(
    repl: Replication, live: Live, channel: Channel, record: SecondaryLink, position: int
) -> None:
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    reader = asyncio.create_task(_read(channel, record, inbox))
    try:
        while True:
            if reader.done():
                reader.result()  # raises what ended it
                return
            if record.connection_status == "revoked" or not repl.allowed(
                record.kind, record.secondary_id
            ):
                await channel.send({"type": "refused", "reason": "revoked"})
                return
            ring = live.ring
            if record.resync or not ring.can_resume(position):
                record.resync = False
                position = await _sync(repl, live, channel, record, inbox)
                continue
            record.state = "stream-wals"
            wals = ring.after(position, _BATCH)
            if wals:
                await channel.send(
                    {"type": "wals", "wals": [_wal_out(repl, record, w) for w in wals]}
                )
                position = wals[-1].index
            elif not await ring.wait_beyond(position, HEARTBEAT):
                await channel.send({"type": "heartbeat", "index": position})
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


async def _read(
    channel: Channel, record: SecondaryLink, inbox: asyncio.Queue[dict[str, Any]]
) -> None:
    while True:
        message = await channel.receive()
        record.last_heartbeat = time.time()
        if message["type"] == "ack":
            record.acked = max(record.acked, int(message.get("index", 0)))
        else:
            inbox.put_nowait(message)


def _filter_for(repl: Replication, record: SecondaryLink) -> PathsFilter | None:
    if record.kind is not Kind.PERFORMANCE:
        return None
    return repl.states[Kind.PERFORMANCE].filters.get(record.secondary_id)


def _wal_out(repl: Replication, record: SecondaryLink, wal: Wal) -> dict[str, Any]:
    index = repl.mount_index()
    paths_filter = _filter_for(repl, record)
    ops: list[list[Any]] = []
    for key, value in wal.ops:
        verdict = classify(key, index)
        if not sends(verdict, record.kind, paths_filter):
            continue
        if value is not None and verdict.cls is DataClass.TABLE:
            value = _table_out(repl, record, key, value, verdict.route, paths_filter)
        ops.append([key, base64.b64encode(value).decode() if value is not None else None])
    return {"i": wal.index, "ops": ops}


def _table_out(
    repl: Replication,
    record: SecondaryLink,
    key: str,
    value: bytes,
    namespace_path: str,
    paths_filter: PathsFilter | None,
) -> bytes:
    """A performance secondary's view of a mount or audit table (re-encrypted)."""
    if record.kind is Kind.DR:
        return value
    entries = jsoncodec.loads(repl.barrier.decrypt_entry(key, value))
    if key.endswith(AUDIT_TABLE):
        kept = [e for e in entries if not e.get("local")]
    else:
        kept = filter_table(entries, namespace_path, paths_filter)
    return repl.barrier.encrypt_entry(key, jsoncodec.dumps(kept))


async def view_of(
    repl: Replication, kind: Kind, paths_filter: PathsFilter | None
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(hashed keys, tables) a secondary of ``kind`` with ``paths_filter`` may hold."""
    index = repl.mount_index()
    hashed: dict[str, bytes] = {}
    tables: dict[str, bytes] = {}
    for key in await walk(repl.physical, ""):
        verdict = classify(key, index)
        if not sends(verdict, kind, paths_filter):
            continue
        entry = await repl.physical.get(key)
        if entry is None:
            continue
        if verdict.cls is DataClass.TABLE:
            tables[key] = entry.value
        else:
            hashed[key] = entry.value
    return hashed, tables


async def _sync(
    repl: Replication,
    live: Live,
    channel: Channel,
    record: SecondaryLink,
    inbox: asyncio.Queue[dict[str, Any]],
) -> int:
    """Send the tree; send the buckets the secondary asks for; the new position."""
    record.state = "merkle-diff"
    start = live.ring.last
    paths_filter = _filter_for(repl, record)
    hashed, tables = await view_of(repl, record.kind, paths_filter)
    index = repl.mount_index()
    tables_out = {
        key: base64.b64encode(
            _table_out(repl, record, key, value, classify(key, index).route, paths_filter)
        ).decode()
        for key, value in tables.items()
    }
    await channel.send(
        {
            "type": "sync",
            "index": start,
            "buckets": merkle.buckets(hashed),
            "tables": tables_out,
        }
    )
    async with asyncio.timeout(60.0):  # not wait_for: see Channel.receive_within
        need = await inbox.get()
    expect_type(need, "need")
    record.state = "merkle-sync"
    wanted = [int(i) for i in need.get("buckets", [])]
    by_bucket: dict[int, dict[str, str]] = {i: {} for i in wanted}
    for key, value in hashed.items():
        bucket = merkle.bucket_of(key)
        if bucket in by_bucket:
            by_bucket[bucket][key] = base64.b64encode(value).decode()
    for bucket, entries in by_bucket.items():
        await channel.send({"type": "bucket", "i": bucket, "entries": entries})
    await channel.send({"type": "synced", "index": start})
    return start
