"""LoopBridge: when work posted from other threads reaches the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from consensus.bridge import LoopBridge
from tests.unit.consensus.probes import DrainCounter


async def _on_thread(work: Callable[[], object]) -> None:
    thread = threading.Thread(target=work)
    thread.start()
    await asyncio.to_thread(thread.join)


async def test_the_flushing_threads_posts_wait_for_its_flush() -> None:
    bridge = LoopBridge(asyncio.get_running_loop())
    ran: list[str] = []
    flushed = threading.Event()
    go_on = threading.Event()

    def raft_thread() -> None:
        bridge.flush()  # this thread is now the flusher
        bridge.post(lambda: ran.append("change"))
        bridge.post(lambda: ran.append("commit"))
        flushed.set()
        go_on.wait(5)
        bridge.flush()

    thread = threading.Thread(target=raft_thread)
    thread.start()
    await asyncio.to_thread(flushed.wait, 5)
    await asyncio.sleep(0.05)
    assert ran == []  # posted, but not handed off yet
    go_on.set()
    await asyncio.to_thread(thread.join)
    for _ in range(100):
        if ran:
            break
        await asyncio.sleep(0.01)
    assert ran == ["change", "commit"]


async def test_other_threads_posts_wake_the_loop_at_once() -> None:
    bridge = LoopBridge(asyncio.get_running_loop())
    ran: list[str] = []
    await _on_thread(bridge.flush)  # some other thread is the flusher
    await _on_thread(lambda: bridge.post(lambda: ran.append("from a third thread")))
    for _ in range(100):
        if ran:
            break
        await asyncio.sleep(0.01)
    assert ran == ["from a third thread"]


async def test_a_flush_with_nothing_posted_does_not_wake_the_loop() -> None:
    bridge = LoopBridge(asyncio.get_running_loop())
    counter = DrainCounter(bridge)

    def flush_ten_times() -> None:
        for _ in range(10):
            bridge.flush()

    def post_between_flushes() -> None:
        bridge.flush()
        bridge.post(lambda: None)
        bridge.post(lambda: None)
        bridge.flush()
        bridge.flush()

    await _on_thread(flush_ten_times)
    await asyncio.sleep(0.05)
    assert counter.drains == 0
    await _on_thread(post_between_flushes)
    await asyncio.sleep(0.05)
    assert counter.drains == 1
