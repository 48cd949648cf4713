"""chaos.checker on hand-made histories: what counts as lost, a regression, late or stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.checker import ANY, FINAL, STRONG, Fault, History, Sample, Thresholds, check
from chaos.compose.__main__ import results_markdown
from chaos.compose.scenarios import RunSettings, ScenarioResult


def write(h: History, key: str, value: int, start: float, end: float, **kw: Any) -> None:
    h.record(kind="write", key=key, value=value, start=start, end=end, ok=kw.pop("ok", True), **kw)


def read(h: History, key: str, value: int | None, start: float, end: float, **kw: Any) -> None:
    h.record(kind="read", key=key, value=value, start=start, end=end, ok=True, **kw)


def test_a_clean_history_passes() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    read(h, "k", 1, 0.2, 0.3, consistency=STRONG, version=1)
    write(h, "k", 2, 0.4, 0.5, version=2)
    read(h, "k", 2, 0.6, 0.7, consistency=FINAL, version=2)
    report = check(h)
    assert report.ok
    assert (report.writes, report.acknowledged, report.reads, report.strong_reads) == (2, 2, 2, 1)


def test_a_final_value_older_than_an_acknowledged_write_is_lost() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 0.3, version=2)
    read(h, "k", 1, 1.0, 1.1, consistency=FINAL, version=1)
    report = check(h)
    assert report.lost == 1 and not report.ok
    assert report.regressions == 1  # the final read also went back


def test_a_key_without_a_final_read_counts_as_lost() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    assert check(h).lost == 1


def test_a_reused_version_is_a_lost_write_even_when_the_final_value_is_newer() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 0.3, version=2)  # rolled back afterwards ...
    write(h, "k", 3, 0.4, 0.5, version=2)  # ... so its version is handed out again
    read(h, "k", 3, 1.0, 1.1, consistency=FINAL, version=2)
    report = check(h)
    assert report.lost == 1
    assert any("version 2" in f.detail for f in report.findings)


def test_a_strong_read_older_than_an_acknowledged_write_is_a_regression() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 0.3, version=2)
    read(h, "k", 1, 0.4, 0.5, consistency=STRONG, version=1, node="node3")
    read(h, "k", 2, 0.6, 0.7, consistency=FINAL, version=2)
    report = check(h)
    assert report.regressions == 1 and not report.ok
    assert "node3" in report.findings[0].detail


def test_a_strong_read_older_than_an_earlier_strong_read_is_a_regression() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 5.0, ok=False)  # indeterminate, yet applied
    read(h, "k", 2, 0.3, 0.4, consistency=STRONG, version=2)
    read(h, "k", 1, 0.5, 0.6, consistency=STRONG, version=1)  # monotonic reads broken
    read(h, "k", 2, 1.0, 1.1, consistency=FINAL, version=2)
    assert check(h).regressions == 1


def test_overlapping_operations_are_not_ordered() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 0.6, version=2)
    read(h, "k", 1, 0.3, 0.4, consistency=STRONG, version=1)  # sent before 2 was acked
    read(h, "k", 2, 1.0, 1.1, consistency=FINAL, version=2)
    assert check(h).ok


def test_an_indeterminate_write_applied_late_is_reported_not_failed() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 2.0, ok=False)  # the node froze with it
    write(h, "k", 3, 2.1, 2.2, version=2)
    read(h, "k", 2, 9.0, 9.1, consistency=STRONG, version=3)  # applied after 3, as version 3
    write(h, "k", 4, 9.2, 9.3, version=4)
    read(h, "k", 4, 9.4, 9.5, consistency=FINAL, version=4)
    report = check(h)
    assert report.ok, report.summary()
    assert report.late_writes == 1
    assert report.max_late_delay > 8.0


def test_stale_any_node_reads_are_reported_not_failed() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    write(h, "k", 2, 0.2, 0.3, version=2)
    read(h, "k", 1, 2.3, 2.4, consistency=ANY, version=1)
    read(h, "k", 2, 3.0, 3.1, consistency=FINAL, version=2)
    report = check(h)
    assert report.ok
    assert report.stale_reads == 1
    assert report.max_staleness == 2.0


def test_a_value_never_written_is_a_phantom_and_a_missing_key_a_regression() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    read(h, "k", 7, 0.2, 0.3, consistency=ANY, version=7)
    read(h, "k", None, 0.4, 0.5, consistency=STRONG)
    read(h, "k", 1, 0.6, 0.7, consistency=FINAL, version=1)
    report = check(h)
    assert report.phantoms == 1
    assert report.regressions == 1


def test_a_node_holding_another_final_value_diverges() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1, version=1)
    read(h, "k", 1, 0.2, 0.3, consistency=FINAL, version=1)
    report = check(h, node_finals={"node1": {"k": 1}, "node2": {"k": None}})
    assert report.divergent == 1


def test_without_versions_values_order_the_writes() -> None:
    h = History()
    write(h, "k", 1, 0.0, 0.1)
    write(h, "k", 2, 0.2, 0.3)
    read(h, "k", 1, 0.4, 0.5, consistency=STRONG)
    read(h, "k", 2, 0.6, 0.7, consistency=FINAL)
    assert check(h).regressions == 1


def test_unavailability_is_the_longest_gap_between_acknowledged_writes() -> None:
    h = History()
    for i, at in enumerate([0.1, 0.2, 0.3, 2.8, 2.9, 3.0, 4.6, 4.7], start=1):
        write(h, "k", i, at - 0.05, at, version=i)
    read(h, "k", 8, 5.0, 5.1, consistency=FINAL, version=8)
    report = check(h, window=(0.0, 5.0))
    assert report.unavailable_seconds == 2.5
    assert report.unavailable_window == (0.3, 2.8)
    assert report.unavailable_total == 2.5 + 1.6


def test_a_history_survives_a_round_trip_through_json_lines(tmp_path: Path) -> None:
    h = History()
    h.event(1.0, "kill", node="node1")
    write(h, "k", 1, 0.0, 0.1, version=1, node="node1", status=200)
    read(h, "k", 1, 0.2, 0.3, consistency=FINAL, version=1)
    path = tmp_path / "history.jsonl"
    h.dump(path)
    again = History.load(path)
    assert again.ops == h.ops
    assert again.events == [{"t": 1.0, "event": "kill", "node": "node1"}]
    assert check(again).ok


def test_faults_are_measured_and_held_to_thresholds_apart_from_safety() -> None:
    h = History()
    for i, at in enumerate([0.5, 1.0, 5.5, 6.0], start=1):
        write(h, "k", i, at - 0.1, at, version=i)
    read(h, "k", 1, 2.0, 2.1, consistency=ANY, version=1)  # 1.0 s stale, inside the fault
    read(h, "k", 4, 7.0, 7.1, consistency=FINAL, version=4)
    for t in (0.2, 4.0, 5.2):
        h.sample(Sample(t, "n1", 200, 10, 10, True))
        h.sample(Sample(t, "n2", 473, 10, 10, False))
    fault = Fault("freeze-active", "n1", 1.5, 5.0, until=6.5)

    report = check(h, faults=[fault], samples=h.samples, thresholds=Thresholds())
    (measured,) = report.faults
    assert report.ok and not report.thresholds_ok  # nothing lost, but too slow
    assert measured.unavailable_seconds == 4.5
    assert measured.max_staleness == 1.0
    assert measured.catch_up_seconds == 0.2
    assert report.threshold_failures == ["freeze-active on n1: writes stopped 4.50s (bound 3s)"]
    assert "thresholds not met" in report.summary()
    doc = report.to_dict()
    assert doc["thresholds_ok"] is False and doc["faults"][0]["leader_changes_after_heal"] == 0
    # Without thresholds the same faults are only measured.
    assert check(h, faults=[fault], samples=h.samples).thresholds_ok


def test_samples_survive_the_json_lines_round_trip(tmp_path: Path) -> None:
    h = History()
    h.sample(Sample(0.2, "node1", 200, 7, 8, True))
    h.sample(Sample(0.3, "node2", 0))
    path = tmp_path / "history.jsonl"
    h.dump(path)
    assert History.load(path).samples == h.samples


def test_the_compose_results_table_gives_each_suite_fault_its_measures() -> None:
    h = History()
    for value, at in ((1, 0.0), (2, 5.0)):
        write(h, "k", value, at, at + 0.1, version=value)
    read(h, "k", 2, 6.0, 6.1, consistency=FINAL, version=2)
    fault = Fault("freeze-active", "node1", 1.0, 2.0, until=4.0)
    report = check(h, faults=[fault], samples=[], thresholds=Thresholds())
    result = ScenarioResult("freeze-active", report, h, nodes_back=True)

    block = results_markdown([result], "python -m chaos.compose freeze-active", RunSettings())

    row = next(line for line in block.splitlines() if line.startswith("| freeze-active"))
    assert row.endswith("| 4.90 s | 0 | never | thresholds not met |"), row
    assert "- threshold not met: freeze-active: freeze-active on node1: writes stopped" in block
