"""Markdown tables for ``docs/performance.md`` from measurement records."""

from __future__ import annotations

import math
import re
import statistics
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "commands",
    "fmt",
    "goals",
    "headline",
    "measurements",
    "nodes",
    "perfpass",
    "profiles",
    "ratios",
    "secrets",
]

Record = dict[str, Any]

_VIEW = {
    "node": "direct",
    "active": "active node",
    "standbys": "reads: perf standbys",
    "lb": "HAProxy (compose cfg)",
    "leader": "leader",
    "followers": "reads: followers",
}


def fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def _table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _errors(record: Record) -> str:
    errors = record.get("errors") or {}
    return ", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) or "0"


def _rss(record: Record) -> str:
    return " / ".join(fmt(v, 0) for v in record.get("server_peak_rss_mib", []))


def _cpu_per_op_us(record: Record) -> float | None:
    """Server CPU time per operation: less sensitive to other load than ops/s."""
    ops = record.get("ops") or 0
    return 1e6 * record["server_cpu_s"] / ops if ops else None


def _row(record: Record, first: str) -> list[str]:
    return [
        first,
        _VIEW.get(record["view"], record["view"]),
        record["workload_label"] or record["workload"],
        str(record["concurrency"]),
        fmt(record["throughput"], 0),
        fmt(record["p50_ms"], 2),
        fmt(record["p90_ms"], 2),
        fmt(record["p99_ms"], 2),
        fmt(record["max_ms"], 1),
        _errors(record),
        fmt(record["server_cpu_pct"], 0),
        fmt(_cpu_per_op_us(record), 0),
        fmt(100 * record["client_cpu_s"] / record["seconds"], 0),
        fmt(record.get("other_cpu_pct"), 0),
        _rss(record),
    ]


_HEADER = [
    "target",
    "via",
    "workload",
    "c",
    "ops/s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "max ms",
    "errors",
    "server CPU %",
    "server CPU µs/op",
    "client CPU %",
    "other CPU %",
    "peak RSS MiB",
]


def measurements(records: list[Record]) -> str:
    return _table(_HEADER, (_row(r, r["label"]) for r in records))


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def perfpass(records: list[Record]) -> str:
    """Medians over the interleaved rounds, the spread of ops/s, and the codec alone."""
    groups: dict[tuple[str, str, int], list[Record]] = {}
    micro = [r for r in records if r.get("micro")]
    for r in records:
        if not r.get("micro"):
            groups.setdefault((r["workload"], r["label"], r["concurrency"]), []).append(r)
    header = [
        "workload",
        "c",
        "server",
        "runs",
        "ops/s (median)",
        "ops/s (min to max)",
        "p50 ms",
        "p99 ms",
        "server CPU µs/op",
    ]
    rows = []
    for (name, label, c), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][2])):
        ops = [float(r["throughput"]) for r in group]
        cpu = [v for v in (_cpu_per_op_us(r) for r in group) if v is not None]
        rows.append(
            [
                group[0]["workload_label"] or name,
                str(c),
                label,
                str(len(group)),
                fmt(_median(ops), 0),
                f"{fmt(min(ops), 0)} to {fmt(max(ops), 0)}",
                fmt(_median([float(r["p50_ms"]) for r in group]), 2),
                fmt(_median([float(r["p99_ms"]) for r in group]), 2),
                fmt(_median(cpu), 0),
            ]
        )
    out = _table(header, rows)
    if micro:
        out += "\nThe JSON codec alone, per call (best of 5 runs of 20,000, in this process):\n\n"
        out += _table(
            ["operation", "bytes", "stdlib µs", "orjson µs", "saved µs"],
            (
                [
                    m["what"],
                    str(m["bytes"]),
                    fmt(m["stdlib_us"], 2),
                    fmt(m["orjson_us"], 2),
                    fmt(m["stdlib_us"] - m["orjson_us"], 2),
                ]
                for m in micro
            ),
        )
    return out


def nodes(records: list[Record]) -> str:
    header = ["cluster", "c", "writes/s", "p50 ms", "p90 ms", "p99 ms", "errors", "CPU %", "RSS"]
    rows = [
        [
            r["target"],
            str(r["concurrency"]),
            fmt(r["throughput"], 0),
            fmt(r["p50_ms"], 2),
            fmt(r["p90_ms"], 2),
            fmt(r["p99_ms"], 2),
            _errors(r),
            fmt(r["server_cpu_pct"], 0),
            _rss(r),
        ]
        for r in records
    ]
    return _table(header, rows)


def secrets(records: list[Record]) -> str:
    header = [
        "target",
        "secrets",
        "load writes/s",
        "start → unsealed s",
        "start → ready s",
        "RSS after load MiB",
        "RSS after restart MiB",
        "data on disk MiB",
    ]
    rows = [
        [
            r["target"],
            f"{r['secrets']:,}",
            fmt(r["load_writes_per_s"], 0),
            fmt(r["start_to_unsealed_s"], 2),
            fmt(r["start_to_ready_s"], 2),
            " / ".join(fmt(v, 0) for v in r["rss_after_load_mib"]),
            " / ".join(fmt(v, 0) for v in r["rss_after_start_mib"])
            if r["start_to_ready_s"]
            else "—",
            fmt(r["disk_mib"], 0) if not r["target"].endswith("inmem") else "—",
        ]
        for r in records
    ]
    return _table(header, rows)


def profiles(records: list[Record]) -> str:
    out = []
    for r in records:
        summary = r["summary"]
        out.append(
            f"**{r['workload_label']}, {r.get('where', 'one node')}, "
            f"concurrency {r['concurrency']}**: "
            f"{fmt(r['throughput'], 0)} ops/s while sampled, "
            f"{summary.get('samples', 0):,} "
            f"{'samples of the GIL holder' if r.get('gil') else 'busy-thread samples'}"
            " at 250 Hz.\n"
        )
        rows = []
        areas, selfs, totals = summary["areas"], summary["self"], summary["total"]
        for i in range(12):
            rows.append(
                [
                    f"{areas[i]['name']} {fmt(areas[i]['pct'])}" if i < len(areas) else "",
                    f"`{selfs[i]['name']}` {fmt(selfs[i]['pct'])}" if i < len(selfs) else "",
                    f"`{totals[i]['name']}` {fmt(totals[i]['pct'])}" if i < len(totals) else "",
                ]
            )
        out.append(_table(["self % by area", "self % by function", "inclusive %"], rows))
    return "\n".join(out)


#: Sections left out of the one-measurement-per-row tables: the before/after rows
#: measure old code, and the goals' alternated pairs are summarised by ``goals``.
_NOT_THIS_RUNS_ROWS = ("perfpass", "goals")

#: What one measurement is of: (target, view, workload, concurrency).
Series = tuple[str, str, str, int]


def _is(record: Record, series: Series) -> bool:
    target, view, workload, c = series
    return (
        record.get("target") == target
        and record.get("view") == view
        and record.get("workload") == workload
        and record.get("concurrency") == c
    )


def _find(records: list[Record], target: str, view: str, workload: str, c: int) -> Record | None:
    for r in reversed(records):
        if r.get("section") not in _NOT_THIS_RUNS_ROWS and _is(r, (target, view, workload, c)):
            return r
    return None


def _pairs(records: list[Record], a: Series, b: Series) -> list[tuple[Record, Record]]:
    """The goals section's alternated pairs: the i-th measurement of ``a`` with the
    i-th of ``b`` (measured within a minute of each other)."""
    goals = [r for r in records if r.get("section") == "goals"]
    return list(zip([r for r in goals if _is(r, a)], [r for r in goals if _is(r, b)], strict=False))


def _throughput(record: Record) -> float:
    return float(record["throughput"])


def _ops(record: Record | None) -> float | None:
    return None if record is None else _throughput(record)


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or not b:
        return "—"
    return f"{a / b:.2f}"


_COMPARE = [
    ("coffer-inmem", "node", "one node, inmem", "leader"),
    ("coffer-file", "node", "one node, file", "leader"),
    ("coffer-raft3", "active", "3 nodes, active", "leader"),
    ("coffer-raft3", "standbys", "3 nodes, reads on standbys", "followers"),
    ("coffer-raft3", "lb", "3 nodes, via HAProxy", "leader"),
]


def ratios(records: list[Record]) -> str:
    header = [
        "workload",
        "c",
        "Coffer",
        "Coffer ops/s",
        "etcd3 ops/s (same path)",
        "Coffer / etcd",
        "ceiling ops/s",
        "Coffer / ceiling",
    ]
    rows = []
    for workload in ("kv2-read", "kv2-write", "mixed-90-10"):
        ceiling_workload = "kv2-write" if workload == "kv2-write" else "kv2-read"
        for c in (1, 32):
            ceiling = _ops(_find(records, "ceiling", "node", ceiling_workload, c))
            for target, view, label, etcd_view in _COMPARE:
                coffer = _ops(_find(records, target, view, workload, c))
                if coffer is None:
                    continue
                etcd_record = _find(records, "etcd3", etcd_view, workload, c)
                etcd_record = etcd_record or _find(records, "etcd3", "leader", workload, c)
                etcd = _ops(etcd_record)
                rows.append(
                    [
                        workload,
                        str(c),
                        label,
                        fmt(coffer, 0),
                        fmt(etcd, 0) + (f" ({etcd_record['view']})" if etcd_record else ""),
                        _ratio(coffer, etcd),
                        fmt(ceiling, 0),
                        _ratio(coffer, ceiling),
                    ]
                )
    return _table(header, rows)


#: ``coffer-file`` KV v2 writes/s at c=32 before group commit in the run issue 16 quotes
#: (another machine): the goal's divisor only when the run has no pairs with that code.
FILE_WRITES_BEFORE_GROUP_COMMIT = 322.0


def _p50(record: Record) -> float:
    return float(record["p50_ms"])


def _goal_ratio(
    records: list[Record],
    a: Series,
    b: Series,
    measure: Callable[[Record], float] = _throughput,
    unit: str = "ops/s",
) -> tuple[float | None, str]:
    """``a`` over ``b``: the median of the goals section's alternated pairs when the
    run has them (one pair moves by as much as a goal's margin on a shared machine),
    else the one measurement of each."""
    pairs = [(x, y) for x, y in _pairs(records, a, b) if measure(y)]
    if pairs:
        ratios = [measure(x) / measure(y) for x, y in pairs]
        listed = ", ".join(fmt(r, 2) for r in ratios)
        return statistics.median(ratios), f"median of {len(ratios)} alternated pairs: {listed}"
    x, y = _find(records, *a), _find(records, *b)
    mx = None if x is None else measure(x)
    my = None if y is None else measure(y)
    value = mx / my if mx is not None and my else None
    digits = 2 if unit == "ms" else 0
    return value, f"{fmt(mx, digits)} / {fmt(my, digits)} {unit}"


def _goal_rows(records: list[Record]) -> list[list[str]]:
    """Issue 16's goals, each from records of one run (ratios, so the machine cancels out)."""

    def row(name: str, target: str, value: float | None, detail: str, met: bool) -> list[str]:
        return [name, target, fmt(value, 2), detail, "—" if value is None else _met(met)]

    write3: Series = ("coffer-raft3", "active", "kv2-write", 32)
    put3: Series = ("etcd3", "leader", "kv2-write", 32)
    read1: Series = ("coffer-inmem", "node", "kv2-read", 32)
    rows = []
    r3, detail = _goal_ratio(records, write3, put3)
    rows.append(
        row(
            "3-node KV v2 write / 3-node etcd put (c=32)",
            "≥ 1",
            r3,
            detail,
            r3 is not None and r3 >= 1.0,
        )
    )
    write_c1: Series = ("coffer-raft3", "active", "kv2-write", 1)
    put_c1: Series = ("etcd3", "leader", "kv2-write", 1)
    p50_ratio, detail = _goal_ratio(records, write_c1, put_c1, _p50, "ms")
    rows.append(
        row(
            "3-node single-writer write p50 / etcd put p50 (c=1)",
            "≤ 1.5",
            p50_ratio,
            detail,
            p50_ratio is not None and p50_ratio <= 1.5,
        )
    )
    write5: Series = ("coffer-raft5", "active", "kv2-write", 32)
    r5, detail5 = _goal_ratio(records, write5, ("etcd5", "leader", "kv2-write", 32))
    rows.append(
        row(
            "5-node KV v2 write / 5-node etcd put (c=32)",
            "≥ 0.9 x the 3-node ratio",
            r5,
            detail5,
            r5 is not None and r3 is not None and r5 >= 0.9 * r3,
        )
    )
    rr, detail = _goal_ratio(records, read1, ("etcd3", "leader", "kv2-read", 32))
    rows.append(
        row(
            "1-node KV v2 read / etcd serializable range (c=32)",
            "≥ 1",
            rr,
            detail,
            rr is not None and rr >= 1.0,
        )
    )
    rc, detail = _goal_ratio(records, read1, ("ceiling", "node", "kv2-read", 32))
    rows.append(
        row(
            "1-node KV v2 read / aiohttp ceiling (c=32)",
            "≥ 0.5",
            rc,
            detail,
            rc is not None and rc >= 0.5,
        )
    )
    file_write: Series = ("coffer-file", "node", "kv2-write", 32)
    before: Series = ("coffer-file-before", "node", "kv2-write", 32)
    file_ops = _ops(_find(records, *file_write))
    # The issue's own figure, from another machine: the divisor only without pairs.
    gain_322 = file_ops / FILE_WRITES_BEFORE_GROUP_COMMIT if file_ops is not None else None
    if _pairs(records, file_write, before):
        gain, detail = _goal_ratio(records, file_write, before)
        name = "`file` KV v2 writes (c=32) / the code before group commit"
        if file_ops is not None:
            detail += f"; {fmt(file_ops, 0)} ops/s = {fmt(gain_322, 2)} x 322"
    else:
        gain, detail = gain_322, f"{fmt(file_ops, 0)} ops/s"
        name = "`file` KV v2 writes (c=32) / 322 before group commit"
    rows.append(row(name, "≥ 5", gain, detail, gain is not None and gain >= 5.0))
    read_c1 = _find(records, "coffer-inmem", "node", "kv2-read", 1)
    p99 = None if read_c1 is None else float(read_c1["p99_ms"])
    rows.append(
        row(
            "p99 ms, single-client KV v2 read (inmem)",
            "< 2",
            p99,
            "",
            p99 is not None and p99 < 2.0,
        )
    )
    return rows


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def goals(records: list[Record]) -> str:
    return _table(["goal", "target", "measured", "from", "met"], _goal_rows(records))


def headline(records: list[Record]) -> str:
    """The goals with the figures they come from (the README repeats this block)."""
    return _table(["goal", "target", "measured", "from", "met"], _goal_rows(records))


def _clean(command: str) -> str:
    command = command.replace(sys.executable, ".venv/bin/python")
    return re.sub(r"/tmp/bench-[^/\s]+", "$WORK", command)


def commands(records: list[Record]) -> str:
    seen: dict[str, str] = {}
    for r in records:
        command = r.get("target_info", {}).get("command")
        if command and r["label"] not in seen:
            seen[r["label"]] = _clean(command)
    lines = []
    for label, command in seen.items():
        lines.append(f"- **{label}**:")
        lines.append("  ```")
        lines += [f"  {part.strip()}" for part in command.split(" ; ")]
        lines.append("  ```")
    return "\n".join(lines) + "\n"
