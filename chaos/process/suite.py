"""The healing suite (issue 13): faults a Raft cluster must heal from in seconds.

Each scenario notes its fault with :meth:`Run.healed` (start, heal), keeps the
load on for ``Settings.observe`` seconds after the heal, and then waits until the
cluster is whole; the runner measures each fault (:mod:`chaos.measures`) from the
history and the node polls, and holds it to ``Settings.thresholds``.

* ``partition-active``: the active node's Raft IP dropped for 15 s.
* ``partition-follower``: a standby's Raft IP dropped for 60 s under load; 6,000
  more entries are written (unrecorded, through the active node) while it is cut
  off, so the others compact their log past it (every 5,000 entries).
* ``restart-behind``: a standby stopped, the log moved on by ``Settings.behind``
  (20,000) entries, the standby started and unsealed.
* ``flap-link``: a standby's Raft IP dropped and restored every second for 20 s.
* ``freeze-active``: the active node SIGSTOPped for 15 s, then SIGCONTinued.

``Settings.fault_seconds`` overrides each default hold.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from chaos.process.context import MOUNT, Run
from harness.cluster import ClusterError, Node

__all__ = ["SUITE"]

#: How long a node that was frozen may still claim to be active once it runs again.
THAW_CLAIM_SECONDS = 1.5
#: Writer threads that move the log on for ``restart-behind``.
FILL_THREADS = 16
#: Entries after which the nodes compact their log (consensus' default), and what
#: ``partition-follower`` adds on top of its load so that the cut-off node falls behind.
COMPACTION_ENTRIES = 5000
FOLLOWER_FILL = COMPACTION_ENTRIES + 1000


def _standby(run: Run) -> Node:
    active = run.cluster.active()
    return run.rng.choice([n for n in run.cluster.nodes if n is not active])


def _cut(
    run: Run,
    node: Node,
    hold: float,
    during: Callable[[float], None] | None = None,
    *,
    active: bool = True,
) -> tuple[float, float]:
    """Drop ``node``'s Raft IP for ``hold`` seconds; (cut at, healed at). Always heals.

    A cut-off active node must acknowledge nothing (``run.isolations``); a cut-off
    standby may, since it forwards writes to the active node over the API, which
    stays reachable (``run.suspects``: only its reads are suspect)."""
    run.firewall.isolate(node.raft_ip)
    cut = run.now()
    try:
        if during is not None:
            during(cut)
        run.sleep_until(cut + hold)
    finally:
        errors = run.firewall.heal(node.raft_ip)
        healed = run.event("heal", node=node.name, errors=errors)
        (run.isolations if active else run.suspects).append((node.name, cut, healed))
    if errors:
        raise ClusterError(f"could not remove the iptables rules: {errors}")
    return cut, healed


def _finish(run: Run) -> None:
    run.observe()
    run.wait_whole()


def partition_active(run: Run) -> None:
    """Cut the active node off for 15 s; the majority goes on; heal and watch."""
    old = run.cluster.active()
    run.fault("partition", node=old.name, ip=old.raft_ip)

    def failover(cut: float) -> None:
        run.details["failover_seconds"] = round(run.failover(cut, other_than={old.name}), 3)

    cut, healed = _cut(run, old, run.settings.hold_for(15.0), failover)
    run.healed("partition-active", old.name, cut, healed)
    _finish(run)


def partition_follower(run: Run) -> None:
    """Cut a standby off for 60 s under load; once healed it must catch up (snapshot)."""
    victim = _standby(run)
    before = run.cluster.applied_index(run.cluster.active())
    run.fault("partition", node=victim.name, ip=victim.raft_ip)

    def fall_behind(cut: float) -> None:
        moved, seconds = fill_log(run, FOLLOWER_FILL)
        run.event("log moved on", entries=moved, seconds=round(seconds, 1))

    cut, healed = _cut(run, victim, run.settings.hold_for(60.0), fall_behind, active=False)
    run.details["entries_behind"] = run.cluster.applied_index(run.cluster.active()) - before
    run.healed("partition-follower", victim.name, cut, healed)
    _finish(run)


def flap_link(run: Run) -> None:
    """A standby's link down 1 s, up 1 s, for 20 s."""
    victim = _standby(run)
    total = run.settings.hold_for(20.0)
    run.fault("flap", node=victim.name, ip=victim.raft_ip)
    start = run.now()
    first = None
    healed = start
    while run.now() - start < total:
        cut, healed = _cut(run, victim, 1.0, active=False)
        first = cut if first is None else first
        run.sleep_until(healed + 1.0)
    run.details["flaps"] = len([i for i in run.suspects if i[0] == victim.name])
    run.healed("flap-link", victim.name, first if first is not None else start, healed)
    _finish(run)


def freeze_active(run: Run) -> None:
    """SIGSTOP the active node for 15 s (a hung process, sockets open), then SIGCONT."""
    old = run.cluster.active()
    old.freeze()
    at = run.fault("freeze", node=old.name)
    try:
        run.details["failover_seconds"] = round(run.failover(at, other_than={old.name}), 3)
        run.sleep_until(at + run.settings.hold_for(15.0))
    finally:
        old.thaw()
        thawed = run.event("thaw", node=old.name)
    run.suspects.append((old.name, at, thawed + THAW_CLAIM_SECONDS))
    run.healed("freeze-active", old.name, at, thawed)
    _finish(run)


def restart_behind(run: Run) -> None:
    """Stop a standby, move the log on by ``behind`` entries, start and unseal it."""
    victim = _standby(run)
    at = run.fault("stop", node=victim.name)
    victim.stop()
    run.event("stopped", node=victim.name)
    moved, seconds = fill_log(run, run.settings.behind)
    run.details["entries_moved_on"] = moved
    run.details["fill_seconds"] = round(seconds, 1)
    victim.start()
    sealed = run.cluster.sealed(victim)
    run.details.setdefault("came_back_sealed", {})[victim.name] = sealed
    if not sealed:
        raise ClusterError(f"{victim.name} came back unsealed: it should need the keys")
    run.unseal(victim)
    run.healed("restart-behind", victim.name, at, run.now())
    _finish(run)


def fill_log(run: Run, entries: int) -> tuple[int, float]:
    """Write through the active node until its applied index moved on by ``entries``.

    The writes go to keys of their own (``fill-N``) and are not recorded: they only
    make the log long. Returns (entries moved on, seconds taken)."""
    cluster = run.cluster
    start_index = cluster.applied_index(cluster.active())
    target = start_index + entries
    started = time.monotonic()
    deadline = started + max(120.0, entries / 50)
    done = threading.Event()
    path = f"/v1/{MOUNT}/data/fill-"
    leader = [cluster.active()]

    def writer(n: int) -> None:
        count = 0
        while not done.is_set() and time.monotonic() < deadline:
            count += 1
            try:
                leader[0].request(
                    "POST", f"{path}{n}", {"data": {"v": count}}, token=cluster.root_token
                )
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
                with contextlib.suppress(ClusterError):
                    leader[0] = cluster.active(timeout=5)

    with ThreadPoolExecutor(FILL_THREADS) as pool:
        futures = [pool.submit(writer, n) for n in range(FILL_THREADS)]
        try:
            while time.monotonic() < deadline:
                try:
                    if cluster.applied_index(cluster.active()) >= target:
                        break
                except (ClusterError, OSError, http.client.HTTPException):
                    pass
                time.sleep(0.5)
        finally:
            done.set()
            for future in futures:
                future.result()
    reached = cluster.applied_index(cluster.active())
    if reached < target:
        raise ClusterError(f"the log moved on by {reached - start_index} of {entries} entries")
    return reached - start_index, time.monotonic() - started


SUITE: dict[str, Callable[[Run], None]] = {
    "partition-active": partition_active,
    "partition-follower": partition_follower,
    "restart-behind": restart_behind,
    "flap-link": flap_link,
    "freeze-active": freeze_active,
}
