"""Restart to ready, and a snapshot installed on a fresh node, with N secrets stored.

    python -m bench.snapshots --secrets 100000 --out bench/results/snapshots.jsonl
    python -m bench.snapshots --secrets 100000 --revision c8c9084   # before
    python -m bench.snapshots --secrets 100000 --replica-only       # one RaftBackend

``--replica-only`` times the consensus layer alone, in this process: one
``RaftBackend`` gets N keys of 300 random bytes in transactions of 256, is
closed, and is timed from ``RaftBackend.open`` until it leads and has applied
everything again (dump load plus journal replay, nothing else).

Three ``coffer server`` nodes on Raft (``bench.coffer_targets.CofferCluster``)
are loaded with N KV v2 secrets (100-byte values, 64 writes in flight, as
``bench.scale``). Then:

* **restart to ready**: every node is stopped and started on its data, timed
  from spawn until one node is active and two are performance standbys (the
  figure ``docs/performance.md`` recorded as ~25 s for 100,000 secrets when the
  journal was replayed from the start);
* **snapshot install**: a fourth node with an empty data directory joins the
  active node (challenge, unseal) and is timed from its spawn, and from its
  unseal, until its applied index reaches the active node's. The leader has
  compacted long before, so everything arrives as a streamed snapshot.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench.coffer_targets import CofferCluster, CofferNode, ServeFlags, _joined
from bench.scale import _disk_mib, load_secrets
from harness.ports import free_port
from harness.wait import wait_until

__all__ = ["main", "measure"]


def _applied(node: CofferNode) -> int:
    status, body = node.request("GET", "/v1/sys/leader")
    return int(body.get("raft_applied_index", -1)) if status == 200 else -1


def _sizes(path: Path) -> dict[str, float]:
    return {
        name: round(path.joinpath(name).stat().st_size / 2**20, 1)
        for name in ("dump.jsonl", "journal")
        if path.joinpath(name).exists()
    }


def measure(count: int, revision: str = "") -> dict[str, Any]:
    target = CofferCluster(3, ServeFlags(revision=revision))
    record: dict[str, Any] = {"suite": "snapshots", "secrets": count, "code": revision or "tree"}
    with target:
        ep = target.endpoints("active")
        seconds, errors = asyncio.run(load_secrets(ep, count))
        record.update(load_s=round(seconds, 1), load_errors=errors)
        time.sleep(2.0)  # followers catch up, a compaction under way finishes
        record["files_mib_node1"] = _sizes(target.workdir / "node1" / "raft")
        target.restart()
        record["start_to_unsealed_s"] = target.info["start_to_unsealed_s"]
        record["start_to_ready_s"] = target.info["start_to_ready_s"]

        active = target.active
        goal = _applied(active)
        fresh = CofferNode(
            "node4",
            target.workdir,
            "raft",
            free_port(),
            raft_ip="127.0.0.24",
            raft_port=free_port("127.0.0.24"),
            join_to=active.url,
            flags=target.flags,
        )
        began = time.monotonic()
        target.procs.append(fresh.start())
        fresh.wait_listening()
        wait_until(partial(_joined, fresh), 120, "node4 joined")
        fresh.unseal(target.keys)
        unsealed = time.monotonic()
        wait_until(lambda: _applied(fresh) >= goal, 600, "node4 caught up", every=0.05)
        done = time.monotonic()
        record["install_spawn_to_caught_up_s"] = round(done - began, 2)
        record["install_unseal_to_caught_up_s"] = round(done - unsealed, 2)
        record["disk_mib_node4"] = round(_disk_mib(target.workdir / "node4" / "raft"), 1)
        record["installed"] = "installed a snapshot" in _log(target.workdir / "node4.log")
    record["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return record


def measure_replica(count: int, root: Path) -> dict[str, Any]:
    import os
    import shutil

    from consensus.backend import RaftBackend
    from harness.raft import make_config
    from sdk.physical import Put

    async def run() -> dict[str, Any]:
        shutil.rmtree(root, ignore_errors=True)
        config = make_config(root)
        backend = await RaftBackend.open(config)
        await backend.wait_for_leader(10)
        for start in range(0, count, 256):
            keys = range(start, min(count, start + 256))
            await backend.commit([Put(f"secret/data/k{i:06d}", os.urandom(300)) for i in keys])
        goal = backend.applied_index()
        await asyncio.sleep(3.0)  # a dump under way finishes
        await backend.close()
        files = _sizes(root)
        began = time.monotonic()
        backend = await RaftBackend.open(config)
        opened = time.monotonic() - began
        await backend.wait_for_leader(120)
        while backend.applied_index() < goal:
            await asyncio.sleep(0.01)
        ready = time.monotonic() - began
        await backend.close()
        return {"open_s": round(opened, 2), "open_to_applied_s": round(ready, 2), "files": files}

    record = {"suite": "snapshots-replica", "secrets": count, **asyncio.run(run())}
    shutil.rmtree(root, ignore_errors=True)
    return record


def _log(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--secrets", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--revision", default="", help="run the servers of this commit")
    parser.add_argument("--replica-only", action="store_true", help="one RaftBackend, no HTTP")
    args = parser.parse_args()
    if args.replica_only:
        import tempfile

        scratch = Path(tempfile.mkdtemp(prefix="bench-replica-")) / "raft"
        record = measure_replica(args.secrets, scratch)
    else:
        record = measure(args.secrets, args.revision)
    line = json.dumps(record, sort_keys=True)
    print(line, flush=True)
    if args.out is not None:
        with args.out.open("a") as handle:
            handle.write(line + "\n")


if __name__ == "__main__":
    main()
