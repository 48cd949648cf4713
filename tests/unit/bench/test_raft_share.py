"""bench.raft_share pairs each lone-node slice with the cluster slice beside it."""

from __future__ import annotations

from bench.raft_share import _report


def _row(process: float, loop: float, involuntary: float = 0.0) -> dict[str, float]:
    return {
        "process_us": process,
        "loop_us": loop,
        "other_threads_us": process - loop,
        "writes_per_s": 1e6 / process,
        "voluntary_per_write": 0.0,
        "involuntary_per_write": involuntary,
        "loop_running_pct": 70.0,
        "loop_waiting_pct": 10.0,
        "others_running_pct": 0.0,
        "others_waiting_pct": 0.0,
    }


def test_the_difference_is_paired_slice_by_slice_not_a_difference_of_medians() -> None:
    # The machine drifts: slices 1 and 2 are slow for both sides alike.
    one = [_row(300, 300), _row(500, 500), _row(480, 480)]
    three = [_row(400, 350, 0.4), _row(620, 560, 0.3), _row(760, 700, 0.5)]

    report = _report({"one": one, "three": three})

    # Paired: 350-300, 560-500, 700-480 -> 50, 60, 220; medians apart: 560-480 = 80.
    assert report["raft_on_the_loop_us"] == 60
    assert report["raft_on_the_process_us"] == 120  # 100, 120, 280; medians apart: 140
    assert report["three"]["loop_us"] == 560
    assert report["three"]["involuntary_per_write"] == 0.4
    assert report["one"]["other_threads_us"] == 0
