"""Read-only storage on a standby: views and the barrier refuse writes inside a
read-only scope, and the pipeline hands a request that writes to the active node."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from node.barrier.barrier import Barrier
from node.barrier.readonly import read_only
from node.barrier.view import BarrierView
from node.cluster.errors import PleaseForwardError
from node.core.core import Core
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.physical.inmem import InmemBackend
from sdk.errors import ReadOnlyError
from sdk.physical import Check, Delete, Put


@pytest.fixture
async def view() -> BarrierView:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    view = BarrierView(barrier, "logical/m/")
    await view.put("kept", b"before")
    return view


async def test_a_view_refuses_every_write_in_a_read_only_scope(view: BarrierView) -> None:
    with read_only() as scope:
        with pytest.raises(ReadOnlyError, match="cannot write to readonly storage"):
            await view.put("kept", b"after")
        for write in (
            view.put_json("new", {"a": 1}),
            view.delete("kept"),
            view.commit([Put("kept", b"after", expect=1)]),
            view.commit([Check("kept", 1), Delete("kept")]),
            view.sub_view("deeper/").put("x", b"y"),
        ):
            with pytest.raises(ReadOnlyError):
                await write
        # Reads, lists and a transaction of checks alone still work.
        found = await view.get("kept")
        assert found is not None and found.value == b"before"
        assert await view.list() == ["kept"]
        await view.commit([Check("kept", found.revision)])
    assert scope.refused == "logical/m/kept"  # the first refusal, with the view's prefix
    assert await view.get("new") is None
    # Outside the scope the same view writes again.
    await view.put("kept", b"after")
    found = await view.get("kept")
    assert found is not None and found.value == b"after"


async def test_the_barrier_refuses_writes_that_bypass_the_views() -> None:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    with read_only() as scope:
        for write in (
            barrier.put("core/x", b"v"),
            barrier.delete("core/x"),
            barrier.commit([Put("core/x", b"v")]),
        ):
            with pytest.raises(ReadOnlyError):
                await write
    assert scope.refused == "core/x"
    assert await barrier.get("core/x") is None


async def test_a_task_started_in_the_scope_is_read_only_too(view: BarrierView) -> None:
    with read_only() as scope:
        task = asyncio.create_task(view.put("from-task", b"v"))
    with pytest.raises(ReadOnlyError):
        await task
    assert scope.refused == "logical/m/from-task"


class _Standby:
    """What the pipeline asks of the cluster: this node is not the active node."""

    def is_active(self) -> bool:
        return False


@pytest.fixture
async def dev() -> AsyncIterator[tuple[Core, str]]:
    """An unsealed core with KV v2 at ``secret/`` and one secret, and its root token."""
    core = Core(InmemBackend())
    init = await core.dev_bootstrap()
    await core.handle(_request(Operation.UPDATE, "secret/data/s", init.root_token, v="1"))
    try:
        yield core, init.root_token
    finally:
        core.cluster = None
        await core.close()


def _request(operation: Operation, path: str, token: str, **data: Any) -> Request:
    body = {"data": data} if path.startswith("secret/data/") else data
    return Request(operation=operation, path=path, data=body, client_token=token)


def standby(core: Core) -> None:
    core.cluster = _Standby()  # type: ignore[assignment]  # a role, not a whole cluster


async def _value(core: Core, token: str) -> str:
    core.cluster = None
    response = await core.handle(_request(Operation.READ, "secret/data/s", token))
    assert response.data is not None
    value: str = response.data["data"]["v"]
    return value


async def test_a_standby_reads_but_forwards_a_write_without_applying_it(
    dev: tuple[Core, str],
) -> None:
    core, token = dev
    standby(core)
    assert core.is_standby
    read = await core.handle(_request(Operation.READ, "secret/data/s", token))
    assert read.data is not None and read.data["data"] == {"v": "1"}
    with pytest.raises(PleaseForwardError):
        await core.handle(_request(Operation.UPDATE, "secret/data/s", token, v="2"))
    assert await _value(core, token) == "1"


async def test_a_swallowed_refusal_still_forwards(dev: tuple[Core, str]) -> None:
    """A handler that catches the refusal cannot make the request look done."""
    core, token = dev
    match = core.router.match("secret/")
    assert match is not None
    backend: Any = match.backend
    real = backend.handle
    side = BarrierView(core.barrier, "side/")

    async def quietly_writing(request: Request) -> Response | None:
        with contextlib.suppress(ReadOnlyError):
            await side.put("note", b"read happened")
        result: Response | None = await real(request)
        return result

    backend.__dict__["handle"] = quietly_writing
    standby(core)
    with pytest.raises(PleaseForwardError):
        await core.handle(_request(Operation.READ, "secret/data/s", token))
    core.cluster = None
    assert await side.get("note") is None


async def test_a_limited_use_token_is_not_spent_on_a_standby(dev: tuple[Core, str]) -> None:
    core, root = dev
    created = await core.handle(
        _request(Operation.UPDATE, "auth/token/create", root, num_uses=2, policies=["root"])
    )
    assert created.auth is not None
    limited = created.auth.client_token
    standby(core)
    with pytest.raises(PleaseForwardError):
        await core.handle(_request(Operation.READ, "secret/data/s", limited))
    core.cluster = None
    entry = await core.tokens.lookup(limited)
    assert entry is not None and entry.num_uses == 2
