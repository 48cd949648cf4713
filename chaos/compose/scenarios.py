"""Container faults against the compose cluster, and one scenario run end to end.

A run: wait until the cluster is healthy, start the workload through the load
balancer, let it warm up, apply the fault, heal it (unsealing any node that
restarted: Shamir nodes come back sealed), wait until every node is unsealed and a
Raft voter and HAProxy has an active node again, keep the load on a little longer,
stop it, read every key's final value from the active node and from each node's
own replica, and hand the history to :func:`chaos.checker.check`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checker import CheckReport, Fault, History, Thresholds, check
from chaos.compose.workload import Client, Workload, WorkloadConfig
from chaos.sampler import Sampler, port_probe
from deploy.clusterctl import NODES, ClusterError, ComposeCluster, wait_until

__all__ = ["SCENARIOS", "RunSettings", "ScenarioResult", "run_scenario"]


@dataclass(frozen=True, slots=True)
class RunSettings:
    #: How long the fault lasts (kill, pause, disconnect), in seconds.
    duration: float = 10.0
    warmup: float = 5.0
    #: Load kept on after the cluster recovered.
    settle: float = 5.0
    recovery_timeout: float = 180.0
    keys: int = 8
    writers: int = 4
    readers: int = 2
    mount: str = "chaos"
    #: The healing suite: how long its faults are held (None: each one's own default),
    #: how long the cluster is watched after a heal, and how far restart-behind's log moves.
    hold: float | None = None
    observe: float = 15.0
    behind: int = 20_000
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: Fail a run that misses a threshold (False: report only).
    enforce_thresholds: bool = True

    def hold_for(self, default: float) -> float:
        return self.hold or default


@dataclass
class ScenarioResult:
    scenario: str
    report: CheckReport
    history: History
    #: Seconds from the fault to the first acknowledged write sent after it.
    first_write_after_fault: float | None = None
    #: Seconds from the start of the fault until the cluster was whole again.
    recovery_seconds: float | None = None
    nodes_back: bool = False
    raft_members: list[str] = field(default_factory=list)
    error: str = ""

    enforce_thresholds: bool = True

    @property
    def safe(self) -> bool:
        return self.report.ok and self.nodes_back and not self.error

    @property
    def ok(self) -> bool:
        return self.safe and (self.report.thresholds_ok or not self.enforce_thresholds)

    def summary(self) -> str:
        first = self.first_write_after_fault
        lines = [
            f"== {self.scenario}: {'OK' if self.ok else 'FAILED'}",
            self.report.summary(),
            "first acknowledged write after the fault: "
            + (f"{first:.2f}s" if first is not None else "none"),
            "recovered (all nodes unsealed voters, load balancer active) after: "
            + (f"{self.recovery_seconds:.1f}s" if self.recovery_seconds is not None else "never"),
            f"raft members: {', '.join(self.raft_members) or '?'}; all nodes back: "
            f"{'yes' if self.nodes_back else 'no'}",
        ]
        if self.error:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "ok": self.ok,
            "safe": self.safe,
            "thresholds_ok": self.report.thresholds_ok,
            "report": self.report.to_dict(),
            "first_write_after_fault": self.first_write_after_fault,
            "recovery_seconds": self.recovery_seconds,
            "nodes_back": self.nodes_back,
            "raft_members": self.raft_members,
            "events": self.history.events,
            "error": self.error,
        }


@dataclass
class Run:
    cluster: ComposeCluster
    settings: RunSettings
    history: History
    t0: float
    fault_at: float | None = None
    faults: list[Fault] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def event(self, what: str, **details: Any) -> None:
        self.history.event(self.now(), what, **details)

    def fault(self, what: str, **details: Any) -> None:
        """Record the fault (after it took effect); the first one starts the clock."""
        if self.fault_at is None:
            self.fault_at = self.now()
        self.event(what, **details)

    def active(self) -> str:
        """The active node, as the nodes and the load balancer both see it."""

        def agreed() -> str | None:
            node = self.cluster.active_node()
            return node if node is not None and self.cluster.lb_active() == node else None

        return wait_until(agreed, 60, "an agreed active node")

    def healed(self, name: str, node: str, start: float, healed: float) -> None:
        """Note a fault undone at ``healed``; it is watched for ``observe`` seconds more."""
        until = healed + self.settings.observe
        self.faults.append(Fault(name, node, round(start, 3), round(healed, 3), round(until, 3)))

    def observe(self) -> None:
        """Keep the load on until the last fault's observation is over."""
        if self.faults and self.faults[-1].until is not None:
            time.sleep(max(0.0, self.faults[-1].until - self.now()))

    def docker(self, *args: str) -> None:
        self.cluster.docker(*args)

    def container(self, service: str) -> str:
        return self.cluster.container(service)

    def recover(self, restarted: list[str]) -> None:
        """Unseal the nodes that restarted, then wait until the cluster is whole."""
        for service in restarted:
            self.cluster.unseal(service, timeout=self.settings.recovery_timeout)
            self.event("unsealed", node=service)
        self.cluster.wait_ready(self.settings.recovery_timeout)
        self.event("recovered")


# --- the faults ---------------------------------------------------------------------------


def kill_active(run: Run) -> None:
    """SIGKILL the active node's container; restart it after the fault duration."""
    target = run.active()
    container = run.container(target)
    run.docker("kill", "--signal", "KILL", container)
    run.fault("kill", node=target)
    time.sleep(run.settings.duration)
    run.docker("start", container)
    run.event("start", node=target)
    run.recover([target])


def pause_active(run: Run) -> None:
    """Freeze the active node (cgroup freezer: a hung process, not a dead one)."""
    target = run.active()
    container = run.container(target)
    run.docker("pause", container)
    run.fault("pause", node=target)
    time.sleep(run.settings.duration)
    run.docker("unpause", container)
    run.event("unpause", node=target)
    run.recover([])


def disconnect_active(run: Run) -> None:
    """Take the active node off the cluster network, then put it back (same aliases)."""
    target = run.active()
    container = run.container(target)
    network = run.cluster.network
    address = run.cluster.docker(
        "inspect", "-f", f'{{{{(index .NetworkSettings.Networks "{network}").IPAddress}}}}',
        container,
    ).strip()  # fmt: skip
    run.docker("network", "disconnect", network, container)
    run.fault("disconnect", node=target, address=address)
    time.sleep(run.settings.duration)
    run.docker("network", "connect", "--alias", target, network, container)
    after = run.cluster.docker(
        "inspect", "-f", f'{{{{(index .NetworkSettings.Networks "{network}").IPAddress}}}}',
        container,
    ).strip()  # fmt: skip
    run.event("connect", node=target, address=after)
    run.recover([])


def rolling_restart(run: Run) -> None:
    """Restart every node in turn (standbys first, the active node last), like an upgrade."""
    active = run.active()
    order = [n for n in NODES if n != active] + [active]
    for service in order:
        container = run.container(service)
        run.fault("restart", node=service)
        run.docker("restart", "--time", "20", container)
        run.recover([service])
        time.sleep(2.0)


def full_restart(run: Run) -> None:
    """Stop all three nodes at once, start them again, unseal them all."""
    containers = [run.container(service) for service in NODES]
    run.event("stop-all")
    run.docker("stop", "--time", "20", *containers)
    run.fault("stopped-all")
    run.docker("start", *containers)
    run.event("started-all")
    run.recover(list(NODES))


SCENARIOS: dict[str, Callable[[Run], None]] = {
    "kill-active": kill_active,
    "pause-active": pause_active,
    "disconnect-active": disconnect_active,
    "rolling-restart": rolling_restart,
    "full-restart": full_restart,
}


# --- one run ------------------------------------------------------------------------------


def _ensure_mount(cluster: ComposeCluster, mount: str) -> None:
    client = Client(cluster.lb_url, cluster.root_token, 30.0)
    try:
        reply = client.request(
            "POST", f"/v1/sys/mounts/{mount}", {"type": "kv", "options": {"version": "2"}}
        )
    finally:
        client.close()
    if reply.status not in (200, 204) and "already in use" not in str(reply.doc):
        raise ClusterError(f"cannot mount kv-v2 at {mount}/: {reply.status} {reply.doc}")


def run_scenario(
    cluster: ComposeCluster,
    name: str,
    settings: RunSettings | None = None,
    out_dir: Path | None = None,
) -> ScenarioResult:
    from chaos.compose.suite import SUITE  # the suite's faults import Run from here

    settings = settings or RunSettings()
    fault = {**SCENARIOS, **SUITE}[name]
    cluster.unseal_all()
    cluster.wait_ready(settings.recovery_timeout)
    _ensure_mount(cluster, settings.mount)
    history = History()
    run = Run(cluster, settings, history, time.monotonic())
    config = WorkloadConfig(
        base_url=cluster.lb_url,
        token=cluster.root_token,
        mount=settings.mount,
        prefix=f"{name}-{uuid.uuid4().hex[:8]}",
        keys=settings.keys,
        writers=settings.writers,
        readers=settings.readers,
    )
    workload = Workload(config, history, run.t0)
    sampler = Sampler({s: port_probe(cluster.port(s)) for s in NODES}, history, run.t0)
    sampler.start()
    workload.start()
    run.event("load-started")
    error = ""
    try:
        time.sleep(settings.warmup)
        fault(run)
        time.sleep(settings.settle)
    except (ClusterError, OSError) as exc:
        error = f"{type(exc).__name__}: {exc}"
        run.event("error", error=error)
    finally:
        workload.stop()
        sampler.stop()
        run.event("load-stopped")
    recovered_at = next(
        (e["t"] for e in reversed(history.events) if e["event"] == "recovered"), None
    )

    workload.final_reads()
    finals = {op.key: op.value for op in history.ops if op.consistency == "final" and op.ok}
    node_finals: dict[str, dict[str, int | None]] = {}
    for service in NODES:
        try:
            node_finals[service] = workload.node_values(cluster.url(service), finals)
        except (ClusterError, OSError) as exc:
            error = error or f"{service}: {exc}"
    members: list[str] = []
    try:
        members = sorted(s["node_id"] for s in cluster.raft_servers())
    except (ClusterError, OSError, KeyError) as exc:
        error = error or f"raft configuration: {exc}"
    unsealed = all(cluster.health(s) in (200, 429, 473) for s in NODES)
    load_end = max((op.start for op in history.ops if op.kind == "write"), default=0.0)
    report = check(
        history,
        node_finals=node_finals,
        window=(settings.warmup / 2, load_end),
        faults=run.faults,
        samples=history.samples,
        thresholds=settings.thresholds if run.faults else None,
    )

    result = ScenarioResult(
        scenario=name,
        report=report,
        history=history,
        nodes_back=unsealed and set(NODES) <= set(members),
        raft_members=members,
        error=error,
        enforce_thresholds=settings.enforce_thresholds,
    )
    if run.fault_at is not None:
        acked_after = [
            op.end for op in history.ops if op.kind == "write" and op.ok and op.start > run.fault_at
        ]
        if acked_after:
            result.first_write_after_fault = round(min(acked_after) - run.fault_at, 3)
        if recovered_at is not None:
            result.recovery_seconds = round(recovered_at - run.fault_at, 1)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        history.dump(out_dir / f"{name}-{stamp}.jsonl")
    return result
