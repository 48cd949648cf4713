"""Wall time per KV v2 request through ``Core.handle`` alone, in this process.

    python -m bench.core_cost                    # writes and reads, this interpreter
    /other/venv/bin/python -m bench.core_cost    # the same code on another interpreter

No HTTP, no Raft: the pipeline, the KV v2 engine, the barrier (AES-GCM) and
``inmem`` storage, as ``server -dev`` has them, with 16 requests in flight on
uvloop. Best of five rounds of 4,000, so a busy neighbour inflates a round
rather than the figure. It isolates the per-request Python that the
interpreter's build decides (docs/performance.md, "Tenth pass") and that the
whole-server figures bury under HTTP and the machine's noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import sys
import time

from node.core.core import Core
from node.logical.request import Operation, Request
from node.physical.inmem import InmemBackend

__all__ = ["main"]

KEYS = 1000
VALUE = "x" * 100
IN_FLIGHT = 16


async def _measure(rounds: int, per_round: int) -> dict[str, float]:
    core = Core(InmemBackend())
    token = (await core.dev_bootstrap()).root_token
    body = {"data": {"value": VALUE}}
    for i in range(KEYS):
        await core.handle(
            Request(Operation.UPDATE, f"secret/data/k{i}", data=body, client_token=token)
        )

    def request(operation: Operation) -> Request:
        path = f"secret/data/k{random.randrange(KEYS)}"
        data = body if operation is Operation.UPDATE else {}
        return Request(operation, path, data=data, client_token=token, id="bench")

    async def worker(operation: Operation, count: int) -> None:
        for _ in range(count):
            await core.handle(request(operation))

    figures = {}
    for name, operation in (("write_us", Operation.UPDATE), ("read_us", Operation.READ)):
        best = float("inf")
        for _ in range(rounds):
            began = time.perf_counter()
            share = per_round // IN_FLIGHT
            await asyncio.gather(*(worker(operation, share) for _ in range(IN_FLIGHT)))
            best = min(best, (time.perf_counter() - began) / (share * IN_FLIGHT))
        figures[name] = round(best * 1e6, 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.core_cost")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=4000)
    args = parser.parse_args(argv)
    import uvloop

    figures = uvloop.run(_measure(args.rounds, args.per_round))
    print(
        json.dumps(
            {"python": platform.python_version(), "prefix": sys.base_prefix, **figures},
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
