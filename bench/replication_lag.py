"""Replication lag: primary commit to secondary apply, at a fixed write rate.

Starts a primary and a DR secondary (one-node Raft clusters through
``harness.cluster``), writes KV v2 secrets on the primary at ``--rate`` per
second (open loop: a write is started every 1/rate s, at most ``--inflight``
at once) for ``--seconds``, and polls both clusters' replication status every
``--every`` s: ``last_wal`` on the primary, ``last_remote_wal`` on the
secondary. The lag of a primary sample (t, w) is the time of the first
secondary sample whose position reached w, minus t, so it includes up to one
polling interval. Prints a JSON summary.

    python -m bench.replication_lag --rate 1000 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from harness.cluster import Cluster
from harness.ports import free_port
from harness.wait import wait_until


def _start(base: Path) -> Cluster:
    site = Cluster(base, 1)
    site.bootstrap(shares=1, threshold=1)
    return site


def _pair(base: Path) -> tuple[Cluster, Cluster]:
    primary, secondary = _start(base / "p"), _start(base / "s")
    node = primary.nodes[0]
    token = primary.root_token
    body = {"primary_cluster_addr": f"127.0.0.1:{free_port()}"}
    assert (
        node.request("POST", "/v1/sys/replication/dr/primary/enable", body, token=token).status
        == 200
    )
    reply = node.request(
        "POST", "/v1/sys/replication/dr/primary/secondary-token", {"id": "b"}, token=token
    )
    activation = reply.json["wrap_info"]["token"]
    s = secondary.nodes[0]
    reply = s.request(
        "POST",
        "/v1/sys/replication/dr/secondary/enable",
        {"token": activation},
        token=secondary.root_token,
    )
    assert reply.status == 200, reply.body
    # enable seals the secondary; an unseal sent now waits for that seal to finish
    secondary.keys, secondary.threshold = primary.keys, primary.threshold
    secondary.unseal(s)

    def streaming() -> bool:
        status = s.request("GET", "/v1/sys/replication/dr/status").json["data"]
        return bool(status["state"] == "stream-wals")

    wait_until(streaming, 60, "the secondary to stream")
    return primary, secondary


async def _run(primary: Cluster, secondary: Cluster, args: argparse.Namespace) -> dict[str, Any]:
    p_url = primary.nodes[0].api_addr
    s_url = secondary.nodes[0].api_addr
    headers = {"X-Vault-Token": primary.root_token}
    p_samples: list[tuple[float, int]] = []
    s_samples: list[tuple[float, int]] = []
    done = asyncio.Event()
    acked = errors = 0
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=args.inflight)
    ) as session:

        async def poll() -> None:
            while not done.is_set():
                async with session.get(f"{p_url}/v1/sys/replication/dr/status?merkle=false") as r:
                    p_samples.append((time.monotonic(), (await r.json())["data"]["last_wal"]))
                async with session.get(f"{s_url}/v1/sys/replication/dr/status?merkle=false") as r:
                    s_samples.append(
                        (time.monotonic(), (await r.json())["data"]["last_remote_wal"])
                    )
                await asyncio.sleep(args.every)

        async def write(n: int) -> None:
            nonlocal acked, errors
            url = f"{p_url}/v1/secret/data/lag/{n % 1000}"
            try:
                async with session.post(url, json={"data": {"n": n}}, headers=headers) as r:
                    await r.read()
                    if r.status == 200:
                        acked += 1
                    else:
                        errors += 1
            except aiohttp.ClientError:
                errors += 1

        poller = asyncio.create_task(poll())
        slots = asyncio.Semaphore(args.inflight)
        tasks: set[asyncio.Task[None]] = set()
        start = time.monotonic()
        n = 0
        while (now := time.monotonic()) - start < args.seconds:
            due = start + n / args.rate
            if due > now:
                await asyncio.sleep(due - now)
            await slots.acquire()
            task = asyncio.create_task(write(n))
            task.add_done_callback(lambda _t: slots.release())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            n += 1
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - start
        await asyncio.sleep(3 * args.every + 1.0)  # let the secondary's last samples arrive
        done.set()
        await poller
    lags = []
    for t, wal in p_samples:
        reached = next((ts for ts, remote in s_samples if ts >= t and remote >= wal), None)
        if reached is not None:
            lags.append(reached - t)
    lags.sort()
    return {
        "target_rate": args.rate,
        "achieved_rate": round(acked / elapsed, 1),
        "errors": errors,
        "samples": len(lags),
        "poll_interval_s": args.every,
        "lag_ms_p50": round(1000 * statistics.median(lags), 1) if lags else None,
        "lag_ms_p99": round(1000 * lags[int(0.99 * (len(lags) - 1))], 1) if lags else None,
        "lag_ms_max": round(1000 * lags[-1], 1) if lags else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--every", type=float, default=0.02)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coffer-repl-lag-") as base:
        primary, secondary = _pair(Path(base))
        try:
            print(json.dumps(asyncio.run(_run(primary, secondary, args)), indent=2))
        finally:
            primary.close()
            secondary.close()


if __name__ == "__main__":
    main()
