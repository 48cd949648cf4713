"""Engine types by name: the mount table builds backends through here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.auth.token.backend import TokenBackend
from node.barrier.view import BarrierView
from node.engines.cubbyhole import CubbyholeBackend
from node.engines.kv.v1 import KVv1Backend
from node.engines.kv.v2 import KVv2Backend
from node.engines.system.backend import SystemBackend
from node.engines.types import ENGINE_TYPES, kv_version
from node.errors import InvalidRequestError
from node.logical.backend import Backend
from node.routing.mounts import MountEntry

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["build_backend"]


def build_backend(entry: MountEntry, view: BarrierView, core: Core) -> Backend:
    if entry.type == "system":
        return SystemBackend(core)
    if entry.type == "cubbyhole":
        return CubbyholeBackend(view)
    if entry.type == "token":
        return TokenBackend(core)
    if entry.type in ENGINE_TYPES:
        return KVv2Backend(view) if kv_version(entry) == "2" else KVv1Backend(view)
    raise InvalidRequestError(f"plugin not found in the catalog: {entry.type}")
