"""Engine and auth-method types by name: the mount table builds backends here.

Plug-in style backends (auth methods, identity) are named by import path and
built with one signature, ``Backend(view, mount, core)``, so adding a method
does not touch this module's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from node.barrier.view import BarrierView
from node.core.system.backend import SystemBackend
from node.core.token_store.backend import TokenBackend
from node.engines.cubbyhole import CubbyholeBackend
from node.engines.kv.v1 import KVv1Backend
from node.engines.kv.v2 import KVv2Backend
from node.engines.types import ENGINE_TYPES, PLUGGABLE, kv_version
from node.errors import InvalidRequestError
from node.logical.backend import Backend
from node.namespaces.model import ROOT
from node.routing.mounts import MountEntry

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["build_backend"]


def _pluggable(entry: MountEntry, view: BarrierView, core: Core) -> Backend:
    module_name, _, class_name = PLUGGABLE[entry.type].partition(":")
    backend_class: Any = getattr(importlib.import_module(module_name), class_name)
    backend: Backend = backend_class(view, entry, core)
    return backend


def build_backend(entry: MountEntry, view: BarrierView, core: Core) -> Backend:
    namespace = core.namespaces.by_id(entry.namespace_id) or ROOT
    if entry.type == "system":
        return SystemBackend(core, namespace)
    if entry.type == "cubbyhole":
        return CubbyholeBackend(view)
    if entry.type == "token":
        return TokenBackend(core, namespace)
    if entry.type in ENGINE_TYPES:
        return KVv2Backend(view) if kv_version(entry) == "2" else KVv1Backend(view)
    if entry.type in PLUGGABLE:
        return _pluggable(entry, view, core)
    raise InvalidRequestError(f"plugin not found in the catalog: {entry.type}")
