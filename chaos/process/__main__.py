"""``python -m chaos process SCENARIO [options]``: faults against real ``coffer server`` processes.

Each scenario gets a fresh N-node cluster on loopback (init node 1, unseal, the others
retry_join and are unsealed), a client load over every node, one fault, recovery
(restarted nodes come back sealed and are unsealed with the keys from init), and a
check of the history: every acknowledged write still there, no strong read going
back, every node a Raft member and serving. Scenarios: kill-active,
partition-leader (needs root and iptables), restart-follower, rolling-restart,
restart-all, or ``all``. Prints a summary per scenario (``--json``: one JSON
document instead); exits 1 if any scenario lost a write, saw a regression or did
not get every node back, 2 on bad usage, 130 on Ctrl-C. Node processes and
iptables rules are removed on every exit path.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from types import FrameType

from chaos.process.context import Settings
from chaos.process.firewall import iptables_available
from chaos.process.runner import ScenarioResult, run_scenario
from chaos.process.scenarios import SCENARIOS

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m chaos process",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario", choices=[*SCENARIOS, "all"])
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
    return parser


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # runs the same clean-up as Ctrl-C


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.nodes < 3:
        print("chaos: --nodes must be at least 3 (a majority outlives the fault)", file=sys.stderr)
        return 2
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    settings = Settings(
        nodes=args.nodes,
        duration=args.duration,
        keys=args.keys,
        readers=args.readers,
        seed=args.seed,
        strict_reads=args.strict_reads,
        workdir=args.workdir.resolve() if args.workdir else None,
    )
    signal.signal(signal.SIGTERM, _terminate)
    results: list[ScenarioResult] = []
    try:
        for name in names:
            if name == "partition-leader" and not (usable := iptables_available())[0]:
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
