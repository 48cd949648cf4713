"""One scenario end to end, on a fresh cluster, and what it found.

Bootstrap N nodes, mount KV v2, start the health monitor and the load, wait a
random-ish 15-30% of the run, inject the fault (which returns once the cluster is
whole again), keep the load on until the run's duration is over (and at least
``settle`` seconds after recovery), stop it, read every key's final value from the
active node and from each node, check that every node is a Raft member and serves
a write and a read, and check the history (:func:`chaos.checker.check` plus
:mod:`chaos.process.verify`). Every process and iptables rule is gone when this
returns or raises (Ctrl-C included).
"""

from __future__ import annotations

import http.client
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.checker import FINAL, CheckReport, Finding, History, check
from chaos.process.context import MOUNT, Run, Settings
from chaos.process.firewall import Firewall, FirewallError, remove_stale_rules
from chaos.process.monitor import Monitor
from chaos.process.scenarios import SCENARIOS
from chaos.process.verify import demote_deposed_reads, isolated_acks
from chaos.process.workload import Workload, WorkloadConfig
from chaos.sampler import Probe, Sampler, port_probe
from harness.cluster import Cluster, ClusterError, Node

__all__ = ["ScenarioResult", "run_scenario"]


@dataclass
class ScenarioResult:
    scenario: str
    settings: Settings
    seed: int
    report: CheckReport
    #: Findings of chaos.process.verify: writes acknowledged by a node while cut off.
    extra: list[Finding] = field(default_factory=list)
    #: Stale reads a cut-off leader served while it still claimed to be active
    #: (regressions only with Settings.strict_reads).
    deposed: list[Finding] = field(default_factory=list)
    fault_at: float | None = None
    failover_seconds: float | None = None
    first_write_after_fault: float | None = None
    recovery_seconds: float | None = None
    members: list[str] = field(default_factory=list)
    nodes_back: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    workdir: str = ""

    @property
    def lost(self) -> int:
        return self.report.lost

    @property
    def regressions(self) -> int:
        return self.report.regressions

    @property
    def safe(self) -> bool:
        """Nothing lost or read back, nothing acknowledged while cut off, every node back."""
        return self.report.ok and not self.extra and self.nodes_back and not self.error

    @property
    def ok(self) -> bool:
        """Safe, and every fault met the thresholds (unless they are only reported)."""
        return self.safe and (self.report.thresholds_ok or not self.settings.enforce_thresholds)

    @property
    def verdict(self) -> str:
        """OK, FAILED (not safe), or THRESHOLDS NOT MET (safe, but too slow to heal)."""
        return "OK" if self.ok else ("FAILED" if not self.safe else "THRESHOLDS NOT MET")

    def summary(self) -> str:
        rep = self.report

        def secs(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.2f}s"

        window = rep.unavailable_window
        where = f", t={window[0]:.2f}..{window[1]:.2f}s" if window else ""
        lines = [
            f"== {self.scenario}: {self.verdict} "
            f"({self.settings.nodes} nodes, {self.settings.duration:g}s of load, seed {self.seed})",
            f"operations: {rep.operations} ({rep.writes} writes, {rep.reads} reads, "
            f"{rep.strong_reads} strong)",
            f"acknowledged: {rep.acknowledged}  indeterminate: {rep.indeterminate}",
            f"lost: {self.lost}  regressions: {self.regressions}  phantoms: {rep.phantoms}  "
            f"divergent: {rep.divergent}  acked while cut off: "
            f"{sum(f.kind == 'isolated-ack' for f in self.extra)}",
            f"unavailable: {rep.unavailable_seconds:.2f}s (longest without an acknowledged "
            f"write{where})",
            f"failover: {secs(self.failover_seconds)} (to another node reporting active)  "
            f"first write after fault: {secs(self.first_write_after_fault)}",
            f"fault at: {secs(self.fault_at)}  whole again after: {secs(self.recovery_seconds)}  "
            f"nodes back: {'yes' if self.nodes_back else 'no'} ({', '.join(self.members) or '?'})",
            f"stale any-node reads: {rep.stale_reads} (superseded for at most "
            f"{rep.max_staleness:.2f}s)  late indeterminate writes seen: {rep.late_writes}",
        ]
        if self.deposed:
            counted = "counted as regressions" if self.settings.strict_reads else "not counted"
            lines.append(
                f"stale reads from the cut-off leader while it still claimed to be active: "
                f"{len(self.deposed)} ({counted}; no read lease)"
            )
        lines += [m.summary() for m in rep.faults]
        enforced = "" if self.settings.enforce_thresholds else " (reported only)"
        lines += [f"threshold not met{enforced}: {f}" for f in rep.threshold_failures]
        details = {k: v for k, v in self.details.items() if k != "failover_seconds"}
        if details:
            lines.append("details: " + ", ".join(f"{k}={v}" for k, v in details.items()))
        if self.error:
            lines.append(f"error: {self.error}")
        for finding in [*self.extra, *rep.findings, *self.deposed[:3]][:20]:
            lines.append(f"  {finding.kind}: {finding.key}: {finding.detail}")
        if not self.ok and self.workdir:
            lines.append(f"logs and history: {self.workdir}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "ok": self.ok,
            "safe": self.safe,
            "thresholds_ok": self.report.thresholds_ok,
            "thresholds_enforced": self.settings.enforce_thresholds,
            "threshold_failures": self.report.threshold_failures,
            "faults": self.report.to_dict()["faults"],
            "nodes": self.settings.nodes,
            "duration": self.settings.duration,
            "seed": self.seed,
            "operations": self.report.operations,
            "acknowledged": self.report.acknowledged,
            "lost": self.lost,
            "regressions": self.regressions,
            "unavailable_seconds": self.report.unavailable_seconds,
            "failover_seconds": self.failover_seconds,
            "first_write_after_fault": self.first_write_after_fault,
            "fault_at": self.fault_at,
            "recovery_seconds": self.recovery_seconds,
            "nodes_back": self.nodes_back,
            "members": self.members,
            "details": self.details,
            "extra_findings": [asdict(f) for f in self.extra[:50]],
            "deposed_reads": [asdict(f) for f in self.deposed[:50]],
            "report": self.report.to_dict(),
            "error": self.error,
            "workdir": self.workdir,
        }


def _probe(node: Node) -> Probe:
    """Polls ``node``'s API; a stopped node answers 0 without a request."""
    return port_probe(node.api_port, lambda: node.running)


def _mount(cluster: Cluster) -> None:
    reply = cluster.active().request(
        "POST",
        f"/v1/sys/mounts/{MOUNT}",
        {"type": "kv", "options": {"version": "2"}},
        token=cluster.root_token,
    )
    if reply.status not in (200, 204):
        raise ClusterError(f"cannot mount kv-v2 at {MOUNT}/: {reply.status} {reply.body!r}")


def run_scenario(name: str, settings: Settings | None = None) -> ScenarioResult:
    """Run one scenario on a fresh cluster; never leaves a process or rule behind."""
    settings = settings or Settings()
    fault = SCENARIOS[name]
    seed = settings.seed if settings.seed is not None else time.time_ns() % 1_000_000
    rng = random.Random(f"{seed}-{name}")
    if settings.workdir is not None:
        workdir = settings.workdir / name
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"coffer-chaos-{name}-"))
    remove_stale_rules()
    cluster = Cluster(workdir, settings.nodes, extra_raft=settings.extra_raft)
    firewall = Firewall()
    history = History()
    result = ScenarioResult(name, settings, seed, CheckReport(), workdir=str(workdir))
    try:
        cluster.bootstrap(timeout=settings.recovery_timeout)
        _mount(cluster)
        t0 = time.monotonic()
        monitor = Monitor(cluster, history, t0)
        monitor.start()
        sampler = Sampler({n.name: _probe(n) for n in cluster.nodes}, history, t0)
        sampler.start()
        run = Run(cluster, monitor, firewall, history, settings, rng, t0)
        config = WorkloadConfig(
            mount=MOUNT,
            keys=settings.keys,
            readers=settings.readers,
            seed=seed,
            timeout=settings.client_timeout,
        )
        workload = Workload(cluster, monitor, history, t0, config)
        try:
            _drive(run, workload, fault, result)
        finally:
            monitor.stop()
            sampler.stop()
        result.details.update(run.details)
    except (ClusterError, FirewallError, OSError, http.client.HTTPException) as exc:
        result.error = result.error or f"{type(exc).__name__}: {exc}"
    finally:
        errors = firewall.close()
        cluster.close()
        if errors:
            result.error = result.error or f"iptables clean-up: {errors}"
    history.dump(workdir / "history.jsonl")
    if result.ok and settings.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
        result.workdir = ""
    return result


def _drive(
    run: Run, workload: Workload, fault: Callable[[Run], None], result: ScenarioResult
) -> None:
    settings = run.settings
    warmup = max(1.0, run.rng.uniform(0.15, 0.3) * settings.duration)
    workload.start()
    run.event("load started")
    try:
        run.sleep_until(warmup)
        fault(run)
        run.sleep_until(max(settings.duration, (run.recovered_at or 0.0) + settings.settle))
    except (ClusterError, FirewallError, OSError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        run.event("error", error=result.error)
    finally:
        workload.stop()
        run.event("load stopped")
        run.firewall.heal()
    _verify(run, workload, result)


def _verify(run: Run, workload: Workload, result: ScenarioResult) -> None:
    cluster, history = run.cluster, run.history
    if not result.error:
        try:
            cluster.wait_whole(run.settings.recovery_timeout)
        except ClusterError as exc:
            result.error = str(exc)
    workload.final_reads()
    finals = {op.key: op.value for op in history.ops if op.consistency == FINAL and op.ok}
    node_finals = {n.name: workload.node_values(n, finals) for n in cluster.nodes if n.running}
    try:
        result.members = cluster.raft_members()
    except (ClusterError, OSError, http.client.HTTPException) as exc:
        result.error = result.error or f"raft configuration: {exc}"
    serving = [problem for n in cluster.nodes if (problem := workload.serve_check(n))]
    if serving:
        result.error = result.error or "; ".join(serving)
    result.nodes_back = result.members == sorted(n.name for n in cluster.nodes) and not serving
    ops, result.deposed = demote_deposed_reads(
        history, [*run.isolations, *run.suspects], strict=run.settings.strict_reads
    )
    result.report = check(
        ops,
        node_finals=node_finals,
        faults=run.faults,
        samples=history.samples,
        # Only the healing suite notes fault windows; the first scenarios keep their verdicts.
        thresholds=run.settings.thresholds if run.faults else None,
    )
    result.extra = isolated_acks(history, run.isolations)
    result.fault_at = run.fault_at
    if run.fault_at is not None:
        fault_at = run.fault_at
        if run.failover_at is not None:
            result.failover_seconds = round(run.failover_at - fault_at, 3)
        if "failover_seconds" in run.details:
            result.failover_seconds = run.details["failover_seconds"]
        first = [
            op.end for op in history.ops if op.kind == "write" and op.ok and op.start > fault_at
        ]
        if first:
            result.first_write_after_fault = round(min(first) - fault_at, 3)
        if run.recovered_at is not None:
            result.recovery_seconds = round(run.recovered_at - fault_at, 2)
