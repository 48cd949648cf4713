"""The faults, one function each; each returns once the cluster is whole again.

Every node that restarts comes back sealed (Shamir) and is unsealed with the
keys the tool got at init, then must catch up and be a Raft member again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from chaos.process.context import Run
from chaos.process.suite import SUITE
from harness.cluster import ClusterError

__all__ = ["SCENARIOS"]


def kill_active(run: Run) -> None:
    """kill -9 the active node under load; another node must take over; restart it."""
    old = run.cluster.active()
    at = run.fault("kill -9", node=old.name)
    old.kill()
    run.details["failover_seconds"] = round(run.failover(at, other_than={old.name}), 3)
    run.sleep_until(at + run.settings.hold)
    run.bring_back(old)


def partition_leader(run: Run) -> None:
    """Cut the active node's Raft IP off: the majority elects a new leader, the old one
    steps down and acknowledges nothing; heal, and it must follow and catch up."""
    old = run.cluster.active()
    run.fault("partition", node=old.name, ip=old.raft_ip)
    run.firewall.isolate(old.raft_ip)
    cut = run.now()  # the rules are in: from here on the node is cut off
    try:
        run.details["failover_seconds"] = round(run.failover(cut, other_than={old.name}), 3)
        stepped = run.monitor.wait_not_active(old.name, cut, run.settings.hold + 10)
        run.details["old_leader_stepped_down_seconds"] = (
            None if stepped is None else round(stepped - cut, 3)
        )
        run.sleep_until(cut + run.settings.hold)
        still_active = old in run.monitor.active_nodes()
    finally:
        errors = run.firewall.heal(old.raft_ip)
        healed = run.event("heal", node=old.name, errors=errors)
        run.isolations.append((old.name, cut, healed))
    if errors:
        raise ClusterError(f"could not remove the iptables rules: {errors}")
    if still_active:
        raise ClusterError(f"{old.name} still claimed to be active {healed - cut:.1f}s cut off")
    run.details["dual_active_seconds"] = run.monitor.dual_active_seconds()
    since = run.now()
    run.cluster.wait_caught_up(old, run.settings.recovery_timeout)
    run.details.setdefault("catch_up_seconds", {})[old.name] = round(run.now() - since, 2)
    run.wait_whole()


def restart_follower(run: Run) -> None:
    """kill -9 a standby, keep writing while it is down, restart it: it must catch up."""
    active = run.cluster.active()
    victim = run.rng.choice([n for n in run.cluster.nodes if n is not active])
    at = run.fault("kill -9", node=victim.name)
    victim.kill()
    run.sleep_until(at + run.settings.hold)
    run.bring_back(victim)
    if run.cluster.active() is not active:
        run.details["leader_changed"] = True


def rolling_restart(run: Run) -> None:
    """Stop (SIGTERM) and restart every node in turn, standbys first, the active one last
    (whichever node is active when its turn comes)."""
    remaining = list(run.cluster.nodes)
    run.rng.shuffle(remaining)
    order = []
    while remaining:
        active = run.cluster.active()
        node = next((n for n in remaining if n is not active), active)
        remaining.remove(node)
        order.append(node.name)
        at = run.fault("restart", node=node.name, active=node is active)
        node.stop()
        if node is active:
            run.details["failover_seconds"] = round(run.failover(at, other_than={node.name}), 3)
        run.bring_back(node)
        time.sleep(1.0)
    run.details["order"] = order


def restart_all(run: Run) -> None:
    """Stop every node at once (SIGTERM), start them again: all come back sealed; unseal
    them all at once. Failover here is from the unseal to an active node."""
    nodes = run.cluster.nodes
    at = run.fault("stop all")
    run.cluster.close()
    stopped = run.event("stopped all")
    for node in nodes:
        node.start()
    started = run.event("started all")
    sealed = {node.name: run.cluster.sealed(node) for node in nodes}
    run.details["came_back_sealed"] = sealed
    if not all(sealed.values()):
        raise ClusterError(f"nodes came back unsealed: {sealed}")
    with ThreadPoolExecutor(len(nodes)) as pool:
        for future in [pool.submit(run.unseal, node) for node in nodes]:
            future.result()
    run.details["stop_seconds"] = round(stopped - at, 2)
    run.details["start_seconds"] = round(started - stopped, 2)
    run.details["failover_seconds"] = round(run.failover(started, other_than=set()), 3)
    run.wait_whole()


SCENARIOS: dict[str, Callable[[Run], None]] = {
    "kill-active": kill_active,
    "partition-leader": partition_leader,
    "restart-follower": restart_follower,
    "rolling-restart": rolling_restart,
    "restart-all": restart_all,
    **SUITE,
}
