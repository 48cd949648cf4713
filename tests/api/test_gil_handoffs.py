"""The KV write path keeps the GIL: no call in it releases the GIL for a moment's work.

On the active node the event loop and the Raft thread share one GIL. A call
that releases it (``os.urandom``, the one-shot ``hmac.digest``) hands it to a
waiting Raft thread and waits to get it back, and those hand-offs cost the
active process ~20 µs of CPU per write at 32 writers (docs/performance.md,
"Seventh pass"). ``sys.setprofile`` sees every call into C, so these tests
name the calls instead of timing them.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

from node.cluster.consistency import encode_state
from tests.conftest import DevServer

#: C functions that release the GIL for work far shorter than a switch.
RELEASING = {("posix", "urandom"), ("_hashlib", "hmac_digest")}


def _watch(seen: list[str]) -> Callable[[FrameType, str, Any], None]:
    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and (getattr(arg, "__module__", None), arg.__name__) in RELEASING:
            seen.append(f"{arg.__name__} from {frame.f_code.co_qualname}")

    return profile


async def _releasing_calls(step: Callable[[], Awaitable[Any]]) -> list[str]:
    seen: list[str] = []
    sys.setprofile(_watch(seen))
    try:
        await step()
    finally:
        sys.setprofile(None)
    return seen


async def test_a_kv_write_and_read_make_no_call_that_releases_the_gil(dev: DevServer) -> None:
    path = "/v1/secret/data/gil"
    for n in ("1", "2"):  # a create, then an update: their metrics children exist
        assert (await dev.client.put(path, json={"data": {"n": n}}, headers=dev.auth)).status == 200

    async def write_and_read() -> None:
        reply = await dev.client.put(path, json={"data": {"n": "3"}}, headers=dev.auth)
        assert reply.status == 200
        # A new key (its metadata gets a fresh data id) through an existing child metric.
        reply = await dev.client.put(path + "-new", json={"data": {"n": "1"}}, headers=dev.auth)
        assert reply.status == 200
        reply = await dev.client.get(path, headers=dev.auth)
        assert (await reply.json())["data"]["data"] == {"n": "3"}

    assert await _releasing_calls(write_and_read) == []


async def test_the_index_state_of_a_reply_keeps_the_gil() -> None:
    async def encode() -> None:
        encode_state(b"k" * 32, "cluster-1", 42)

    assert await _releasing_calls(encode) == []


async def test_the_watch_sees_the_calls_it_names() -> None:
    """The guard itself: both calls are reported when they happen."""
    import hmac
    import os

    async def release() -> None:
        os.urandom(12)
        hmac.digest(b"k", b"m", "sha256")

    assert len(await _releasing_calls(release)) == 2
