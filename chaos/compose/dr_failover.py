"""``dr-failover``: lose the primary site under load, promote the DR secondary.

Against the two sites of ``deploy/compose.replication.yaml``
(:class:`deploy.replication_pair.ReplicationPair`). A run:

1. wait until the DR secondary streams and has the primary's last WAL; make a batch
   DR operation token on the primary (docs/replication.md: no key holders needed at
   failover time);
2. drive the chaos KV load through the primary's load balancer (every op recorded
   for :mod:`chaos.checker`), and meanwhile sample the replication lag: after each
   acknowledged marker write, the primary's ``last_wal`` (at least the marker's
   index), then the time until the DR secondary's ``last_remote_wal`` reaches it;
3. ``docker kill`` the primary's three nodes at once (the site is gone; its load
   balancer stays and answers 503);
4. promote the DR site's active node with the token, and time the first write
   acknowledged through the DR load balancer;
5. read every key once through the DR load balancer (FINAL reads).

Every key has one writer writing versions 1, 2, 3... and the DR secondary applies
the primary's WALs in order, so the final version of a key says which of its
acknowledged writes arrived: those of a higher version were lost. A lost write
acknowledged within ``lag_bound`` seconds before the kill is what asynchronous
replication allows (docs/replication.md, "The lag bound"); one acknowledged
earlier fails the run (:func:`classify_losses`). The history before the kill is
held to the usual checker (no regression, no phantom).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checker import FINAL, CheckReport, History, Op, check
from chaos.compose.workload import Client, Workload, WorkloadConfig
from chaos.record import provenance, replace_block
from deploy.clusterctl import ClusterError, wait_until
from deploy.replication_pair import ReplicationPair, replication_port_env

__all__ = [
    "LAG_BOUND",
    "DrFailoverResult",
    "DrSettings",
    "LagSample",
    "Losses",
    "classify_losses",
    "lag_summary",
    "run_dr_failover",
]

#: Seconds: what a connected DR secondary may lack of the primary's acknowledged
#: writes when the primary is lost (docs/replication.md, "The lag bound").
LAG_BOUND = 2.0


@dataclass(frozen=True, slots=True)
class DrSettings:
    warmup: float = 15.0
    keys: int = 16
    writers: int = 4
    readers: int = 2
    mount: str = "chaos"
    lag_bound: float = LAG_BOUND
    #: Seconds between two lag markers.
    lag_every: float = 0.25
    promote_timeout: float = 120.0


@dataclass(frozen=True, slots=True)
class LagSample:
    #: When the marker write was acknowledged (seconds since the run started).
    acked: float
    #: The primary's last_wal read after the acknowledgement.
    wal: int
    #: Seconds until the DR secondary's last_remote_wal reached ``wal`` (None: never).
    lag: float | None


@dataclass
class Losses:
    """Acknowledged writes missing on the promoted cluster, by age at the kill."""

    recent: list[Op] = field(default_factory=list)
    old: list[Op] = field(default_factory=list)
    #: Keys with an acknowledged write but no final read.
    unread: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.old and not self.unread


def classify_losses(ops: Iterable[Op], kill_at: float, bound: float) -> Losses:
    """Split the acknowledged writes the FINAL reads do not hold by their ack time.

    A key's final read returns version ``F``: every acknowledged write of that key
    with a higher version is lost; acknowledged at or after ``kill_at - bound`` it is
    *recent* (within the lag bound), before that *old*.
    """
    ops = list(ops)
    finals: dict[str, Op] = {}
    for op in ops:
        if op.kind == "read" and op.consistency == FINAL and op.ok:
            finals[op.key] = op
    losses = Losses()
    cutoff = kill_at - bound
    for op in ops:
        if op.kind != "write" or not op.ok:
            continue
        final = finals.get(op.key)
        if final is None:
            if op.key not in losses.unread:
                losses.unread.append(op.key)
            continue
        if final.order < op.order:
            (losses.old if op.end < cutoff else losses.recent).append(op)
    return losses


def lag_summary(samples: Iterable[LagSample]) -> dict[str, Any]:
    """p50 / p99 / max of the measured lags, and how many markers never arrived."""
    lags = sorted(s.lag for s in samples if s.lag is not None)
    missing = sum(1 for s in samples if s.lag is None)
    if not lags:
        return {"samples": 0, "missing": missing}
    p99 = lags[min(len(lags) - 1, round(0.99 * (len(lags) - 1)))]
    return {
        "samples": len(lags),
        "missing": missing,
        "p50": round(statistics.median(lags), 3),
        "p99": round(p99, 3),
        "max": round(lags[-1], 3),
    }


@dataclass
class DrFailoverResult:
    report: CheckReport
    losses: Losses
    lag: dict[str, Any]
    lag_bound: float
    history: History
    kill_at: float | None = None
    #: Seconds from the kill to the first write acknowledged by the promoted site.
    serving_after: float | None = None
    #: The DR secondary's last_remote_wal when promoted, and the primary's last seen last_wal.
    dr_last_remote_wal: int | None = None
    primary_last_wal: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return (
            self.losses.ok
            and not self.report.regressions
            and not self.report.phantoms
            and self.serving_after is not None
            and not self.error
        )

    def summary(self) -> str:
        lag = self.lag
        lines = [
            f"== dr-failover: {'OK' if self.ok else 'FAILED'}",
            f"acknowledged writes: {self.report.acknowledged} "
            f"(indeterminate {self.report.indeterminate})",
            f"lost: {len(self.losses.recent)} acknowledged within the last "
            f"{self.lag_bound:g}s before the kill (allowed), {len(self.losses.old)} older "
            f"(must be 0); keys never read back: {len(self.losses.unread)}",
            "replication lag (marker on the primary -> DR last_remote_wal): "
            + (
                f"p50 {lag['p50'] * 1000:.0f} ms, p99 {lag['p99'] * 1000:.0f} ms, "
                f"max {lag['max'] * 1000:.0f} ms over {lag['samples']} markers"
                if lag.get("samples")
                else "no samples"
            ),
            f"WALs: primary last_wal {self.primary_last_wal}, DR last_remote_wal at "
            f"promotion {self.dr_last_remote_wal}",
            "kill -> promoted site acknowledged a write: "
            + (f"{self.serving_after:.1f}s" if self.serving_after is not None else "never"),
            f"before the kill: regressions {self.report.regressions}, "
            f"phantoms {self.report.phantoms}",
        ]
        lines += [
            f"  lost (old): {op.key} value {op.value} acked at t={op.end:.2f}s"
            for op in self.losses.old[:10]
        ]
        if self.error:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": "dr-failover",
            "ok": self.ok,
            "acknowledged": self.report.acknowledged,
            "indeterminate": self.report.indeterminate,
            "lost_recent": len(self.losses.recent),
            "lost_old": len(self.losses.old),
            "unread_keys": self.losses.unread,
            "lag_bound": self.lag_bound,
            "lag": self.lag,
            "serving_after": self.serving_after,
            "primary_last_wal": self.primary_last_wal,
            "dr_last_remote_wal": self.dr_last_remote_wal,
            "regressions": self.report.regressions,
            "phantoms": self.report.phantoms,
            "events": self.history.events,
            "error": self.error,
        }


class LagSampler:
    """A marker write on the primary, then the wait for the DR secondary to apply it."""

    def __init__(self, pair: ReplicationPair, settings: DrSettings, t0: float) -> None:
        self.pair, self.settings, self.t0 = pair, settings, t0
        self.samples: list[LagSample] = []
        self.last_wal: int | None = None
        self._primary_active: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="lag-sampler")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        pair = self.pair
        client = Client(pair.primary.lb_url, pair.primary.root_token, 5.0)
        count = 0
        try:
            while not self._stop.wait(self.settings.lag_every):
                count += 1
                try:
                    reply = client.request(
                        "POST", f"/v1/{self.settings.mount}/data/lag-marker", {"data": {"v": count}}
                    )
                    if reply.status != 200:
                        continue
                    acked = time.monotonic()
                    wal = self._primary_wal()
                    self.last_wal = wal
                    lag = self._wait(wal, acked)
                    self.samples.append(LagSample(round(acked - self.t0, 3), wal, lag))
                except (OSError, ClusterError, ValueError):
                    continue
        finally:
            client.close()

    def _primary_wal(self) -> int:
        """The primary's ``last_wal``, asked of its active node (looked up once, again
        only when it stops answering): one request, so the lag is not inflated."""
        primary = self.pair.primary
        for _ in range(2):
            if self._primary_active is None:
                self._primary_active = primary.active_node()
            try:
                status = self.pair._status(primary, self._primary_active)
                return int(status.get("last_wal") or 0)
            except (OSError, ClusterError):
                self._primary_active = None
        raise ClusterError("the primary's active node did not answer")

    def _wait(self, wal: int, acked: float) -> float | None:
        """Poll the DR secondary's active node until it applied ``wal`` (5 s at most)."""
        active = self.pair.dr_active()
        if active is None:
            return None
        while time.monotonic() - acked < 5.0 and not self._stop.is_set():
            try:
                status = self.pair._status(self.pair.dr, active)
            except (OSError, ClusterError):
                return None
            if int(status.get("last_remote_wal") or 0) >= wal:
                return time.monotonic() - acked
            time.sleep(0.01)
        return None


def _ensure_mount(pair: ReplicationPair, mount: str) -> None:
    client = Client(pair.primary.lb_url, pair.primary.root_token, 30.0)
    try:
        reply = client.request(
            "POST", f"/v1/sys/mounts/{mount}", {"type": "kv", "options": {"version": "2"}}
        )
    finally:
        client.close()
    if reply.status not in (200, 204) and "already in use" not in str(reply.doc):
        raise ClusterError(f"cannot mount kv-v2 at {mount}/: {reply.status} {reply.doc}")


def _first_write(pair: ReplicationPair, token: str, mount: str, timeout: float) -> None:
    """Retry one write through the DR load balancer until the promoted site takes it."""

    def wrote() -> bool:
        reply = Client(pair.dr.lb_url, token, 5.0)
        try:
            answer = reply.request("POST", f"/v1/{mount}/data/after-failover", {"data": {"v": 1}})
        finally:
            reply.close()
        return answer.status == 200

    wait_until(wrote, timeout, "the promoted site to acknowledge a write", every=0.1)


def run_dr_failover(
    pair: ReplicationPair, settings: DrSettings | None = None, out_dir: Path | None = None
) -> DrFailoverResult:
    settings = settings or DrSettings()
    pair.wait_streaming()
    _ensure_mount(pair, settings.mount)
    operation_token = pair.make_dr_operation_token(ttl="1h")
    root = pair.primary.root_token
    history = History()
    t0 = time.monotonic()

    def event(what: str, **details: Any) -> float:
        at = time.monotonic() - t0
        history.event(at, what, **details)
        return at

    prefix = f"dr-failover-{uuid.uuid4().hex[:8]}"
    config = WorkloadConfig(
        base_url=pair.primary.lb_url,
        token=root,
        mount=settings.mount,
        prefix=prefix,
        keys=settings.keys,
        writers=settings.writers,
        readers=settings.readers,
    )
    workload = Workload(config, history, t0)
    lag = LagSampler(pair, settings, t0)
    result_error = ""
    kill_at: float | None = None
    serving_after: float | None = None
    dr_wal: int | None = None
    workload.start()
    lag.start()
    event("load-started")
    try:
        time.sleep(settings.warmup)
        containers = [pair.primary.container(s) for s in pair.primary.nodes]
        kill_at = event("kill-primary-site", nodes=list(pair.primary.nodes))
        pair.primary.docker("kill", "--signal", "KILL", *containers)
        event("killed")
    except (ClusterError, OSError) as exc:
        result_error = f"{type(exc).__name__}: {exc}"
    finally:
        lag.stop()
        workload.stop()
        event("load-stopped")
    if kill_at is not None and not result_error:
        try:
            with_status = pair.dr_status()
            dr_wal = int(with_status.get("last_remote_wal") or 0)
            promoted_on = pair.promote(operation_token, settings.promote_timeout)
            event("promoted", node=promoted_on)
            _first_write(pair, root, settings.mount, settings.promote_timeout)
            serving_after = round(event("serving") - kill_at, 2)
        except (ClusterError, OSError) as exc:
            result_error = f"{type(exc).__name__}: {exc}"
            event("error", error=result_error)

    before_kill = [op for op in history.ops if op.consistency != FINAL]
    if serving_after is not None:
        after = Workload(
            WorkloadConfig(**{**_fields(config), "base_url": pair.dr.lb_url}), history, t0
        )
        after.final_reads()
    report = check(before_kill)
    # The FINAL reads only for phantoms: an older final value is a loss, judged below.
    report.phantoms = check(history.ops).phantoms
    losses = (
        classify_losses(history.ops, kill_at, settings.lag_bound)
        if kill_at is not None
        else Losses()
    )
    result = DrFailoverResult(
        report=report,
        losses=losses,
        lag=lag_summary(lag.samples),
        lag_bound=settings.lag_bound,
        history=history,
        kill_at=kill_at,
        serving_after=serving_after,
        dr_last_remote_wal=dr_wal,
        primary_last_wal=lag.last_wal,
        error=result_error,
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        history.dump(out_dir / f"dr-failover-{time.strftime('%Y%m%dT%H%M%S')}.jsonl")
    return result


def _fields(config: WorkloadConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


DR_START, DR_END = "<!-- dr-failover:start -->", "<!-- dr-failover:end -->"


def dr_markdown(result: DrFailoverResult, command: str) -> str:
    lag = result.lag
    lag_text = (
        f"p50 {lag['p50'] * 1000:.0f} ms, p99 {lag['p99'] * 1000:.0f} ms, "
        f"max {lag['max'] * 1000:.0f} ms ({lag['samples']} markers)"
        if lag.get("samples")
        else "no samples"
    )
    serving = f"{result.serving_after:.1f} s" if result.serving_after is not None else "never"
    return "\n".join(
        [
            DR_START,
            f"Last run: {provenance()}.",
            "",
            "```sh",
            *([f"{wrapper}   # runs:"] if (wrapper := os.environ.get("CHAOS_COMMAND")) else []),
            command,
            "```",
            "",
            "| acked writes | indeterminate | lost within the lag bound | lost before it | "
            "lag bound | replication lag | DR last_remote_wal at promotion "
            "(primary's last sampled last_wal) | "
            "kill -> promoted site serving | verdict |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {result.report.acknowledged} | {result.report.indeterminate} | "
            f"{len(result.losses.recent)} | {len(result.losses.old)} | {result.lag_bound:g} s | "
            f"{lag_text} | {result.dr_last_remote_wal} ({result.primary_last_wal}) | "
            f"{serving} | {'OK' if result.ok else 'FAILED'} |",
            DR_END,
        ]
    )


def dr_main(args: argparse.Namespace, argv: list[str]) -> int:
    """``python -m chaos.compose dr-failover``: up (``--up``), run, record, down (``--down``)."""
    project = args.project if args.project != "coffer-chaos" else "coffer-repl-chaos"
    pair = ReplicationPair(project=project)
    result: DrFailoverResult | None = None
    try:
        if args.up and not _running(pair):
            pair.env = replication_port_env()
            pair.primary.env = pair.dr.env = pair.env
            ready = pair.up(build=not args.no_build)
            print(pair.summary(ready), flush=True)
        settings = DrSettings(
            warmup=args.warmup * 3,
            keys=max(args.keys, 16),
            writers=args.writers,
            readers=args.readers,
            lag_bound=args.lag_bound,
        )
        print("\n>> dr-failover", flush=True)
        result = run_dr_failover(pair, settings, args.out)
        print(result.summary(), flush=True)
    except (ClusterError, OSError, subprocess.CalledProcessError) as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.down:
            pair.down()
    if args.record:
        command = "python -m chaos.compose " + shlex.join(argv)
        replace_block(args.record, dr_markdown(result, command), DR_START, DR_END)
        print(f"\nresult recorded in {args.record}")
    if args.json:
        args.json.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return 0 if result.ok else 1


def _running(pair: ReplicationPair) -> bool:
    services = [*pair.primary.nodes, pair.primary.lb, *pair.dr.nodes, pair.dr.lb]
    try:
        return all(pair.primary.container_state(s).get("Running") for s in services)
    except ClusterError:
        return False
