"""``Timings``: Prometheus bucket semantics (``le``: at most the bound) and the sum."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from sdk.timings import BOUNDS, Timings

_durations = st.one_of(
    st.floats(min_value=0, max_value=60, allow_nan=False),
    st.sampled_from(BOUNDS),  # exactly on a bound: counted in that bucket
)


@given(st.lists(_durations, max_size=200))
def test_each_bucket_counts_the_observations_at_most_its_bound(observed: list[float]) -> None:
    timings = Timings()
    for seconds in observed:
        timings.observe(seconds)

    snapshot = timings.snapshot()

    assert [bound for bound, _ in snapshot.buckets] == [*BOUNDS, math.inf]
    for bound, count in snapshot.buckets:
        assert count == sum(1 for seconds in observed if seconds <= bound)
    assert snapshot.count == len(observed)
    assert math.isclose(snapshot.total_seconds, sum(observed), abs_tol=1e-9)


def test_a_snapshot_is_a_copy() -> None:
    timings = Timings()
    timings.observe(0.002)
    before = timings.snapshot()
    timings.observe(0.002)
    assert before.count == 1
    assert timings.snapshot().count == 2
