"""Profiles under KV v2 load at concurrency 32: one node (inmem), and the active node of three.

Two profilers, each around the measured window only (start-up and seeding are
not sampled):

- py-spy samples the server from outside at 250 Hz (no overhead inside the
  process, so the proportions are the real ones); its stacks give the tables.
  On a cluster it samples the active node, every thread (event loop and Raft).
- pyinstrument runs inside the server (``bench.serve --profile``, started and
  stopped by SIGUSR1/SIGUSR2) and writes a call tree with inclusive times; it
  slows Python code several-fold, so only its shape is used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.coffer_targets import CofferCluster, CofferSingle, ServeFlags
from bench.loadgen import LoadResult, run_load
from bench.profiling import summarise_collapsed
from bench.quiet import wait_for_quiet
from bench.targets import Target
from bench.workloads import workload
from harness.wait import wait_until

__all__ = ["py_spy_profile", "pyinstrument_tree", "run_profiles"]

RATE = 250


def _py_spy() -> str:
    found = Path(sys.executable).with_name("py-spy")
    return str(found) if found.exists() else (shutil.which("py-spy") or "py-spy")


async def _prepare(target: Target, view: str, name: str, concurrency: int) -> Any:
    ep = target.endpoints(view)
    load = workload("coffer", name)
    await load.setup(ep)
    op = load.make_op(ep)
    await run_load(op, concurrency=concurrency, seconds=1.0, warmup=0.0)  # warm caches
    return op


def _server_pid(target: Target) -> int:
    if isinstance(target, CofferCluster):
        assert target.active.proc is not None
        return target.active.proc.pid
    return target.pids()[0]


def py_spy_profile(
    make: Callable[[], Target],
    view: str,
    name: str,
    concurrency: int,
    seconds: float,
    gil: bool = False,
) -> tuple[LoadResult, dict[str, Any]]:
    """py-spy on the serving process (the active node of a cluster), every thread;
    with ``gil``, only the thread holding the GIL (what a process bound by its
    GIL spends it on: samples in system calls that release it are left out)."""
    with make() as target:
        op = asyncio.run(_prepare(target, view, name, concurrency))
        pid = _server_pid(target)
        asyncio.run(wait_for_quiet(target.pids(), 25.0, 60.0))
        raw = target.workdir / f"py-spy-{name}.txt"
        argv = [_py_spy(), "record", "-p", str(pid), "-r", str(RATE), "-f", "raw"]
        argv += ["-d", str(int(seconds)), "-o", str(raw)] + (["--gil"] if gil else [])
        spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        result = asyncio.run(
            run_load(
                op, concurrency=concurrency, seconds=seconds - 0.5, warmup=0.0, pids=target.pids()
            )
        )
        spy.wait(60)
        with raw.open() as lines:
            return result, summarise_collapsed(lines, RATE)


def pyinstrument_tree(name: str, concurrency: int, seconds: float) -> str:
    target = CofferSingle("inmem")
    out = target.workdir / f"pyinstrument-{name}.json"
    target.flags = target.node.flags = ServeFlags(profile=str(out))
    with target:
        op = asyncio.run(_prepare(target, "node", name, concurrency))
        pid = target.pids()[0]
        os.kill(pid, signal.SIGUSR1)
        asyncio.run(run_load(op, concurrency=concurrency, seconds=seconds, warmup=0.0))
        os.kill(pid, signal.SIGUSR2)
        wait_until(lambda: out.exists() and out.stat().st_size > 0, 60, "profile written")
        return out.with_suffix(".txt").read_text()


#: (where, target, view, workload, GIL holder only)
_PLAN: list[tuple[str, Callable[[], Target], str, str, bool]] = [
    ("one node, inmem", lambda: CofferSingle("inmem"), "node", "kv2-read", False),
    ("one node, inmem", lambda: CofferSingle("inmem"), "node", "kv2-write", False),
    ("3 nodes, active node", lambda: CofferCluster(3), "active", "kv2-write", False),
    ("one node, inmem, GIL holder", lambda: CofferSingle("inmem"), "node", "kv2-write", True),
    ("3 nodes, active node, GIL holder", lambda: CofferCluster(3), "active", "kv2-write", True),
]


def run_profiles(args: argparse.Namespace, out: Path | None) -> list[dict[str, Any]]:
    records = []
    seconds = max(args.seconds, 3.0)
    for where, make, view, name, gil in _PLAN:
        result, summary = py_spy_profile(make, view, name, 32, seconds, gil)
        record = {
            "suite": "profile",
            "section": "profile",
            "where": where,
            "gil": gil,
            "workload": name,
            "workload_label": workload("coffer", name).label,
            "summary": summary,
            **result.to_json(),
        }
        if view == "node" and not gil:
            tree = pyinstrument_tree(name, 32, seconds)
            if out is not None:
                out.with_name(f"pyinstrument-{name}.txt").write_text(tree)
        if out is not None:
            with out.open("a") as handle:
                handle.write(json.dumps(record, sort_keys=True) + "\n")
        print(json.dumps(summary["areas"][:8]), flush=True)
        records.append(record)
    return records
