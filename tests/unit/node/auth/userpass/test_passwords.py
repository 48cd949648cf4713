"""Password hashing for userpass: Argon2id, off the event loop, same cost for unknown users."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from argon2 import PasswordHasher, extract_parameters

from node.auth.userpass.passwords import _DUMMY_HASH, Passwords


class RecordingHasher(PasswordHasher):
    """A cheap hasher that records what it verified against, and on which thread."""

    def __init__(self, **params: int) -> None:
        super().__init__(**{"time_cost": 1, "memory_cost": 64, "parallelism": 1, **params})
        self.verified: list[str] = []
        self.threads: list[int] = []

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        self.threads.append(threading.get_ident())
        return super().hash(password, salt=salt)

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        self.verified.append(str(hash))
        self.threads.append(threading.get_ident())
        return super().verify(hash, password)


@pytest.fixture
def hasher() -> RecordingHasher:
    return RecordingHasher()


async def test_hash_and_verify(hasher: RecordingHasher) -> None:
    passwords = Passwords(hasher)
    first, second = await passwords.hash("s3cret"), await passwords.hash("s3cret")
    assert first.startswith("$argon2id$")
    assert first != second  # salted
    assert "s3cret" not in first
    assert await passwords.verify(first, "s3cret")
    assert not await passwords.verify(first, "s3cret ")
    assert not await passwords.verify(first, "")


async def test_a_corrupt_hash_is_a_mismatch_not_an_error(hasher: RecordingHasher) -> None:
    passwords = Passwords(hasher)
    assert not await passwords.verify("not-a-hash", "pw")
    assert not await passwords.verify("$argon2id$v=19$m=64,t=1,p=1$AAAA$AAAA", "pw")


async def test_unknown_users_cost_one_verification_of_the_same_parameters(
    hasher: RecordingHasher,
) -> None:
    passwords = Passwords(hasher)
    stored = await passwords.hash("pw")
    assert not await passwords.verify(None, "pw")
    assert await passwords.verify(stored, "pw")
    dummy, real = hasher.verified
    assert dummy != real
    assert extract_parameters(dummy) == extract_parameters(real)


def test_the_shipped_dummy_hash_has_the_default_parameters() -> None:
    default = PasswordHasher()
    assert not default.check_needs_rehash(_DUMMY_HASH)
    assert extract_parameters(_DUMMY_HASH) == extract_parameters(default.hash("x"))


async def test_default_hasher_uses_the_shipped_dummy() -> None:
    hasher = RecordingHasher(time_cost=3, memory_cost=65536, parallelism=4)
    assert not await Passwords(hasher).verify(None, "guess")
    assert hasher.verified == [_DUMMY_HASH]


async def test_work_runs_off_the_event_loop(hasher: RecordingHasher) -> None:
    passwords = Passwords(hasher)
    await passwords.verify(await passwords.hash("pw"), "pw")
    assert hasher.threads
    assert threading.get_ident() not in hasher.threads


async def test_the_loop_keeps_serving_while_hashing() -> None:
    passwords = Passwords()  # the real cost: ~0.1 s per hash
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    try:
        await passwords.hash("pw")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert ticks > 1
