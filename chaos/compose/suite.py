"""The healing suite (issue 13) against the compose cluster: the container primitives.

The same five faults as :mod:`chaos.process.suite`, with Docker's tools: a network
partition is ``docker network disconnect`` (the node loses every link, not only
its Raft one, so the load balancer marks it down too), a freeze is ``docker
pause``. Each notes its fault window with :meth:`Run.healed` and watches the
cluster for ``RunSettings.observe`` seconds after the heal.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from chaos.compose.scenarios import Run
from chaos.compose.workload import Client
from deploy.clusterctl import NODES, ClusterError

__all__ = ["SUITE", "fill_log"]

FILL_THREADS = 16
#: What ``partition-follower`` writes on top of its load while the standby is cut
#: off: past the nodes' log compaction (every 5,000 entries).
FOLLOWER_FILL = 6000


def _standby(run: Run) -> str:
    active = run.active()
    return random.choice([n for n in NODES if n != active])


def _disconnect(run: Run, service: str) -> float:
    run.docker("network", "disconnect", run.cluster.network, run.container(service))
    return run.now()


def _connect(run: Run, service: str) -> float:
    network, container = run.cluster.network, run.container(service)
    run.docker("network", "connect", "--alias", service, network, container)
    return run.now()


def _cut(
    run: Run, service: str, hold: float, during: Callable[[], None] | None = None
) -> tuple[float, float]:
    cut = _disconnect(run, service)
    try:
        if during is not None:
            during()
        time.sleep(max(0.0, cut + hold - run.now()))
    finally:
        healed = _connect(run, service)
    return cut, healed


def _finish(run: Run) -> None:
    run.observe()
    run.recover([])


def partition_active(run: Run) -> None:
    """Disconnect the active node from the cluster network for 15 s."""
    target = run.active()
    run.fault("disconnect", node=target)
    cut, healed = _cut(run, target, run.settings.hold_for(15.0))
    run.event("connect", node=target)
    run.healed("partition-active", target, cut, healed)
    _finish(run)


def partition_follower(run: Run) -> None:
    """Disconnect a standby for 60 s under load, 6,000 more entries written meanwhile."""
    target = _standby(run)
    before = applied_index(run)
    run.fault("disconnect", node=target)

    def fall_behind() -> None:
        moved, seconds = fill_log(run, FOLLOWER_FILL)
        run.event("log moved on", entries=moved, seconds=round(seconds, 1))

    cut, healed = _cut(run, target, run.settings.hold_for(60.0), fall_behind)
    run.event("connect", node=target, entries_behind=applied_index(run) - before)
    run.healed("partition-follower", target, cut, healed)
    _finish(run)


def flap_link(run: Run) -> None:
    """Disconnect and reconnect a standby every second for 20 s."""
    target = _standby(run)
    total = run.settings.hold_for(20.0)
    run.fault("flap", node=target)
    start = run.now()
    first: float | None = None
    healed = start
    while run.now() - start < total:
        cut, healed = _cut(run, target, 1.0)
        first = cut if first is None else first
        time.sleep(max(0.0, healed + 1.0 - run.now()))
    run.event("flapped", node=target)
    run.healed("flap-link", target, first if first is not None else start, healed)
    _finish(run)


def freeze_active(run: Run) -> None:
    """``docker pause`` the active node for 15 s."""
    target = run.active()
    container = run.container(target)
    run.docker("pause", container)
    at = run.now()
    run.fault("pause", node=target)
    try:
        time.sleep(max(0.0, at + run.settings.hold_for(15.0) - run.now()))
    finally:
        run.docker("unpause", container)
    thawed = run.now()
    run.event("unpause", node=target)
    run.healed("freeze-active", target, at, thawed)
    _finish(run)


def restart_behind(run: Run) -> None:
    """Stop a standby, move the log on by ``behind`` entries, start and unseal it."""
    target = _standby(run)
    container = run.container(target)
    run.docker("stop", "--time", "20", container)
    at = run.now()
    run.fault("stop", node=target)
    moved, seconds = fill_log(run, run.settings.behind)
    run.event("log moved on", entries=moved, seconds=round(seconds, 1))
    run.docker("start", container)
    run.cluster.unseal(target, timeout=run.settings.recovery_timeout)
    run.event("unsealed", node=target)
    run.healed("restart-behind", target, at, run.now())
    _finish(run)


def applied_index(run: Run) -> int:
    return int(run.cluster.leader_view(run.active())["raft_applied_index"])


def fill_log(run: Run, entries: int) -> tuple[int, float]:
    """Write through the load balancer (keys of their own, not recorded) until the
    active node's applied index moved on by ``entries``."""
    start = applied_index(run)
    started = time.monotonic()
    deadline = started + max(120.0, entries / 50)
    done = threading.Event()
    cluster = run.cluster

    def writer(n: int) -> None:
        client = Client(cluster.lb_url, cluster.root_token, 10.0)
        count = 0
        try:
            while not done.is_set() and time.monotonic() < deadline:
                count += 1
                try:
                    client.request("POST", f"/v1/{run.settings.mount}/data/fill-{n}",
                                   {"data": {"v": count}})  # fmt: skip
                except OSError:
                    time.sleep(0.1)
        finally:
            client.close()

    with ThreadPoolExecutor(FILL_THREADS) as pool:
        futures = [pool.submit(writer, n) for n in range(FILL_THREADS)]
        try:
            while time.monotonic() < deadline:
                try:
                    if applied_index(run) >= start + entries:
                        break
                except (ClusterError, OSError):
                    pass
                time.sleep(0.5)
        finally:
            done.set()
            for future in futures:
                future.result()
    moved = applied_index(run) - start
    if moved < entries:
        raise ClusterError(f"the log moved on by {moved} of {entries} entries")
    return moved, time.monotonic() - started


SUITE: dict[str, Callable[[Run], None]] = {
    "partition-active": partition_active,
    "partition-follower": partition_follower,
    "restart-behind": restart_behind,
    "flap-link": flap_link,
    "freeze-active": freeze_active,
}
