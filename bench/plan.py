"""The suites: which targets, views, workloads and concurrencies, in which order.

Targets run one after another (only one system is up at a time), baselines first,
so the ratios in the docs come from measurements minutes apart on the same machine.
Issue 16's ratio goals are also measured as alternated pairs, each side right after
the other (``goals``, in the standard suite and on its own): the goals table gives
their median.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from bench.coffer_targets import CofferCluster, CofferSingle, ServeFlags
from bench.etcd_target import EtcdCluster
from bench.loop_ab import abba
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


#: The last commit before the second performance pass (caches, commit batching,
#: request log at debug); "before" rows run the server exported from it.
BEFORE_PASS = "e04d5b8"
#: The end of the second pass, before the third (C parser with extension methods,
#: one edge middleware, orjson for stored records and Raft commands, token key
#: cache, pooled randomness): "second pass" rows run it.
SECOND_PASS = "d782cc4"


def _perfpass(rounds: int = 3) -> list[Step]:
    """Before/after, interleaved ``rounds`` times (a fresh server each time): run-to-run
    spread here is larger than some effects, so the table shows medians."""
    before = ServeFlags(revision=BEFORE_PASS)
    second = ServeFlags(revision=SECOND_PASS)
    after = ServeFlags()
    on_asyncio = ServeFlags(loop="asyncio")
    single = [
        (before, f"one node, before: {before.label}"),
        (second, f"one node, second pass: {second.label}"),
        (after, f"one node, after: {after.label}"),
        (on_asyncio, f"one node, after, server on asyncio: {on_asyncio.label}"),
    ]
    cluster = [
        (before, f"3 nodes, before: {before.label}"),
        (second, f"3 nodes, second pass: {second.label}"),
        (after, f"3 nodes, after: {after.label}"),
    ]
    steps = []
    for _ in range(rounds):
        steps += [
            Step(
                "perfpass",
                partial(CofferSingle, "inmem", flags, "coffer-inmem"),
                (("node", ("kv2-read", "kv2-write")),),
                label=label,
            )
            for flags, label in single
        ]
        steps += [
            Step(
                "perfpass",
                partial(CofferCluster, 3, flags),
                (("active", ("kv2-write",)),),
                label=label,
            )
            for flags, label in cluster
        ]
    return steps


#: The last commit before group commit on ``storage "file"`` (issue 16's "322 writes/s"
#: was its rate in that day's run): the ``file`` goal's pairs run its server beside
#: this tree's, so that goal is a ratio of one run on one machine like the others.
BEFORE_GROUP_COMMIT = "567f341"

#: Alternated pairs per ratio goal in the standard suite; the goals table shows their median.
GOAL_ROUNDS = 3


def _goal_pairs(rounds: int = GOAL_ROUNDS) -> list[Step]:
    """Issue 16's ratio goals, each side measured right after the other, ``rounds``
    times in alternating order (A B, then B A): on a shared machine one pair's ratio
    moves by as much as a goal's margin, the median of several pairs far less."""
    one_round = [
        Step("goals", CeilingTarget, (("node", ("kv2-read",)),), concurrency=(32,)),
        Step("goals", lambda: CofferSingle("inmem"), (("node", ("kv2-read",)),), concurrency=(32,)),
        Step("goals", partial(EtcdCluster, 3), (("leader", ("kv2-write", "kv2-read")),)),
        Step("goals", partial(CofferCluster, 3), (("active", ("kv2-write",)),)),
        Step(
            "goals",
            partial(
                CofferSingle, "file", ServeFlags(revision=BEFORE_GROUP_COMMIT), "coffer-file-before"
            ),
            (("node", ("kv2-write",)),),
            concurrency=(32,),
            label=f"one node, file, before group commit ({BEFORE_GROUP_COMMIT})",
        ),
        Step("goals", lambda: CofferSingle("file"), (("node", ("kv2-write",)),), concurrency=(32,)),
    ]
    return [step for _, step in abba(one_round, rounds)]


def _standard() -> list[Step]:
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
        # Issue 16's 5-node goal: the same ratio to 5-node etcd as 3-node has.
        Step("five", partial(CofferCluster, 5), (("active", ("kv2-write",)),), concurrency=(32,)),
        Step("five", partial(EtcdCluster, 5), (("leader", ("kv2-write",)),), concurrency=(32,)),
        *_goal_pairs(),
        *_perfpass(),
    ]


def _quick() -> list[Step]:
    return [
        Step("baselines", CeilingTarget, (("node", ("kv2-read",)),)),
        Step("baselines", EtcdCluster, (("leader", ("kv2-read", "kv2-write")),)),
        Step("single", lambda: CofferSingle("inmem"), (("node", ("kv2-read", "kv2-write")),)),
        Step("cluster", lambda: CofferCluster(3), (("active", ("kv2-write",)),)),
    ]


def _dev() -> list[Step]:
    """Coffer only, for checking a change while working (no etcd, no ceiling)."""
    return [
        Step("single", lambda: CofferSingle("inmem"), (("node", ("kv2-read", "kv2-write")),)),
        Step("cluster", lambda: CofferCluster(3), (("active", ("kv2-read", "kv2-write")),)),
    ]


def _ratio() -> list[Step]:
    """Issue 16's write ratio alone: 3-node etcd and 3-node Coffer, alternating twice
    (c=32 and c=1), so both sides meet the same load on a shared machine."""
    both = (32, 1)
    pair = [
        Step("ratio", partial(EtcdCluster, 3), (("leader", ("kv2-write",)),), concurrency=both),
        Step("ratio", partial(CofferCluster, 3), (("active", ("kv2-write",)),), concurrency=both),
    ]
    return pair + pair


def _file() -> list[Step]:
    """One node on ``storage "file"``: the writes group commit is for."""
    return [
        Step("single", lambda: CofferSingle("file"), (("node", ("kv2-write", "kv1-write")),)),
    ]


def _nodes() -> list[Step]:
    """Write throughput and latency as the cluster grows: 1, 3 and 5 Raft nodes."""
    return [
        Step("nodes", partial(CofferCluster, n), (("active", ("kv2-write",)),)) for n in (1, 3, 5)
    ] + [Step("nodes", partial(EtcdCluster, n), (("leader", ("kv2-write",)),)) for n in (1, 3, 5)]


SUITES: dict[str, Callable[[], list[Step]]] = {
    "standard": _standard,
    "quick": _quick,
    "dev": _dev,
    "perfpass": _perfpass,
    "nodes": _nodes,
    "file": _file,
    "ratio": _ratio,
    "goals": _goal_pairs,
}


def suite(name: str) -> list[Step]:
    return SUITES[name]()
