"""One RaftBackend in a subprocess, driven over stdin/stdout JSON lines.

Started by :mod:`harness.raft_cluster` as ``python -m harness.raft_node
<config-json>``. Each stdin line is ``{"id": n, "op": ..., ...}`` and gets one
stdout line ``{"id": n, "ok": bool, "result"|"error": ...}``; requests are
handled concurrently. Logs go to stderr. A write load runs *inside* the node
(``load_start``/``load_stop``) so it keeps going while the harness kills other
nodes, and it reports exactly which writes were acknowledged.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from consensus import Durability, RaftBackend, RaftConfig
from consensus.pki import node_tls
from consensus.snapshot import decode_snapshot
from sdk.errors import CofferError
from sdk.physical import Put


class Load:
    """``workers`` tasks each writing fresh keys one after another."""

    def __init__(self, backend: RaftBackend, prefix: str, workers: int) -> None:
        self.backend = backend
        self.prefix = prefix
        self.acked: dict[str, int] = {}
        self.errors = 0
        self.timeline: list[tuple[float, float]] = []  # (submitted, acknowledged)
        self.stopping = False
        self.tasks = [asyncio.create_task(self.worker(n)) for n in range(workers)]

    async def worker(self, n: int) -> None:
        i = 0
        while not self.stopping:
            key = f"{self.prefix}/{n}-{i}"
            started = time.monotonic()
            try:
                revision = await self.backend.put(key, key.encode())
            except CofferError:
                self.errors += 1
                await asyncio.sleep(0.01)
            else:
                self.acked[key] = revision
                self.timeline.append((started, time.monotonic()))
            i += 1

    async def stop(self) -> dict[str, Any]:
        self.stopping = True
        await asyncio.gather(*self.tasks)
        return {"acked": self.acked, "errors": self.errors, "timeline": self.timeline}


async def handle(backend: RaftBackend, loads: dict[str, Load], request: dict[str, Any]) -> Any:
    op = request["op"]
    if op == "status":
        return backend.status()
    if op == "put":
        return await backend.put(request["key"], request["value"].encode())
    if op == "get":
        entry = await backend.get(request["key"])
        return None if entry is None else [entry.value.decode(), entry.revision]
    if op == "wait_index":
        await backend.wait_for_index(request["index"], request.get("timeout", 10.0))
        return backend.applied_index()
    if op == "keys":
        image, _ = decode_snapshot((await backend.export_snapshot()).splitlines(keepends=True))
        return {key: rev for key, (_, rev) in image.data.items()}
    if op == "load_start":
        loads[request["prefix"]] = Load(backend, request["prefix"], request.get("workers", 4))
        return None
    if op == "load_stop":
        return await loads.pop(request["prefix"]).stop()
    if op == "fill":  # count keys of size bytes, in transactions of 1000 writes
        count, size = request["count"], request.get("size", 100)
        for start in range(0, count, 1000):
            await backend.commit(
                [
                    Put(f"fill/{n:08d}", os.urandom(size))
                    for n in range(start, min(count, start + 1000))
                ]
            )
        return backend.committed_index()
    if op == "log_start":  # the journal's first index: it moves on at each compaction
        return backend._node._journal.first_index()
    if op == "compact":
        backend.force_compaction()
        return None
    if op == "add_peer":
        await backend.add_peer(request["node_id"], request["address"])
        return [server.address for server in backend.configuration()]
    raise ValueError(f"unknown op {op!r}")


async def serve(config: RaftConfig) -> None:
    backend = await RaftBackend.open(config)
    loads: dict[str, Load] = {}
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
    )

    def reply(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    async def run(request: dict[str, Any]) -> None:
        try:
            reply(
                {"id": request["id"], "ok": True, "result": await handle(backend, loads, request)}
            )
        except Exception as exc:  # noqa: BLE001 (every failure goes back to the harness)
            reply({"id": request["id"], "ok": False, "error": f"{type(exc).__name__}: {exc}"})

    reply({"id": 0, "ok": True, "result": "ready"})
    pending: set[asyncio.Task[None]] = set()
    try:
        while line := await reader.readline():
            request = json.loads(line)
            if request["op"] == "exit":
                break
            task = asyncio.create_task(run(request))
            pending.add(task)
            task.add_done_callback(pending.discard)
    finally:
        for load in loads.values():
            await load.stop()
        await asyncio.gather(*pending, return_exceptions=True)
        await backend.close()
        transport.close()


def main() -> None:
    raw = json.loads(sys.argv[1])
    raw["data_dir"] = Path(raw["data_dir"])
    raw["cluster_secret"] = base64.b64decode(raw["cluster_secret"])
    raw["durability"] = Durability(raw.get("durability", "strict"))
    if raw.pop("tls", False):  # mutual TLS as the driver sets it up
        host = raw["cluster_addr"].rsplit(":", 1)[0]
        raw["tls"] = node_tls(raw["cluster_secret"], raw["node_id"], host)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    asyncio.run(serve(RaftConfig(**raw)))


if __name__ == "__main__":
    main()
