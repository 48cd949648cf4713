"""The file backend's pending writes: lookups and prefix overlays over two
generations answer what a plain dict of the newest writes would."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from node.physical.pending_writes import LoggedWrite, PendingWrites
from sdk.epoch_lru import MISS
from sdk.physical import Delete, Entry, Put

_keys = st.text(alphabet="ab/", min_size=1, max_size=5)
_write = st.tuples(st.booleans(), _keys, st.integers(1, 10**6))
_step = st.one_of(
    st.tuples(st.just("record"), st.lists(_write, max_size=20)),
    st.tuples(st.just("rotate"), st.none()),
    st.tuples(st.just("overlay"), st.text(alphabet="ab/", max_size=3)),
)


def _as_write(put: bool, key: str, revision: int) -> LoggedWrite:
    return (Put(key, b"%d" % revision), revision) if put else (Delete(key), revision)


@given(st.lists(_step, max_size=40))
def test_lookups_and_overlays_match_a_model_of_both_generations(
    steps: list[tuple[str, object]],
) -> None:
    pending = PendingWrites()
    current: dict[str, LoggedWrite] = {}
    flushing: dict[str, LoggedWrite] = {}
    for action, argument in steps:
        if action == "record":
            assert isinstance(argument, list)
            writes = [_as_write(*w) for w in argument]
            pending.record(writes)
            current.update((w[0].key, w) for w in writes)
        elif action == "rotate":
            pending.flushed()  # the previous checkpoint is done
            assert pending.rotate() == current
            flushing, current = current, {}
        else:
            assert isinstance(argument, str)
            model = {k: w for k, w in {**flushing, **current}.items() if k.startswith(argument)}
            assert pending.overlay(argument) == model
        both = {**flushing, **current}
        assert len(pending) == len(current) + len(flushing)
        for key in {"a", "b", "a/b", "ab"} | set(both):
            found = pending.lookup(key)
            if key not in both:
                assert found is MISS
                continue
            op, revision = both[key]
            assert found == (Entry(key, op.value, revision) if isinstance(op, Put) else None)
