"""Pooled randomness: distinct ids, and a forked child never repeats its parent's."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable

import pytest

from sdk.random_pool import random_bytes, random_hex, random_uuid4, random_uuid4_hex


def test_ids_are_distinct_across_many_refills() -> None:
    seen = {random_hex(16) for _ in range(5000)}
    assert len(seen) == 5000
    assert all(len(value) == 32 for value in seen)


def test_a_request_larger_than_a_block_is_served_whole() -> None:
    assert len(random_bytes(10_000)) == 10_000


@pytest.mark.parametrize(
    "take",
    [lambda: random_bytes(16), lambda: random_bytes(12).hex(), random_uuid4, random_uuid4_hex],
    ids=["bytes", "nonce", "uuid4", "uuid4_hex"],
)
def test_forked_child_does_not_reuse_the_parents_pool(take: Callable[[], object]) -> None:
    take()  # the pool now holds what the parent will hand out next
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        os.write(write, repr(take()).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 256).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child != repr(take())


def test_threads_taking_at_once_are_never_handed_the_same_piece() -> None:
    """The pools have no lock of their own: ``list.pop`` is what keeps pieces apart,
    refills racing with takes included (each thread crosses many refills)."""
    per_thread, threads = 3000, 8
    taken: list[list[object]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def work(out: list[object]) -> None:
        start.wait()
        for _ in range(per_thread):
            out.append(random_bytes(12))
            out.append(random_uuid4())
            out.append(random_hex(16))

    workers = [threading.Thread(target=work, args=(out,)) for out in taken]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    every = [value for out in taken for value in out]
    assert len(every) == per_thread * threads * 3
    assert len(set(every)) == len(every)


def test_uuid4_text_is_what_str_of_a_uuid4_gives() -> None:
    ids = {random_uuid4() for _ in range(600)}  # more than one block's worth
    assert len(ids) == 600
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_odd_sizes_are_whole_and_distinct() -> None:
    for count in (1, 7, 12, 33, 64, 65, 4096):
        values = [random_bytes(count) for _ in range(50)]
        assert all(len(value) == count for value in values)
        if count >= 7:
            assert len(set(values)) == 50
    assert random_bytes(0) == b""


def test_uuid4_hex_has_the_version_and_variant_of_uuid4() -> None:
    ids = {random_uuid4_hex() for _ in range(600)}
    assert len(ids) == 600
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
