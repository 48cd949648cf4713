"""Pooled randomness: distinct ids, and a forked child never repeats its parent's."""

from __future__ import annotations

import os

from sdk.random_pool import random_bytes, random_hex


def test_ids_are_distinct_across_many_refills() -> None:
    seen = {random_hex(16) for _ in range(5000)}
    assert len(seen) == 5000
    assert all(len(value) == 32 for value in seen)


def test_a_request_larger_than_a_block_is_served_whole() -> None:
    assert len(random_bytes(10_000)) == 10_000


def test_forked_child_does_not_reuse_the_parents_pool() -> None:
    random_bytes(1)  # the pool now holds bytes the parent will hand out next
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        os.write(write, random_bytes(16))
        os._exit(0)
    os.close(write)
    child = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    assert child != random_bytes(16)


def test_uuid4_hex_has_the_version_and_variant_of_uuid4() -> None:
    import uuid

    from sdk.random_pool import random_uuid4_hex

    ids = {random_uuid4_hex() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
