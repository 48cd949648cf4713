"""The dr-failover scenario's judgement, on hand-made histories: which acknowledged
writes the promoted site lacks, split by their age at the kill, and the lag figures."""

from __future__ import annotations

from chaos.checker import FINAL, History
from chaos.compose.dr_failover import LagSample, classify_losses, lag_summary


def _write(history: History, key: str, value: int, end: float, ok: bool = True) -> None:
    history.record(
        kind="write", key=key, value=value, start=end - 0.01, end=end, ok=ok,
        version=value if ok else None,
    )  # fmt: skip


def _final(history: History, key: str, value: int | None, at: float = 100.0) -> None:
    history.record(
        kind="read", key=key, value=value, start=at, end=at + 0.01, ok=True,
        consistency=FINAL, version=value,
    )  # fmt: skip


def test_writes_missing_on_the_promoted_site_are_split_at_the_lag_bound() -> None:
    history = History()
    for value, end in enumerate((5.0, 8.0, 8.5, 9.6, 9.95), start=1):
        _write(history, "a", value, end)
    _write(history, "b", 1, 3.0)
    _write(history, "b", 2, 7.0)
    _final(history, "a", 2)  # 3, 4, 5 missing: acked at 8.5, 9.6, 9.95
    _final(history, "b", 1)  # 2 missing: acked at 7.0

    losses = classify_losses(history.ops, kill_at=10.0, bound=1.0)

    assert sorted((op.key, op.value) for op in losses.recent) == [("a", 4), ("a", 5)]
    assert sorted((op.key, op.value) for op in losses.old) == [("a", 3), ("b", 2)]
    assert not losses.unread
    assert not losses.ok


def test_nothing_missing_and_failed_writes_never_count() -> None:
    history = History()
    _write(history, "a", 1, 1.0)
    _write(history, "a", 2, 2.0, ok=False)  # indeterminate: never lost
    _write(history, "a", 3, 3.0)
    _final(history, "a", 3)

    losses = classify_losses(history.ops, kill_at=10.0, bound=1.0)

    assert losses.ok and not losses.recent and not losses.old


def test_a_key_never_read_back_fails_the_run() -> None:
    history = History()
    _write(history, "a", 1, 1.0)
    _write(history, "b", 1, 1.0)
    _final(history, "a", 1)

    losses = classify_losses(history.ops, kill_at=10.0, bound=1.0)

    assert losses.unread == ["b"]
    assert not losses.ok


def test_a_key_the_promoted_site_does_not_have_loses_every_write() -> None:
    history = History()
    _write(history, "a", 1, 1.0)
    _write(history, "a", 2, 9.5)
    _final(history, "a", None)  # 404 on the DR site

    losses = classify_losses(history.ops, kill_at=10.0, bound=1.0)

    assert [op.value for op in losses.old] == [1]
    assert [op.value for op in losses.recent] == [2]


def test_lag_summary_reports_percentiles_and_markers_that_never_arrived() -> None:
    samples = [LagSample(float(i), i, i / 100) for i in range(1, 101)]
    samples.append(LagSample(101.0, 101, None))

    summary = lag_summary(samples)

    assert summary["samples"] == 100 and summary["missing"] == 1
    assert summary["p50"] == 0.505
    assert summary["p99"] == 0.99
    assert summary["max"] == 1.0
    assert lag_summary([]) == {"samples": 0, "missing": 0}
