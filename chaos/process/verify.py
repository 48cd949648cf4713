"""Checks on top of :func:`chaos.checker.check`, for what the process runner knows more of.

* **Isolated acknowledgements.** A node whose Raft IP is cut off cannot get an
  entry onto a majority, so it must not acknowledge a write sent to it while it
  is cut off (it may fail or time out: indeterminate). Only answers that also
  came before the heal count: once healed, the node may legitimately forward a
  pending request to the new active node.
* **Deposed-leader reads.** A leader cut off from the majority keeps claiming to
  be active (``sys/health`` 200, replies with ``X-Coffer-Index``) until it steps
  down (1.5 s), while the majority elects a new leader within 0.25-0.6 s and
  acknowledges writes the old one never sees. Reads it serves in that window can
  be older than an acknowledged write. Coffer documents reads as not
  linearizable (no lease or ReadIndex), so by default such reads are not the
  active node's: :func:`demote_deposed_reads` turns them into any-node reads
  (stale, reported) and counts them; ``strict`` leaves them strong, where the
  checker counts a stale one as a regression.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from collections.abc import Iterable

from chaos.checker import ANY, STRONG, Finding, Op

__all__ = ["Isolation", "demote_deposed_reads", "isolated_acks"]

#: (node name, cut off at, healed at), in run seconds.
Isolation = tuple[str, float, float]


def isolated_acks(ops: Iterable[Op], isolations: Iterable[Isolation]) -> list[Finding]:
    """Writes a cut-off node acknowledged although they were sent to it while cut off."""
    windows = list(isolations)
    findings = []
    for op in ops:
        if op.kind != "write" or not op.ok:
            continue
        for node, start, end in windows:
            if op.node == node and start <= op.start and op.end <= end:
                findings.append(
                    Finding(
                        "isolated-ack",
                        op.key,
                        f"{node} acknowledged value {op.value} at t={op.end:.3f}s although "
                        f"its Raft links were cut from t={start:.3f}s to t={end:.3f}s",
                        op.id,
                    )
                )
    return findings


def _cut_off(op: Op, isolations: list[Isolation]) -> bool:
    return any(op.node == node and start <= op.start < end for node, start, end in isolations)


def demote_deposed_reads(
    ops: Iterable[Op], isolations: Iterable[Isolation], *, strict: bool = False
) -> tuple[list[Op], list[Finding]]:
    """(the ops to check, one ``deposed-read`` finding per such read that was stale).

    Strong reads a cut-off node served while cut off become any-node reads unless
    ``strict``; either way every stale one is listed (value older than a write
    acknowledged before the read was sent)."""
    ops = list(ops)
    windows = list(isolations)
    acked: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for op in ops:
        if op.kind == "write" and op.ok:
            acked[op.key].append((op.end, op.order))
    floors: dict[str, tuple[list[float], list[int]]] = {}
    for key, points in acked.items():
        points.sort()
        best, ends, values = 0, [], []
        for end, value in points:
            best = max(best, value)
            ends.append(end)
            values.append(best)
        floors[key] = (ends, values)
    checked, findings = [], []
    for op in ops:
        if op.kind == "read" and op.consistency == STRONG and op.ok and _cut_off(op, windows):
            ends, values = floors.get(op.key, ([], []))
            index = bisect.bisect_left(ends, op.start)
            floor = values[index - 1] if index else 0
            if op.order < floor:
                findings.append(
                    Finding(
                        "deposed-read",
                        op.key,
                        f"{op.node}, cut off but still claiming to be active, answered "
                        f"{op.value} (order {op.order}) at t={op.start:.3f}s; order {floor} "
                        "had been acknowledged",
                        op.id,
                    )
                )
            if not strict:
                op = dataclasses.replace(op, consistency=ANY)
        checked.append(op)
    return checked, findings
