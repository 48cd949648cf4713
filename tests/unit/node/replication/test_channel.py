"""Channel.receive_within: a timeout that never swallows the task's cancellation."""

from __future__ import annotations

import asyncio

import pytest

from node.replication.frames import encode
from node.replication.ports import Channel


class HeldLink:
    """A link whose next bytes arrive when the test says so."""

    peer_id = "peer"

    def __init__(self) -> None:
        self.incoming: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def send(self, data: bytes) -> None:
        raise AssertionError("nothing is sent here")

    async def receive(self) -> bytes:
        return await self.incoming

    async def close(self) -> None:
        pass


async def test_a_cancellation_that_meets_an_arriving_message_still_cancels() -> None:
    """``stop_active`` cancels a session while a heartbeat arrives. Python 3.11's
    ``asyncio.wait_for`` then returned the message and the session streamed on."""
    link = HeldLink()
    channel = Channel(link)
    waiting = asyncio.create_task(channel.receive_within(30.0))
    await asyncio.sleep(0)  # parked on the link
    link.incoming.set_result(encode({"type": "heartbeat", "index": 1}))
    waiting.cancel()  # in the same turn of the loop as the message
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_no_message_within_the_time_is_a_timeout() -> None:
    channel = Channel(HeldLink())
    with pytest.raises(TimeoutError):
        await channel.receive_within(0.01)


async def test_a_message_in_time_is_received() -> None:
    link = HeldLink()
    link.incoming.set_result(encode({"type": "wals", "wals": []}))
    assert await Channel(link).receive_within(1.0) == {"type": "wals", "wals": []}
