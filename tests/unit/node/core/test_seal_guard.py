"""Seal and unseal never interleave, and seal-status never shows a half-sealed node.

An unseal sent while a seal was still unloading mounts used to act on a barrier
about to be sealed: it answered "unsealed" (or failed) and the rest of the seal
then sealed the node anyway. These run a real in-memory core.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from node.core.core import Core
from node.core.seal_guard import SealInProgressError
from node.physical.inmem import InmemBackend


@pytest.fixture
async def core_and_key() -> AsyncIterator[tuple[Core, str]]:
    core = Core(InmemBackend())
    key = (await core.initialize(1, 1)).keys_hex[0]
    await core.unseal(key)
    try:
        yield core, key
    finally:
        await core.seal()


async def _mid_seal(core: Core) -> asyncio.Task[None]:
    """A seal that has started and not finished: clients see sealed, the barrier is open."""
    sealing = asyncio.create_task(core.seal())
    await asyncio.sleep(0)
    assert not sealing.done() and not core.barrier.sealed
    return sealing


async def test_unseal_sent_while_sealing_waits_for_the_seal_then_unseals(
    core_and_key: tuple[Core, str],
) -> None:
    core, key = core_and_key
    sealing = await _mid_seal(core)
    status = await core.unseal(key)
    await sealing
    assert status.sealed is False
    assert core.sealed is False and not core.barrier.sealed


async def test_seal_status_during_a_seal_reports_the_finished_seal(
    core_and_key: tuple[Core, str],
) -> None:
    core, _ = core_and_key
    sealing = await _mid_seal(core)
    status = await core.seal_status()
    assert status.sealed is True
    assert core.barrier.sealed  # it answered only once the seal was complete
    await sealing


async def test_a_scheduled_seal_counts_as_sealing_from_the_call(
    core_and_key: tuple[Core, str],
) -> None:
    """``seal_soon`` (secondary/enable) returns before sealing; status already waits for it."""
    core, key = core_and_key
    await core.seal_soon(0.05)
    assert (await core.seal_status()).sealed is True
    assert (await core.unseal(key)).sealed is False


async def test_an_unseal_that_cannot_wait_for_the_seal_answers_503(
    core_and_key: tuple[Core, str],
) -> None:
    core, key = core_and_key
    core.seal_guard.wait = 0.01
    release = asyncio.Event()
    await core.seal_guard.run_soon(0, release.wait)  # a seal that does not finish
    with pytest.raises(SealInProgressError) as raised:
        await core.unseal(key)
    assert raised.value.status == 503
    with pytest.raises(SealInProgressError):
        await core.seal_status()
    release.set()
    await core.seal_guard.settled()
    assert core.sealed is False  # nothing ran: the node stayed unsealed
