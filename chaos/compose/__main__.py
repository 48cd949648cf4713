"""``python -m chaos.compose SCENARIO... [options]``: container chaos against the compose cluster.

Scenarios: kill-active, pause-active, disconnect-active, rolling-restart, full-restart,
or ``all``; the healing suite partition-active, partition-follower, restart-behind,
flap-link, freeze-active, or ``suite`` (each fault measured and held to the
thresholds, ``--max-*``; ``--report-only`` measures without failing). With ``--up``
the cluster is built and started first (project ``coffer-chaos`` on free 127.0.0.1
ports unless it is already running); ``--down`` removes it afterwards. ``--record
docs/chaos.md`` writes the results table, with this command line, between the
markers in that file. Exits 1 if any scenario lost an acknowledged write, saw a
regression, did not get every node back, or (suite) missed a threshold.

``dr-failover`` runs alone, against the two sites of ``deploy/compose.replication.yaml``
(project ``coffer-repl-chaos``): :mod:`chaos.compose.dr_failover`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from chaos.checker import Thresholds
from chaos.compose.dr_failover import LAG_BOUND, dr_main
from chaos.compose.scenarios import SCENARIOS, RunSettings, ScenarioResult, run_scenario
from chaos.compose.suite import SUITE
from chaos.record import provenance, replace_block
from deploy.clusterctl import NODES, STATE_DIR, ClusterError, ComposeCluster, free_port_env

START, END = "<!-- chaos-results:start -->", "<!-- chaos-results:end -->"


def is_running(cluster: ComposeCluster) -> bool:
    try:
        return all(cluster.container_state(s).get("Running") for s in (*NODES, "lb"))
    except ClusterError:
        return False


def results_markdown(results: list[ScenarioResult], command: str, settings: RunSettings) -> str:
    lines = [
        START,
        f"Last run: {provenance()}, "
        f"fault held {settings.duration:g}s (suite: {settings.hold or 'default'}), "
        f"{settings.writers} writers and "
        f"{settings.readers} readers on {settings.keys} keys.",
        "",
        "```sh",
        *([f"{os.environ['CHAOS_COMMAND']}   # runs:"] if os.environ.get("CHAOS_COMMAND") else []),
        command,
        "```",
        "",
        "| scenario | ops | acked writes | indeterminate | lost | regressions | late writes | "
        "stale any-node reads | longest without a write | first write after fault | "
        "recovered after | nodes back | write gap in fault | leader changes after heal | "
        "all caught up after | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rep = r.report
        first = f"{r.first_write_after_fault:.2f} s" if r.first_write_after_fault else "—"
        recovered = f"{r.recovery_seconds:.1f} s" if r.recovery_seconds is not None else "—"
        stale = f"{rep.stale_reads} (≤ {rep.max_staleness:.2f} s)" if rep.stale_reads else "0"
        late = f"{rep.late_writes} (≤ {rep.max_late_delay:.1f} s)" if rep.late_writes else "0"
        gap, changes, caught = "—", "—", "—"
        if rep.faults:
            m = rep.faults[0]
            gap = f"{m.unavailable_seconds:.2f} s"
            changes = str(m.leader_changes_after_heal)
            caught = "never" if m.catch_up_seconds is None else f"{m.catch_up_seconds:.2f} s"
        verdict = "OK" if r.ok else ("FAILED" if not r.safe else "thresholds not met")
        lines.append(
            f"| {r.scenario} | {rep.operations} | {rep.acknowledged} | {rep.indeterminate} | "
            f"{rep.lost} | {rep.regressions} | {late} | {stale} | "
            f"{rep.unavailable_seconds:.2f} s | "
            f"{first} | {recovered} | {'yes' if r.nodes_back else 'no'} | "
            f"{gap} | {changes} | {caught} | {verdict} |"
        )
    failures = [f for r in results for f in r.report.findings[:5]]
    errors = [f"{r.scenario}: {r.error}" for r in results if r.error]
    missed = [f"{r.scenario}: {f}" for r in results for f in r.report.threshold_failures]
    if failures or errors or missed:
        lines += ["", "Findings:", ""]
        lines += [f"- {f.kind} `{f.key}`: {f.detail}" for f in failures]
        lines += [f"- error {e}" for e in errors]
        lines += [f"- threshold not met: {m}" for m in missed]
    lines.append(END)
    return "\n".join(lines)


def record(path: Path, block: str) -> None:
    replace_block(path, block, START, END)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m chaos.compose", description=__doc__)
    parser.add_argument(
        "scenarios",
        nargs="+",
        choices=[*SCENARIOS, *SUITE, "all", "suite", "dr-failover"],
        metavar="SCENARIO",
    )
    parser.add_argument("-p", "--project", default=os.environ.get("COFFER_PROJECT", "coffer-chaos"))
    parser.add_argument("--up", action="store_true", help="build and start the cluster first")
    parser.add_argument("--no-build", action="store_true", help="with --up: reuse the images")
    parser.add_argument("--down", action="store_true", help="remove the cluster afterwards")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds the fault lasts")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--hold", type=float, help="suite: seconds a fault is held")
    parser.add_argument("--observe", type=float, default=15.0, help="suite: seconds after a heal")
    parser.add_argument("--behind", type=int, default=20_000, help="restart-behind: entries")
    default = Thresholds()
    parser.add_argument("--max-unavailable", type=float, default=default.unavailable_seconds)
    parser.add_argument("--max-leader-changes", type=int, default=default.leader_changes_after_heal)
    parser.add_argument("--max-catch-up", type=float, default=default.catch_up_seconds)
    parser.add_argument(
        "--max-staleness", type=float, default=default.staleness_seconds,
        help="oldest any-node read allowed: the cluster's standby staleness bound",
    )  # fmt: skip
    parser.add_argument("--report-only", action="store_true", help="do not fail on thresholds")
    parser.add_argument("--record", type=Path, help="write the results table into this file")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument(
        "--out", type=Path, default=STATE_DIR / "chaos", help="where histories go (JSON lines)"
    )
    parser.add_argument(
        "--lag-bound", type=float, default=LAG_BOUND,
        help="dr-failover: seconds before the kill within which a lost write is allowed",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if "dr-failover" in args.scenarios:
        if args.scenarios != ["dr-failover"]:
            parser.error("dr-failover runs alone (it needs deploy/compose.replication.yaml)")
        return dr_main(args, argv)
    names = [
        name
        for arg in args.scenarios
        for name in (SCENARIOS if arg == "all" else SUITE if arg == "suite" else [arg])
    ]
    settings = RunSettings(
        duration=args.duration,
        warmup=args.warmup,
        settle=args.settle,
        keys=args.keys,
        writers=args.writers,
        readers=args.readers,
        hold=args.hold,
        observe=args.observe,
        behind=args.behind,
        thresholds=Thresholds(
            unavailable_seconds=args.max_unavailable,
            leader_changes_after_heal=args.max_leader_changes,
            catch_up_seconds=args.max_catch_up,
            staleness_seconds=args.max_staleness,
        ),
        enforce_thresholds=not args.report_only,
    )

    cluster = ComposeCluster(project=args.project)
    results: list[ScenarioResult] = []
    try:
        if args.up and not is_running(cluster):
            cluster.env = free_port_env()
            ready = cluster.up(build=not args.no_build)
            print(cluster.summary(ready), flush=True)
        for name in names:
            hold = settings.hold if name in SUITE else settings.duration
            held = "its default" if hold is None else f"{hold:g}s"
            print(f"\n>> {name} (fault held {held})", flush=True)
            result = run_scenario(cluster, name, settings, args.out)
            print(result.summary(), flush=True)
            results.append(result)
    except (ClusterError, OSError, subprocess.CalledProcessError) as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.down:
            cluster.down()
    if args.record and results:
        command = "python -m chaos.compose " + shlex.join(argv)
        record(args.record, results_markdown(results, command, settings))
        print(f"\nresults recorded in {args.record}")
    if args.json:
        args.json.write_text(json.dumps([r.to_dict() for r in results], indent=2) + "\n")
    failed = [r.scenario for r in results if not r.ok]
    print(
        f"\n{len(results) - len(failed)}/{len(results)} scenarios OK"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed or len(results) < len(names) else 0


if __name__ == "__main__":
    sys.exit(main())
