"""A test-only engine whose *reads* write, for the read-only standby test.

Nothing in Coffer writes on a read that the HTTP edge would let a performance
standby serve itself (limited-use tokens and wrap TTLs are forwarded up
front), so the test enables this backend (as an auth method: the engine
table's types are all KV) to show what the core does when a handler writes
after all. Server processes load it through :func:`command`, which registers
the type before running ``coffer``; nothing in the server knows about it.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path as FilePath

from node.barrier.view import BarrierView
from node.engines import types
from node.framework import FieldData, FrameworkBackend, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.logical.system_view import BackendConfig
from sdk.errors import CofferError

__all__ = ["TYPE", "WritesOnRead", "command", "factory", "register"]

TYPE = "test-writes-on-read"


class WritesOnRead(FrameworkBackend):
    """``count`` (a read that adds one to a stored counter), ``quiet-count`` (the
    same, swallowing any storage error) and ``peek`` (a plain read); each answer
    names the node that ran the handler."""

    type = TYPE
    help_text = "Test engine: reads that write."

    def __init__(self, view: BarrierView, node_name: str) -> None:
        self._view = view
        self._node_name = node_name
        super().__init__(
            [
                Path("count", {Operation.READ: self._count}, summary="Count one read."),
                Path("quiet-count", {Operation.READ: self._quiet}, summary="Count, quietly."),
                Path("peek", {Operation.READ: self._peek}, summary="The count."),
            ]
        )

    def _answer(self, count: int) -> Response:
        return Response(data={"count": count, "served_by": self._node_name})

    async def _stored(self) -> int:
        stored = await self._view.get_json("count")
        return int(stored or 0)

    async def _count(self, request: Request, data: FieldData) -> Response:
        count = await self._stored() + 1
        await self._view.put_json("count", count)
        return self._answer(count)

    async def _quiet(self, request: Request, data: FieldData) -> Response:
        count = await self._stored() + 1
        with contextlib.suppress(CofferError):  # a careless handler
            await self._view.put_json("count", count)
        return self._answer(count)

    async def _peek(self, request: Request, data: FieldData) -> Response:
        return self._answer(await self._stored())


def _node_name() -> str:
    """The test cluster names each node's config file after the node (``<name>.hcl``)."""
    return FilePath(sys.argv[sys.argv.index("-config") + 1]).stem


def factory(config: BackendConfig) -> WritesOnRead:
    return WritesOnRead(config.storage, _node_name())


def register() -> None:
    """Add the type to the catalog (before the ``sys/auth`` paths copy the list)."""
    assert "node.core.system.mounts" not in sys.modules, "register before the server loads"
    types.PLUGGABLE[TYPE] = f"{__name__}:factory"
    types.AUTH_TYPES = (*types.AUTH_TYPES, TYPE)


def command(checkout: FilePath) -> list[str]:
    """``coffer`` from ``checkout`` with this engine registered first."""
    bootstrap = (
        f"import sys; sys.path.insert(0, {str(checkout)!r}); "
        f"import {__name__} as engine; engine.register(); "
        "from api.entrypoint import main; sys.exit(main())"
    )
    return [sys.executable, "-c", bootstrap]
