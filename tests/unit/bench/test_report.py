"""The benchmark harness's arithmetic and its rewriting of docs/performance.md.

No speed is asserted here: these check that the figures `make bench` publishes are
computed and placed correctly from given records.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from bench import plan, report, tables
from bench.stats import percentile, summarise

META = {
    "suite": "standard",
    "command": "python -m bench.run --suite standard",
    "machine": {"cpu": "Test CPU", "cores": 2, "kernel": "6.0", "python": "3.11.7"},
}


def _record(target: str, view: str, workload: str, c: int, ops: float, **extra: Any) -> dict:
    return {
        "section": extra.pop("section", "single"),
        "target": target,
        "view": view,
        "workload": workload,
        "workload_label": workload,
        "label": target,
        "concurrency": c,
        "throughput": ops,
        "ops": int(ops * 5),
        "seconds": 5.0,
        "p50_ms": 1.0,
        "p90_ms": 1.5,
        "p99_ms": extra.pop("p99_ms", 1.8),
        "max_ms": 3.0,
        "server_cpu_s": 2.5,
        "server_cpu_pct": 50.0,
        "client_cpu_s": 1.0,
        "server_peak_rss_mib": [60.0],
        "time": extra.pop("time", "2026-11-24T10:00:00"),
        **extra,
    }


def test_percentile_is_nearest_rank() -> None:
    ordered = [float(i) for i in range(1, 101)]
    assert percentile(ordered, 0.50) == 50.0
    assert percentile(ordered, 0.99) == 99.0
    assert percentile(ordered, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0


def test_summary_is_in_milliseconds_and_keeps_the_maximum() -> None:
    summary = summarise([0.003, 0.001, 0.002])
    assert summary.count == 3
    assert summary.p50_ms == pytest.approx(2.0)
    assert summary.max_ms == pytest.approx(3.0)
    assert summary.mean_ms == pytest.approx(2.0)


def test_replace_block_keeps_the_text_around_it() -> None:
    text = "intro\n<!-- bench:goals -->\nold\n<!-- /bench:goals -->\nprose\n"
    out = report.replace_block(text, "goals", "new table\n")
    assert out == "intro\n<!-- bench:goals -->\nnew table\n<!-- /bench:goals -->\nprose\n"


def test_replace_block_refuses_a_missing_block() -> None:
    with pytest.raises(KeyError):
        report.replace_block("no markers here", "goals", "x")


def test_goals_compare_the_named_rows() -> None:
    records = [
        _record("coffer-raft3", "active", "kv2-write", 32, 600.0, section="cluster"),
        _record("etcd3", "leader", "kv2-write", 32, 1200.0, section="baselines"),
        _record("coffer-raft3", "active", "kv2-write", 1, 130.0, section="cluster", p50_ms=6.0),
        _record("etcd3", "leader", "kv2-write", 1, 300.0, section="baselines", p50_ms=3.0),
        _record("coffer-raft5", "active", "kv2-write", 32, 500.0, section="five"),
        _record("etcd5", "leader", "kv2-write", 32, 1000.0, section="five"),
        _record("coffer-inmem", "node", "kv2-read", 32, 3000.0),
        _record("etcd3", "leader", "kv2-read", 32, 2500.0, section="baselines"),
        _record("ceiling", "node", "kv2-read", 32, 5000.0, section="baselines"),
        _record("coffer-file", "node", "kv2-write", 32, 1932.0),
        _record("coffer-inmem", "node", "kv2-read", 1, 1000.0, p99_ms=2.5),
    ]
    rows = tables.goals(records).splitlines()[2:]
    assert rows[0].startswith("| 3-node KV v2 write") and "| 0.50 |" in rows[0]
    assert rows[0].endswith("| **no** |")
    assert "| 2.00 |" in rows[1] and rows[1].endswith("| **no** |")  # p50 6 ms vs 3 ms
    assert "| 0.50 |" in rows[2] and rows[2].endswith("| yes |")  # 5-node ratio = 3-node's
    assert "| 1.20 |" in rows[3] and rows[3].endswith("| yes |")
    assert "| 0.60 |" in rows[4] and rows[4].endswith("| yes |")
    assert "| 6.00 |" in rows[5] and rows[5].endswith("| yes |")  # 1932 / 322
    assert "| 2.50 |" in rows[6] and rows[6].endswith("| **no** |")


def test_goals_without_a_measurement_say_so() -> None:
    rows = tables.goals([]).splitlines()[2:]
    assert len(rows) == 7 and all(row.endswith("| — |") for row in rows)


def test_goals_ignore_before_and_after_rows() -> None:
    """The perfpass section measures old code; it must not stand in for this run's rows."""
    old = _record("coffer-inmem", "node", "kv2-read", 32, 100.0, section="perfpass")
    records = [
        _record("coffer-inmem", "node", "kv2-read", 32, 3000.0),
        old,
        _record("etcd3", "leader", "kv2-read", 32, 3000.0, section="baselines"),
    ]
    rows = tables.goals(records).splitlines()[2:]
    assert "| 1.00 |" in rows[3]


def _pair(a: dict, b: dict) -> list[dict]:
    return [{**a, "section": "goals"}, {**b, "section": "goals"}]


def test_goals_take_the_median_of_the_alternated_pairs() -> None:
    """One pair's ratio moves by a goal's margin here; the goals section's median decides."""
    records = [
        # A single measurement each outside the pairs: 0.30 of the ceiling, not used.
        _record("coffer-inmem", "node", "kv2-read", 32, 1500.0),
        _record("ceiling", "node", "kv2-read", 32, 5000.0, section="baselines"),
        *_pair(
            _record("ceiling", "node", "kv2-read", 32, 5000.0),
            _record("coffer-inmem", "node", "kv2-read", 32, 3000.0),
        ),
        *_pair(
            _record("coffer-inmem", "node", "kv2-read", 32, 2000.0),
            _record("ceiling", "node", "kv2-read", 32, 5000.0),
        ),
        *_pair(
            _record("ceiling", "node", "kv2-read", 32, 5000.0),
            _record("coffer-inmem", "node", "kv2-read", 32, 2600.0),
        ),
    ]
    ceiling_row = tables.goals(records).splitlines()[2:][4]
    assert "| 0.52 |" in ceiling_row and ceiling_row.endswith("| yes |")
    assert "median of 3 alternated pairs: 0.60, 0.40, 0.52" in ceiling_row


def test_the_p50_goal_is_the_median_of_the_pairs_latency_ratios() -> None:
    records = []
    for coffer_p50, etcd_p50 in ((3.0, 1.0), (1.2, 1.0), (1.4, 1.0)):
        records += _pair(
            _record("etcd3", "leader", "kv2-write", 1, 700.0, p50_ms=etcd_p50),
            _record("coffer-raft3", "active", "kv2-write", 1, 600.0, p50_ms=coffer_p50),
        )
    p50_row = tables.goals(records).splitlines()[2:][1]
    assert "| 1.40 |" in p50_row and p50_row.endswith("| yes |")


def test_the_file_goal_divides_by_the_code_before_group_commit_in_the_same_run() -> None:
    """The issue's 322 writes/s came from another machine; with pairs the run measures
    the code before group commit itself, and 322 only stands beside it."""
    records = [_record("coffer-file", "node", "kv2-write", 32, 1600.0)]
    for now, before in ((1600.0, 100.0), (1500.0, 125.0), (1400.0, 140.0)):
        records += _pair(
            _record("coffer-file-before", "node", "kv2-write", 32, before),
            _record("coffer-file", "node", "kv2-write", 32, now),
        )
    file_row = tables.goals(records).splitlines()[2:][5]
    assert file_row.startswith("| `file` KV v2 writes (c=32) / the code before group commit |")
    assert "| 12.00 |" in file_row and file_row.endswith("| yes |")
    assert "median of 3 alternated pairs: 16.00, 12.00, 10.00" in file_row
    assert "1,600 ops/s = 4.97 x 322" in file_row
    # Without pairs the figure is all there is to divide by.
    alone = tables.goals(records[:1]).splitlines()[2:][5]
    assert "/ 322 before group commit" in alone and alone.endswith("| **no** |")


def test_the_tables_of_single_measurements_leave_the_goal_pairs_out() -> None:
    records = [
        _record("coffer-inmem", "node", "kv2-read", 32, 3000.0),
        _record("coffer-inmem", "node", "kv2-read", 32, 100.0, section="goals"),
        _record("etcd3", "leader", "kv2-read", 32, 3000.0, section="baselines"),
    ]
    assert "| 1.00 |" in tables.ratios(records)


def _target_names(steps: list[plan.Step]) -> list[str]:
    names = []
    for step in steps:
        target = step.make()  # not started: only its name and work folder exist
        names.append(target.name)
        shutil.rmtree(target.workdir)
    return names


def test_the_goal_pairs_alternate_their_order_every_round() -> None:
    names = _target_names(plan.suite("goals"))
    one_round = [
        "ceiling",
        "coffer-inmem",
        "etcd3",
        "coffer-raft3",
        "coffer-file-before",
        "coffer-file",
    ]
    assert names == one_round + one_round[::-1] + one_round
    in_standard = [step for step in plan.suite("standard") if step.section == "goals"]
    assert _target_names(in_standard) == names


def test_a_standard_run_dates_its_before_and_after_table() -> None:
    records = [
        _record("coffer-inmem", "node", "kv2-read", 32, 3000.0, time="2026-11-24T10:00:00"),
        _record(
            "coffer-inmem",
            "node",
            "kv2-read",
            32,
            2900.0,
            section="perfpass",
            time="2026-11-24T10:20:00",
        ),
    ]
    blocks = report.render_blocks(records, META)
    assert "2026-11-24T10:20:00" in blocks["run-perfpass"]
    assert "2026-11-24T10:00:00" in blocks["run-standard"]
    assert "Test CPU, 2 cores" in blocks["run-perfpass"]


def test_the_run_names_where_its_interpreter_lives() -> None:
    records = [_record("coffer-inmem", "node", "kv2-read", 32, 3000.0)]
    meta = {**META, "machine": {**META["machine"], "python_prefix": "/usr"}}
    assert "Python 3.11.7 (`/usr`)" in report.render_blocks(records, meta)["run-standard"]
    # Records written before the prefix was kept still render.
    assert "Python 3.11.7\n" in report.render_blocks(records, META)["run-standard"]


def test_update_docs_rewrites_blocks_and_the_readme_headline(tmp_path: Any) -> None:
    docs = tmp_path / "performance.md"
    readme = tmp_path / "README.md"
    docs.write_text(
        "prose stays\n<!-- bench:run-standard -->\nold\n<!-- /bench:run-standard -->\n"
        "<!-- bench:single -->\nold\n<!-- /bench:single -->\n"
        "<!-- bench:ratios -->\n<!-- /bench:ratios -->\n"
        "<!-- bench:goals -->\n<!-- /bench:goals -->\n"
        "<!-- bench:headline -->\n<!-- /bench:headline -->\n"
        "<!-- bench:commands -->\n<!-- /bench:commands -->\n"
    )
    readme.write_text("# Coffer\n<!-- bench:headline -->\nold\n<!-- /bench:headline -->\nend\n")
    records = [_record("coffer-inmem", "node", "kv2-read", 32, 3000.0)]
    report.update_docs(docs, records, META, readme=readme)
    text = docs.read_text()
    assert text.startswith("prose stays\n") and "old" not in text
    assert "| coffer-inmem | direct | kv2-read | 32 | 3,000 |" in text
    assert "old" not in readme.read_text() and readme.read_text().endswith("end\n")


def _profile_record(where: str, gil: bool) -> dict:
    named = [{"name": f"f{i} (node/x.py)", "s": 1.0, "pct": 10.0 - i} for i in range(3)]
    return {
        "section": "profile",
        "where": where,
        "gil": gil,
        "workload_label": "KV v2 write",
        "concurrency": 32,
        "throughput": 1000.0,
        "summary": {"samples": 900, "areas": named, "self": named, "total": named},
    }


def test_profiles_say_which_samples_they_count() -> None:
    text = tables.profiles(
        [_profile_record("one node", gil=False), _profile_record("3 nodes, GIL", gil=True)]
    )
    first, second = text.split("**KV v2 write, 3 nodes, GIL")
    assert "900 busy-thread samples at 250 Hz" in first
    assert "900 samples of the GIL holder at 250 Hz" in second
    assert "`f0 (node/x.py)` 10.0" in second
