"""Secrets at rest: RSS per node and start-up-to-unsealed time with N secrets stored.

For each storage (one node on ``inmem``; one on ``file``, up to 10,000; three
nodes on Raft) and each N: a fresh target is loaded with N KV v2 secrets
(100-byte values, 64 writes in flight), its RSS read, then every process is
stopped and started again on the same data (not ``inmem``, which keeps nothing)
and timed until unsealed and serving, and its RSS read again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench.coffer_targets import CofferCluster, CofferSingle
from bench.loadgen import HTTPStatusError, expect
from bench.process_stats import rss_kib
from bench.targets import Endpoints, Target
from bench.workloads import _values

__all__ = ["load_secrets", "run_scale"]


async def load_secrets(ep: Endpoints, count: int, in_flight: int = 64) -> tuple[float, int]:
    """Write ``count`` distinct secrets; (seconds taken, errors)."""
    values = [json.dumps({"data": {"value": v}}).encode() for v in _values()]
    headers = {"X-Vault-Token": ep.token, "Content-Type": "application/json"}
    errors = 0
    next_index = 0
    began = time.monotonic()
    connector = aiohttp.TCPConnector(limit=in_flight)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def writer() -> None:
            nonlocal errors, next_index
            while next_index < count:
                index = next_index
                next_index += 1
                url = f"{ep.write}/v1/secret/data/scale/k{index:06d}"
                for _attempt in range(3):
                    try:
                        async with session.put(
                            url, data=values[index % len(values)], headers=headers
                        ) as response:
                            await expect(response, 200, 204)
                        break
                    except (aiohttp.ClientError, TimeoutError, OSError, HTTPStatusError):
                        errors += 1
                        await asyncio.sleep(0.1)

        await asyncio.gather(*(writer() for _ in range(in_flight)))
    return time.monotonic() - began, errors


def _rss_mib(target: Target) -> list[float]:
    return [round(rss_kib(pid) / 1024, 1) for pid in target.pids()]


def _disk_mib(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=False)
    try:
        return int(out.stdout.split()[0]) / 1024
    except (IndexError, ValueError):
        return 0.0


def _data_dirs(target: CofferSingle | CofferCluster) -> list[Path]:
    """Where the storage keeps its data (not the logs beside it); none for inmem."""
    nodes = target.nodes if isinstance(target, CofferCluster) else [target.node]
    found = []
    for node in nodes:
        for name in ("data", "raft"):
            path = node.base / node.name / name
            if path.exists():
                found.append(path)
    return found


def _measure(
    make: Callable[[], CofferSingle | CofferCluster], count: int, restartable: bool
) -> dict[str, Any]:
    target = make()
    with target:
        ep = target.endpoints("active" if isinstance(target, CofferCluster) else "node")
        seconds, errors = asyncio.run(load_secrets(ep, count))
        record: dict[str, Any] = {
            "section": "secrets",
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "target": target.name,
            "secrets": count,
            "load_writes_per_s": count / seconds,
            "load_errors": errors,
            "rss_after_load_mib": _rss_mib(target),
            "disk_mib": sum(_disk_mib(path) for path in _data_dirs(target)),
        }
        if restartable:
            time.sleep(2.0)  # let followers catch up and the journal settle
            target.restart()
            record["start_to_unsealed_s"] = target.info.get("start_to_unsealed_s")
            record["start_to_ready_s"] = target.info.get(
                "start_to_ready_s", target.info.get("start_to_unsealed_s")
            )
        else:
            record["start_to_unsealed_s"] = None
            record["start_to_ready_s"] = None
        record["rss_after_start_mib"] = _rss_mib(target)
    return record


def run_scale(args: argparse.Namespace, out: Path | None) -> list[dict[str, Any]]:
    counts = [int(c) for c in str(args.secrets).split(",") if c]
    records = []
    # (target, restartable, most secrets): the file backend fsyncs every write
    # (~150/s here), so 100,000 would take over ten minutes; it stops at 10,000.
    plans: list[tuple[Callable[[], CofferSingle | CofferCluster], bool, int]] = [
        (lambda: CofferSingle("inmem"), False, 10**9),
        (lambda: CofferSingle("file"), True, 10_000),
        (lambda: CofferCluster(3), True, 10**9),
    ]
    for make, restartable, most in plans:
        for count in (c for c in counts if c <= most):
            print(f"# secrets: {count}", file=sys.stderr, flush=True)
            record = {"suite": "scale", **_measure(make, count, restartable)}
            line = json.dumps(record, sort_keys=True)
            print(line, flush=True)
            if out is not None:
                with out.open("a") as handle:
                    handle.write(line + "\n")
            records.append(record)
    return records
