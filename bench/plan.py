"""The suites: which targets, views, workloads and concurrencies, in which order.

Targets run one after another (only one system is up at a time), baselines first,
so the ratios in the docs come from measurements minutes apart on the same machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.coffer_targets import CofferCluster, CofferSingle, ServeFlags
from bench.etcd_target import EtcdCluster
from bench.targets import CeilingTarget, Target

__all__ = ["SUITES", "Step", "suite"]

ALL_COFFER = (
    "kv2-read",
    "kv2-write",
    "kv1-read",
    "kv1-write",
    "token-create-revoke",
    "userpass-login",
    "mixed-90-10",
)
KV2 = ("kv2-read", "kv2-write", "mixed-90-10")


@dataclass(frozen=True)
class Step:
    """One target; for each (view, workloads) pair every workload at every concurrency."""

    section: str
    make: Callable[[], Target]
    runs: tuple[tuple[str, tuple[str, ...]], ...]
    concurrency: tuple[int, ...] = (1, 32)
    #: A label shown in the docs in place of the target's name.
    label: str = ""


def _standard() -> list[Step]:
    before = ServeFlags(stdlib_json=True)
    after = ServeFlags()
    uv = ServeFlags(uvloop=True)
    return [
        Step("baselines", CeilingTarget, (("node", ("kv2-read", "kv2-write")),)),
        Step(
            "baselines",
            lambda: CeilingTarget(uvloop=True),
            (("node", ("kv2-read", "kv2-write")),),
        ),
        Step("baselines", EtcdCluster, (("leader", KV2), ("followers", ("kv2-read",)))),
        Step("single", lambda: CofferSingle("inmem"), (("node", ALL_COFFER),)),
        Step("single", lambda: CofferSingle("file"), (("node", ALL_COFFER),)),
        Step(
            "cluster",
            lambda: CofferCluster(3, lb=True),
            (
                ("active", ALL_COFFER),
                ("standbys", ("kv2-read", "kv1-read", "mixed-90-10")),
                ("lb", KV2),
            ),
        ),
        Step(
            "perfpass",
            lambda: CofferSingle("inmem", before, "coffer-inmem"),
            (("node", ("kv2-read", "kv2-write")),),
            label=f"before: {before.label}",
        ),
        Step(
            "perfpass",
            lambda: CofferSingle("inmem", after, "coffer-inmem"),
            (("node", ("kv2-read", "kv2-write")),),
            label=f"after: {after.label}",
        ),
        Step(
            "perfpass",
            lambda: CofferSingle("inmem", uv, "coffer-inmem"),
            (("node", ("kv2-read", "kv2-write")),),
            label=f"after + {uv.label} (bench.serve)",
        ),
    ]


def _quick() -> list[Step]:
    return [
        Step("baselines", CeilingTarget, (("node", ("kv2-read",)),)),
        Step("baselines", EtcdCluster, (("leader", ("kv2-read", "kv2-write")),)),
        Step("single", lambda: CofferSingle("inmem"), (("node", ("kv2-read", "kv2-write")),)),
        Step("cluster", lambda: CofferCluster(3), (("active", ("kv2-write",)),)),
    ]


def _nodes() -> list[Step]:
    """Write throughput and latency as the cluster grows: 1, 3 and 5 Raft nodes."""
    return [
        Step("nodes", lambda n=n: CofferCluster(n), (("active", ("kv2-write",)),))
        for n in (1, 3, 5)
    ] + [
        Step("nodes", lambda n=n: EtcdCluster(n), (("leader", ("kv2-write",)),)) for n in (1, 3, 5)
    ]


SUITES: dict[str, Callable[[], list[Step]]] = {
    "standard": _standard,
    "quick": _quick,
    "nodes": _nodes,
}


def suite(name: str) -> list[Step]:
    return SUITES[name]()
