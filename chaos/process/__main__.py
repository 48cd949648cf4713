"""``python -m chaos process SCENARIO [options]``: faults against real ``coffer server`` processes.

Each scenario gets a fresh N-node cluster on loopback (init node 1, unseal, the others
retry_join and are unsealed), a client load over every node, one fault, recovery
(restarted nodes come back sealed and are unsealed with the keys from init), and a
check of the history: every acknowledged write still there, no strong read going
back, every node a Raft member and serving. Scenarios: kill-active,
partition-leader (needs root and iptables), restart-follower, rolling-restart,
restart-all; the healing suite partition-active, partition-follower, flap-link
(these three need root and iptables), restart-behind, freeze-active; ``suite`` for
those five, ``all`` for every one. Each fault is also measured (write
unavailability, leadership changes after the heal, catch-up, staleness) and held to
the thresholds (``--max-*``; ``--report-only`` reports without failing). Prints a
summary per scenario (``--json``: one JSON document instead; ``--markdown``: a
results table as well); exits 1 if any scenario lost a write, saw a regression,
did not get every node back or missed a threshold, 2 on bad usage, 130 on Ctrl-C.
Node processes and iptables rules are removed on every exit path.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
from pathlib import Path
from types import FrameType

from chaos.checker import Thresholds
from chaos.measures import FaultMeasures
from chaos.process.context import Settings
from chaos.process.firewall import iptables_available
from chaos.process.runner import ScenarioResult, run_scenario
from chaos.process.scenarios import SCENARIOS
from chaos.process.suite import SUITE
from chaos.record import provenance, replace_block

#: Where ``--record`` puts its block.
START, END = "<!-- chaos-process-results:start -->", "<!-- chaos-process-results:end -->"

#: Scenarios that cut links with iptables (root only).
FIREWALLED = {"partition-leader", "partition-active", "partition-follower", "flap-link"}

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m chaos process",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario", choices=[*SCENARIOS, "suite", "all"])
    parser.add_argument("--nodes", type=int, default=3, help="cluster size (default 3)")
    parser.add_argument(
        "--duration", type=float, default=20.0, help="seconds of client load (default 20)"
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep node data, logs and history here (default: a temp dir)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--seed", type=int, help="fault timing and target (default: the clock)")
    parser.add_argument("--keys", type=int, default=4, help="keys written, one writer each")
    parser.add_argument("--readers", type=int, default=2, help="reader threads")
    parser.add_argument(
        "--strict-reads",
        action="store_true",
        help="count stale reads served by a cut-off leader that still claims to be active "
        "as regressions (by default they are reported, not counted)",
    )
    parser.add_argument(
        "--hold", type=float, help="seconds each fault is held (default: per scenario)"
    )
    parser.add_argument(
        "--observe", type=float, default=15.0, help="seconds watched after a heal (default 15)"
    )
    parser.add_argument(
        "--client-timeout", type=float, default=2.0,
        help="seconds a client waits for one request before moving on (default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--behind", type=int, default=20_000, help="restart-behind: entries the log moves on"
    )
    default = Thresholds()
    parser.add_argument(
        "--max-unavailable", type=float, default=default.unavailable_seconds,
        help="bound on the longest write gap overlapping a fault, seconds (default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--max-leader-changes", type=int, default=default.leader_changes_after_heal,
        help="bound on active-node changes after a heal (default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--max-catch-up", type=float, default=default.catch_up_seconds,
        help="bound on seconds until every node caught up after a heal (default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--max-staleness", type=float, default=default.staleness_seconds,
        help="bound on how old an any-node read may be, seconds: the cluster's configured "
        "standby staleness bound (default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--report-only", action="store_true", help="measure the thresholds without failing on them"
    )
    parser.add_argument(
        "--raft-option", action="append", default=[], metavar="LINE",
        help='a line added to every node\'s storage "raft" block (repeatable)',
    )  # fmt: skip
    parser.add_argument(
        "--markdown", action="store_true", help="print a results table (markdown) at the end"
    )
    parser.add_argument(
        "--record", type=Path, metavar="FILE",
        help="write the results table, with this command, between the markers in FILE",
    )  # fmt: skip
    return parser


def results_block(results: list[ScenarioResult], command: str, settings: Settings) -> str:
    """What ``--record`` writes: when, at which commit, the command, the table, what failed."""
    notes = [
        f"- {r.scenario}: {note}"
        for r in results
        for note in [*r.report.threshold_failures, *([r.error] if r.error else [])]
    ]
    lines = [
        START,
        f"Last run: {provenance()}; {settings.nodes} nodes, {settings.duration:g} s of load, "
        f"{settings.keys} writers and {settings.readers} readers, {settings.observe:g} s "
        "watched after each heal.",
        "",
        "```sh",
        command,
        "```",
        "",
        markdown_table(results),
    ]
    if notes:
        lines += ["", *notes]
    lines.append(END)
    return "\n".join(lines)


def markdown_table(results: list[ScenarioResult]) -> str:
    """One row per fault: the measures, the safety counts and the verdict."""
    lines = [
        "| scenario | acked writes | lost | regressions | deposed reads | write gap in fault "
        "| leader changes after heal | all caught up after | oldest any-node read | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rep = r.report
        measured: list[FaultMeasures | None] = [*rep.faults] or [None]
        for m in measured:
            gap = "—" if m is None else f"{m.unavailable_seconds:.2f} s"
            changes = "—" if m is None else str(m.leader_changes_after_heal)
            caught = (
                "—"
                if m is None
                else ("never" if m.catch_up_seconds is None else f"{m.catch_up_seconds:.2f} s")
            )
            stale = rep.max_staleness if m is None else m.max_staleness
            lines.append(
                f"| {r.scenario} | {rep.acknowledged} | {r.lost} | {r.regressions} | "
                f"{len(r.deposed)} | {gap} | {changes} | {caught} | {stale:.2f} s | {r.verdict} |"
            )
    return "\n".join(lines)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # runs the same clean-up as Ctrl-C


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.nodes < 3:
        print("chaos: --nodes must be at least 3 (a majority outlives the fault)", file=sys.stderr)
        return 2
    if args.scenario == "all":
        names = list(SCENARIOS)
    elif args.scenario == "suite":
        names = list(SUITE)
    else:
        names = [args.scenario]
    settings = Settings(
        nodes=args.nodes,
        duration=args.duration,
        keys=args.keys,
        readers=args.readers,
        seed=args.seed,
        strict_reads=args.strict_reads,
        workdir=args.workdir.resolve() if args.workdir else None,
        fault_seconds=args.hold,
        observe=args.observe,
        behind=args.behind,
        client_timeout=args.client_timeout,
        thresholds=Thresholds(
            unavailable_seconds=args.max_unavailable,
            leader_changes_after_heal=args.max_leader_changes,
            catch_up_seconds=args.max_catch_up,
            staleness_seconds=args.max_staleness,
        ),
        enforce_thresholds=not args.report_only,
        extra_raft="".join(f"  {line}\n" for line in args.raft_option),
    )
    signal.signal(signal.SIGTERM, _terminate)
    results: list[ScenarioResult] = []
    try:
        for name in names:
            if name in FIREWALLED and not (usable := iptables_available())[0]:
                print(f"chaos: skipping {name}: {usable[1]}", file=sys.stderr)
                continue
            if not args.json:
                print(f">> {name}: {settings.nodes} nodes, {settings.duration:g}s", flush=True)
            result = run_scenario(name, settings)
            results.append(result)
            if not args.json:
                print(result.summary() + "\n", flush=True)
    except KeyboardInterrupt:
        print("chaos: interrupted; nodes stopped and iptables rules removed", file=sys.stderr)
        return 130
    failed = [r.scenario for r in results if not r.ok]
    if args.markdown:
        print(markdown_table(results), file=sys.stderr if args.json else sys.stdout)
    if args.record and results:
        command = "python -m chaos process " + shlex.join(sys.argv[1:] if argv is None else argv)
        replace_block(args.record, results_block(results, command, settings), START, END)
    if args.json:
        print(json.dumps({"ok": not failed, "results": [r.to_dict() for r in results]}, indent=2))
    else:
        print(
            f"{len(results) - len(failed)}/{len(results)} scenarios OK"
            + (f"; failed: {', '.join(failed)}" if failed else "")
        )
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
