"""The process-level chaos tool (``python -m chaos process``), through its Python API.

Scenarios on real ``coffer server`` processes (kill -9 of the active node, a
partitioned leader, and the healing suite's 15 s partition of the active node with
its per-fault measures), plus fast checks of the tool's own verifiers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from chaos.__main__ import main as chaos_main
from chaos.checker import ANY, STRONG, History
from chaos.process import ScenarioResult, Settings, run_scenario
from chaos.process.firewall import iptables_available
from chaos.process.verify import demote_deposed_reads, isolated_acks
from tests.conftest import require

pytestmark = pytest.mark.serial


def _no_rules_left() -> bool:
    listed = subprocess.run(["iptables", "-w", "5", "-S", "INPUT"], capture_output=True, text=True)
    return f"coffer-chaos pid={os.getpid()}" not in listed.stdout


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_kill_active_under_load_loses_nothing(tmp_path: Path) -> None:
    result = run_scenario("kill-active", Settings(duration=8, workdir=tmp_path))
    print("\n" + result.summary())
    assert result.ok, result.summary()
    assert result.lost == 0 and result.regressions == 0
    assert result.report.acknowledged > 100
    assert result.failover_seconds is not None and result.failover_seconds < 10
    assert result.first_write_after_fault is not None
    assert all(result.details["came_back_sealed"].values())  # restarted sealed: Shamir
    assert result.members == ["node1", "node2", "node3"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_partitioned_leader_acknowledges_nothing(tmp_path: Path) -> None:
    usable, why = iptables_available()
    require(usable, f"partitioning a node needs iptables as root: {why}")
    result = run_scenario("partition-leader", Settings(duration=8, workdir=tmp_path))
    print("\n" + result.summary())
    assert result.ok, result.summary()
    assert result.lost == 0 and result.regressions == 0
    assert not [f for f in result.extra if f.kind == "isolated-ack"]
    assert result.failover_seconds is not None and result.failover_seconds < 10
    # The old leader stepped down while cut off, and came back as a member.
    assert result.details["old_leader_stepped_down_seconds"] is not None
    assert result.members == ["node1", "node2", "node3"]
    assert _no_rules_left()


# -- the healing suite: a 15 s partition of the active node, measured --------------------


@pytest.fixture(scope="module")
def partition_active(tmp_path_factory: pytest.TempPathFactory) -> ScenarioResult:
    """One run for the tests below: safety and the thresholds are asserted apart."""
    usable, why = iptables_available()
    require(usable, f"partitioning a node needs iptables as root: {why}")
    settings = Settings(duration=10, observe=12, workdir=tmp_path_factory.mktemp("chaos"))
    result = run_scenario("partition-active", settings)
    print("\n" + result.summary())
    return result


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_partitioned_active_node_loses_nothing(partition_active: ScenarioResult) -> None:
    result = partition_active
    report = result.report
    assert report.lost == 0 and report.regressions == 0 and report.phantoms == 0, result.summary()
    assert not [f for f in result.extra if f.kind == "isolated-ack"], result.summary()
    assert report.acknowledged > 100
    (fault,) = report.faults
    assert fault.name == "partition-active" and fault.healed - fault.start >= 15
    assert _no_rules_left()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_partitioned_active_node_comes_back_whole(partition_active: ScenarioResult) -> None:
    result = partition_active
    assert result.safe, result.summary()  # every node back, serving, holding the same data
    assert result.members == ["node1", "node2", "node3"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_partitioned_active_node_heals_within_the_thresholds(
    partition_active: ScenarioResult,
) -> None:
    """Writes stop <= 3 s, no leadership change after the heal, all caught up <= 10 s,
    no any-node read older than the staleness bound."""
    report = partition_active.report
    assert report.thresholds_ok, report.threshold_failures


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_partitioned_active_node_stops_serving_as_active(
    partition_active: ScenarioResult,
) -> None:
    assert partition_active.deposed == [], partition_active.deposed[:3]


# -- the tool's own checks (fast) -----------------------------------------------------


def _history() -> History:
    history = History()
    for value in (1, 2):
        history.record(
            kind="write", key="k", value=value, start=value - 1.0, end=value - 0.9, ok=True,
            node="node2", version=value,
        )  # fmt: skip
    return history


def test_a_cut_off_node_must_not_acknowledge() -> None:
    history = _history()
    history.record(kind="write", key="j", value=1, start=0.5, end=0.6, ok=True, node="node1")
    history.record(kind="write", key="j", value=2, start=0.7, end=2.5, ok=True, node="node1")
    findings = isolated_acks(history, [("node1", 0.4, 2.0)])
    # The second answer came after the heal: the node may have forwarded it.
    assert [(f.kind, f.op) for f in findings] == [("isolated-ack", 2)]


def test_stale_reads_of_a_deposed_leader_are_reported_and_optionally_strict() -> None:
    history = _history()
    history.record(
        kind="read", key="k", value=1, start=1.5, end=1.6, ok=True, consistency=STRONG,
        node="node1", version=1,
    )  # fmt: skip
    ops, deposed = demote_deposed_reads(history, [("node1", 0.5, 3.0)])
    assert [f.kind for f in deposed] == ["deposed-read"]
    assert ops[-1].consistency == ANY
    ops, deposed = demote_deposed_reads(history, [("node1", 0.5, 3.0)], strict=True)
    assert len(deposed) == 1 and ops[-1].consistency == STRONG


def test_dispatcher_usage() -> None:
    assert chaos_main([]) == 2
    assert chaos_main(["nonsense"]) == 2
    with pytest.raises(SystemExit) as exit_info:
        chaos_main(["process", "--help"])
    assert exit_info.value.code == 0
